// SPDX-License-Identifier: Apache-2.0
/*
 * sink.h - where the timeline's events go: one interface, two formats
 * (Chrome trace JSON, Perfetto protobuf), over one byte stream that is a
 * plain file, gzip, standard output, or a series of parts (--split).
 *
 * The timeline hands over one event at a time (struct nsc_tev, typed
 * arguments in args.h); the sink encodes it. Parts: past the size limit the
 * current part is closed as a complete document of its format (JSON:
 * metadata saying "continued"; protobuf: nothing more is needed) and the
 * next begins with a fresh encoder state. nsc_sink_rotate says so: the
 * timeline then names its processes and threads again where they are next
 * used, since each part must stand alone.
 */
#ifndef NSC_SINK_H
#define NSC_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "args.h"

enum nsc_sink_format { NSC_SINK_JSON = 0, NSC_SINK_PERFETTO = 1 };

enum nsc_tev_kind {
    NSC_TEV_SLICE,    /* complete slice: ts, dur */
    NSC_TEV_ASYNC,    /* slice that does not nest on its thread: ts, dur, id */
    NSC_TEV_INSTANT,  /* scope: 't' thread, 'p' process */
    NSC_TEV_COUNTER,  /* ckey = cval */
    NSC_TEV_FLOW_OUT, /* flow id leaves the slice at (pid, tid, ts) */
    NSC_TEV_FLOW_IN,  /* and arrives at the slice starting at (pid, tid, ts) */
    NSC_TEV_PROCESS,  /* process name; sort */
    NSC_TEV_THREAD,   /* thread name; sort (0: none) */
};

struct nsc_tev {
    enum nsc_tev_kind k;
    const char *cat, *name;
    uint64_t pid, tid, ts, dur, id, sort;
    const char *ckey;
    int64_t cval;
    char scope;
    int has_tid;
    const struct nsc_args *args; /* NULL: none */
};

struct nsc_sink;

struct nsc_sink_opts {
    enum nsc_sink_format format;
    const char *path;            /* "-" = stdout; ".gz" = gzip */
    uint64_t split_bytes;        /* a new part past this many bytes (0: one file) */
    const char *const *inputs;   /* refused as outputs (out_file.h) */
    int ninputs;
};

/* The path of part k: trace.json -> trace-000.json, t.pftrace.gz ->
 * t-000.pftrace.gz (the path itself without splitting). */
void nsc_sink_part_path(const struct nsc_sink_opts *o, int k, char *buf, size_t n);

/* Opens the first part. Returns NULL with a message in err. */
struct nsc_sink *nsc_sink_open(const struct nsc_sink_opts *o, char *err, size_t errlen);
void nsc_sink_event(struct nsc_sink *s, const struct nsc_tev *e);
/* Begins the next part when the current one is past the limit; returns 1
 * when it did. A part that cannot be written fails the run: its message
 * comes once from nsc_sink_error, and what follows is discarded. */
int nsc_sink_rotate(struct nsc_sink *s);
/* The first write error not yet taken (NULL: none new). */
const char *nsc_sink_error(struct nsc_sink *s);
/* Bytes written so far (uncompressed, all parts). */
uint64_t nsc_sink_bytes(const struct nsc_sink *s);
int nsc_sink_parts(const struct nsc_sink *s);
/* Writes the run's metadata (JSON: the document's "metadata"; protobuf:
 * an instant "ncclscope metadata" on track (pid 0, tid 0) at ts), closes
 * and frees. Returns 0; -1 when a part failed before (nothing of the last
 * part is kept then; err empty: the message was given) or now (err). */
int nsc_sink_finish(struct nsc_sink *s, const struct nsc_args *meta, uint64_t ts, char *err,
                    size_t errlen);
/* Closes and removes the current part (a failed run); frees. */
void nsc_sink_abort(struct nsc_sink *s);

/* A sink that keeps events aside in f (spool.h) for a real sink of
 * `format` to write later: JSON events encoded already, protobuf events
 * typed (their encoding depends on what was written before). nsc_sink_spool
 * says which sinks are spools (NULL: a real one). Closing frees the sink,
 * not f; returns -1 when anything could not be written to f. */
struct nsc_chain_point;
struct nsc_sink *nsc_sink_open_spool(FILE *f, enum nsc_sink_format format);
FILE *nsc_sink_spool(const struct nsc_sink *s);
int nsc_sink_spool_chain(struct nsc_sink *s, const struct nsc_chain_point *c);
int nsc_sink_close_spool(struct nsc_sink *s);
/* A spool's encoded JSON events, into a real JSON sink. */
void nsc_sink_raw(struct nsc_sink *s, const char *p, size_t n);

#endif /* NSC_SINK_H */
