/*
 * trace_decode.h - turns a trace file's blocks into meaning: the session,
 * strings, comms, writer threads, clock mapping, and a stream of records
 * (a START delivered together with its EXT), in file order.
 *
 * Streaming: state is the string table, the comm table and one entry per
 * writer thread, independent of the trace's length.
 */
#ifndef NSC_TRACE_DECODE_H
#define NSC_TRACE_DECODE_H

#include <stdint.h>

#include "trace_format.h"
#include "trace_reader.h"

struct nsc_decoder;

struct nsc_decode_ops {
    /* A record of writer thread `thread` (ext is the EXT of a START, or NULL). */
    void (*record)(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                   const struct nsc_rec *ext);
    /* A comm described (again, when its rank became known). */
    void (*comm)(void *ud, struct nsc_decoder *d, const struct nsc_comm_info *c);
    /* Drop/record counters (the last STATS block of a file is the final word). */
    void (*stats)(void *ud, struct nsc_decoder *d, const struct nsc_stats_header *h,
                  const struct nsc_thread_stats *t);
    /* Damage: msg names the file and the offset. */
    void (*error)(void *ud, struct nsc_decoder *d, const char *msg);
};

struct nsc_dthread {
    uint32_t tid;
    char name[17];
    int known;
    int held;            /* a START waiting for its EXT */
    struct nsc_rec start;
    uint64_t records;
};

struct nsc_decoder {
    struct nsc_reader rd;
    struct nsc_session session;
    int have_session;
    int ended;           /* END block seen: the session closed cleanly */
    char **strings;
    uint32_t nstrings;
    struct nsc_comm_info *comms; /* indexed by serial */
    uint32_t ncomms;
    struct nsc_dthread *threads;
    uint32_t nthreads;
    struct nsc_anchor lo, hi;    /* anchors bracketing the current chunk */
    double ns_per_tick;
    uint64_t blocks, chunks, records;
    uint64_t first_ticks, last_ticks;
    int have_ticks;
    int stop;            /* set by a callback: nsc_decoder_run returns after this block */
};

/* Opens path. Returns NSC_OK or an error (message in d->rd.err). */
enum nsc_result nsc_decoder_open(struct nsc_decoder *d, const char *path);
enum nsc_result nsc_decoder_open_memory(struct nsc_decoder *d, const void *data, size_t len,
                                        const char *name);

/* Reads the whole file, calling ops. Returns the number of damage reports
 * (0 = the file is intact). */
int nsc_decoder_run(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud);

void nsc_decoder_close(struct nsc_decoder *d);

/* Record clock -> CLOCK_MONOTONIC ns, with the anchors read so far. */
uint64_t nsc_decoder_mono_ns(const struct nsc_decoder *d, uint64_t ticks);
/* Interned string (NULL for id 0, "?" for unknown ids). */
const char *nsc_decoder_str(const struct nsc_decoder *d, uint32_t id);
/* Comm by serial, or NULL. */
const struct nsc_comm_info *nsc_decoder_comm(const struct nsc_decoder *d, uint32_t serial);

#endif /* NSC_TRACE_DECODE_H */
