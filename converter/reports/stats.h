// SPDX-License-Identifier: Apache-2.0
/*
 * stats.h - `ncclscope stats`: per (communicator, operation, datatype, size
 * bucket) counts, latency percentiles and nccl-tests bandwidths, and the
 * straggler table (for each collective, the rank that entered last and by
 * how much).
 *
 * Per rank and operation: GPU time (first KernelCh GPU start to last
 * KernelCh GPU end across channels), split at the collective's last GPU
 * start into wait and transfer (AllReduce, AllGather, ReduceScatter,
 * AlltoAll whose every rank has a mapped GPU start), queue time (enqueue to
 * the GPU start mapped to the host clock, gpu_clock.h) and host time
 * (enqueue, the Coll/P2p start, to completion, the last KernelCh/ProxyOp
 * child's stop). An operation without a child has no completion (enqueue
 * only): no time or bandwidth comes from it. Percentiles come from GPU time
 * when a row has it, else from host time (host-only). Bytes follow
 * nccl-tests: all_gather and reduce_scatter count the whole buffer (count x
 * nranks); busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather,
 * reduce_scatter), 1 (others), algbw = bytes / the p50 of transfer time
 * where the whole row is split, else of GPU time, else of host time. The
 * count is of distinct collectives. Stragglers by GPU start: per rank, how
 * often its kernel started last and how long it made the first rank wait,
 * late on the host or on the GPU (docs/converter.md).
 */
#ifndef NSC_STATS_H
#define NSC_STATS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct nsc_decoder;
struct nsc_op_done;

/* Optional: what the pass saw, for a report drawn from the same numbers. */
struct nsc_stats_hooks {
    /* Each completed rank-operation. gpu_start/gpu_end: its GPU time on the
     * merged host timeline, mapped as the queue times are (0, 0: no
     * KernelCh, or the GPU clock is unknown, as in a replayed trace). */
    void (*op)(void *ud, int file, const struct nsc_decoder *d, const struct nsc_op_done *op,
               uint64_t gpu_start, uint64_t gpu_end);
    /* Each file once read (d: its decoder, still open), or NULL when it
     * could not be opened. */
    void (*file)(void *ud, int file, const struct nsc_decoder *d);
    void *ud;
};

struct nsc_stats_opts {
    const char *const *files;
    int nfiles;
    const int64_t *shift_ns; /* per file, onto the merged timeline (NULL: 0) */
    int json;                /* 1: JSON */
    int top;                 /* straggler rows to print */
    FILE *out;
    int by_caller;           /* the Python call-site table instead (python_callers.h) */
    const struct nsc_stats_hooks *hooks; /* NULL: none */
    const char *cmd;         /* prefix of the messages on stderr (NULL: "stats") */
    int jobs;                /* files read at once (0: one per processor); same output */
    /* --skip-first: the first N operations of each rank of a comm are left
     * out (connection set-up); 0: none */
    uint64_t skip_first;
    /* --time: only what overlaps [t_from, t_to] seconds from the job's
     * start (the earliest SESSION start), when window is 1 */
    int window;
    double t_from, t_to;
};

/* Returns 0, 2 when some input was damaged (the rest is still counted). */
int nsc_stats(const struct nsc_stats_opts *o);

/* ---- the same numbers as data (ncclscope report draws them) ---- */

/* One table row: per (comm, op, datatype, size bucket). Times in ns; < 0:
 * none. p50/p99/max come from GPU time, or from host time (enqueue to
 * completion) when host_only; none when no operation has a completion
 * (timing "enqueue-only"). The bandwidths come from the time bw_from names. */
struct nsc_stats_row {
    uint64_t comm_id;
    int nranks, is_p2p, host_only;
    char func[32], dtype[32];
    unsigned bucket;         /* log2 of the size bucket's upper bound */
    /* count: distinct collectives (comm, function, seqNumber) of the files
     * given, or p2p operations */
    uint64_t count, rank_ops, gpu_ops, enqueue_only;
    /* KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): rank-operations asked
     * for KernelCh, and those of KernelCh files not asked (no GPU time) */
    uint64_t sampled, unsampled;
    double p50, p99, max, gpu_p50, gpu_p99, queue_p50, queue_p99, host_p50, host_p99;
    /* GPU time split at the last rank's GPU start (stats.c split_kind):
     * wait before it, transfer after; < 0: no such split in the row */
    double wait_p50, wait_p99, xfer_p50, xfer_p99;
    uint64_t split_ops;      /* rank-operations split */
    /* GB/s; < 0: none (enqueue-only: enqueue to the Coll's stop moves no
     * data); from the time bw_from names: "transfer", "gpu", "host" (NULL
     * when none) */
    double avg_bytes, algbw, busbw;
    const char *timing, *note, *bw_from; /* static strings */
};

/* Stragglers by GPU start, per (comm, rank): the stats table's rows. */
struct nsc_stats_late {
    uint64_t comm_id;
    int rank;
    uint64_t colls, last, host_late, gpu_late, wait_ns;
};

/* Who made whom wait, per comm, from the same collectives: in each one the
 * rank whose kernel started last made the rank whose kernel started first
 * wait (last - first GPU start). Cell [late * nranks + first]; a row's sum
 * is that rank's wait in nsc_stats_late. */
struct nsc_stats_waits {
    uint64_t comm_id;
    int nranks;
    uint64_t *wait_ns;
    uint64_t *count;
};

/* A collective's stragglers: by enqueue (first_ns/last_ns: enqueues), or
 * by GPU start (first_ns/last_ns: GPU starts on the host timeline). */
struct nsc_stats_coll {
    uint64_t comm_id, seq;
    char func[24];
    uint32_t ranks;
    int last_rank, first_rank;
    uint64_t first_ns, last_ns;
};

struct nsc_stats_result {
    uint64_t ops;                     /* rank-operations */
    uint64_t skipped, outside;        /* left out by skip_first, by the window */
    /* rank-operations of files that record KernelCh, of them sampled:
     * sampled_ops < kernel_ops when KernelCh was sampled */
    uint64_t kernel_ops, sampled_ops;
    struct nsc_stats_row *rows;       /* sorted by comm, p2p, op, datatype, size */
    size_t nrows;
    struct nsc_stats_late *late;      /* largest wait first */
    size_t nlate;
    struct nsc_stats_waits *waits;
    size_t nwaits;
    struct nsc_stats_coll *by_enqueue; /* the opts' top, largest lag first */
    size_t nby_enqueue;
    struct nsc_stats_coll worst_gpu;  /* largest lag by GPU start; ranks 0: none */
};

/* One pass over the files (as nsc_stats; json and by_caller are ignored):
 * fills *res. Returns 0, 2 (damaged input, the rest counted) or 3 (out of
 * memory, *res empty). Free with nsc_stats_result_free. */
int nsc_stats_collect(const struct nsc_stats_opts *o, struct nsc_stats_result *res);
void nsc_stats_result_free(struct nsc_stats_result *res);

/* A size bucket's label ("64B", "1K", "32M", "1G"): the upper bound of
 * bucket b is 2^b bytes, nccl-tests' convention. */
void nsc_stats_size_label(char *buf, size_t n, unsigned bucket);

#endif /* NSC_STATS_H */
