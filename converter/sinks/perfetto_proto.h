/*
 * perfetto_proto.h - the second trace writer: Perfetto's native protobuf
 * format (a `Trace` of `TracePacket`s with TrackDescriptor and TrackEvent),
 * encoded by hand from the documented schema (the track_event protos in
 * google/perfetto, protos/perfetto/trace; field numbers are listed in
 * perfetto_proto.c). It loads in ui.perfetto.dev and trace_processor, is
 * several times smaller than the JSON and needs no JSON parsing.
 *
 * Mapping: a Perfetto process per (file, communicator) as in the JSON;
 * a thread track per recorded thread and per GPU track; complete slices as
 * SLICE_BEGIN/SLICE_END pairs on their thread track; async slices on child
 * "lane" tracks of their thread (a lane takes a slice only when its previous
 * one ended, so lanes never need overlapping slices); instants; counters on
 * counter tracks of the process; flows as flow ids on instants placed at the
 * two ends. Event arguments travel as one debug annotation "args" holding the
 * same JSON object the JSON writer writes.
 */
#ifndef NSC_PERFETTO_PROTO_H
#define NSC_PERFETTO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "json_writer.h"

struct pf_writer;

/* Writes through w (its buffer and file or gzip stream). */
struct pf_writer *pf_open(struct jw *w);
void pf_close(struct pf_writer *p);

void pf_process(struct pf_writer *p, uint64_t pid, const char *name);
void pf_thread(struct pf_writer *p, uint64_t pid, uint64_t tid, const char *name);
/* A slice [ts, ts + dur] on the thread track (async: on a lane of it). */
void pf_slice(struct pf_writer *p, int async, uint64_t pid, uint64_t tid, uint64_t ts, uint64_t dur,
              const char *cat, const char *name, const char *args, size_t args_len);
void pf_instant(struct pf_writer *p, uint64_t pid, uint64_t tid, uint64_t ts, const char *cat,
                const char *name, const char *args, size_t args_len, uint64_t flow_out,
                uint64_t flow_in);
void pf_counter(struct pf_writer *p, uint64_t pid, const char *name, uint64_t ts, int64_t value);

#endif /* NSC_PERFETTO_PROTO_H */
