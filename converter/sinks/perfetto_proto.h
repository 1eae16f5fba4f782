// SPDX-License-Identifier: Apache-2.0
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
 * two ends. Event arguments are typed debug annotations (args.h): numbers,
 * strings and booleans as themselves, nested lists as legacy JSON values.
 */
#ifndef NSC_PERFETTO_PROTO_H
#define NSC_PERFETTO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "json_writer.h"
#include "sink.h"

struct pf_writer;

/* Writes through w (its buffer and file or gzip stream). A new writer
 * starts a standalone trace: interned strings and track descriptors are
 * sent again. */
struct pf_writer *pf_open(struct jw *w);
void pf_close(struct pf_writer *p);
/* One event of the timeline (sink.h), with its typed arguments. */
void pf_event(struct pf_writer *p, const struct nsc_tev *e);

#endif /* NSC_PERFETTO_PROTO_H */
