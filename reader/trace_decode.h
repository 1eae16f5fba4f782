// SPDX-License-Identifier: Apache-2.0
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

#include <stddef.h>
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
    /* A HANG block's payload (block_payload.h decodes it). */
    void (*hang)(void *ud, struct nsc_decoder *d, const void *data, size_t len);
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

/* What a file's STATS say the plugin lost, summed (docs/format.md). Version
 * 1 and 2 files record only the first two kinds and the events. */
struct nsc_losses {
    uint64_t ring;      /* records dropped: a thread's ring was full */
    uint64_t no_thread; /* records of threads over the thread limit */
    uint64_t dropped;   /* ring + no_thread: what "dropped" has always meant */
    uint64_t write;     /* records lost to write errors (v3) */
    uint64_t exit;      /* records still in memory when finalize/exit stopped waiting (v3) */
    uint64_t total;     /* every record lost: dropped + write + exit */
    uint64_t events;    /* events whose START was dropped (their STOP/STATE too) */
};

void nsc_losses_sum(const struct nsc_stats_header *h, const struct nsc_thread_stats *t,
                    struct nsc_losses *l);

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
    uint64_t unnamed_events; /* STARTs naming a string the file lacks: shown as "?" */
    struct nsc_stats_header stats; /* the last STATS block's header (zeros: none yet) */
    struct nsc_losses losses;      /* and its sums */
    int have_stats;
    uint64_t first_ticks, last_ticks;
    int have_ticks;
    int stop;            /* set by a callback: nsc_decoder_run returns after this block */
    int done;            /* the end of the file was reached (nsc_decoder_step) */
};

/* Opens path. Returns NSC_OK or an error (message in d->rd.err). */
enum nsc_result nsc_decoder_open(struct nsc_decoder *d, const char *path);
enum nsc_result nsc_decoder_open_memory(struct nsc_decoder *d, const void *data, size_t len,
                                        const char *name);

/* Reads the whole file, calling ops. Returns the number of damage reports
 * (0 = the file is intact). */
int nsc_decoder_run(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud);

/* One block (or one damage report): calls ops for what it holds and
 * returns 1, or returns 0 at the end of the file (after delivering the
 * STARTs still waiting for an EXT). For readers that pull records as they
 * need them (reader/ncclscope_reader.c): memory stays one block's. */
int nsc_decoder_step(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud);

void nsc_decoder_close(struct nsc_decoder *d);

/* ---- accessors: what callers read of a decoder. The struct above is
 * still public for the converter, which reads its fields directly today;
 * new code uses these, and once converter/ does too the struct moves into
 * a private header (docs/design.md, "Source map"). ---- */

/* The SESSION block, or NULL before it was read (or when it is missing). */
const struct nsc_session *nsc_decoder_session(const struct nsc_decoder *d);
/* What the last STATS block read so far says was lost, or NULL: none yet. */
const struct nsc_losses *nsc_decoder_losses(const struct nsc_decoder *d);
const struct nsc_stats_header *nsc_decoder_stats(const struct nsc_decoder *d);
/* Writer threads seen so far (index = a record's thread). */
uint32_t nsc_decoder_nthreads(const struct nsc_decoder *d);
const struct nsc_dthread *nsc_decoder_thread(const struct nsc_decoder *d, uint32_t i);
/* The last error, "<path>: offset N: ..." ("" when none). */
const char *nsc_decoder_error(const struct nsc_decoder *d);
const char *nsc_decoder_path(const struct nsc_decoder *d);
/* An END block was read: the session closed cleanly. */
int nsc_decoder_ended(const struct nsc_decoder *d);
/* From a callback: nsc_decoder_run returns after the current block (a
 * reader that has what it needs, e.g. gpu_clock.c's samples). */
void nsc_decoder_request_stop(struct nsc_decoder *d);

struct nsc_decode_counts {
    uint64_t file_size;      /* bytes of the file (or memory) read */
    uint32_t format_version; /* the file header's */
    uint32_t comm_slots;     /* comm serials known so far + 1 (serial 0 is unused) */
    uint64_t blocks, chunks, records, unnamed_events, damage;
    uint64_t first_ticks, last_ticks; /* record clock range (have_ticks) */
    int have_ticks;
};
void nsc_decoder_counts(const struct nsc_decoder *d, struct nsc_decode_counts *c);

/* Record clock -> CLOCK_MONOTONIC ns, with the anchors read so far. Any
 * input gives a defined result (0 and UINT64_MAX bound what damaged anchors
 * would put out of range). */
uint64_t nsc_decoder_mono_ns(const struct nsc_decoder *d, uint64_t ticks);

/* A time moved onto the merged timeline (clock_align.h). Unsigned and
 * wrapping, as the clock is: a damaged anchor or shift may put a time
 * anywhere, which must not be undefined behaviour. */
static inline uint64_t nsc_shift_ns(uint64_t t, int64_t shift) { return t + (uint64_t)shift; }

/* The string-table ids a START's descriptor holds (func, datatype, algo,
 * proto, syncStrategy, by event type): fills ids, returns how many (0-4). */
unsigned nsc_rec_string_ids(const struct nsc_rec *r, uint32_t ids[4]);
/* Interned string (NULL for id 0, "?" for unknown ids). */
const char *nsc_decoder_str(const struct nsc_decoder *d, uint32_t id);
/* Comm serials a reader accepts (a damaged larger one is reported). */
#define NSC_COMM_SERIAL_MAX (1u << 20)
/* Comm by serial, or NULL. */
const struct nsc_comm_info *nsc_decoder_comm(const struct nsc_decoder *d, uint32_t serial);

#endif /* NSC_TRACE_DECODE_H */
