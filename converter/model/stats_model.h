// SPDX-License-Identifier: Apache-2.0
/*
 * stats_model.h - what `ncclscope stats` and `ncclscope report` count, as
 * data (reports/stats.c prints it, reports/report.c draws it): per
 * (communicator, operation, datatype, size bucket) counts, latency
 * percentiles and nccl-tests bandwidths, and the straggler tables (for
 * each collective, the rank that entered last and by how much).
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
 * where the whole row is split, else of GPU time, else of host time
 * (nccl/op_rules.h). The count is of distinct collectives. Stragglers by
 * GPU start: per rank, how often its kernel started last and how long it
 * made the first rank wait, late on the host or on the GPU
 * (docs/converter.md).
 */
#ifndef NSC_STATS_MODEL_H
#define NSC_STATS_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct nsc_decoder;
struct nsc_op_done;
struct nsc_rec;

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

/* Optional: a table keyed by who issued each operation (stats
 * --by-caller, reports/python_callers.h), fed in file order. */
struct nsc_stats_tags {
    void (*file)(void *ud); /* a new file */
    /* every record of the file, in order, before the operations it completes */
    void (*record)(void *ud, const struct nsc_decoder *d, uint32_t thread,
                   const struct nsc_rec *r);
    /* a completed operation and its bytes (nccl-tests' size): its tag (NULL: none) */
    void *(*op)(void *ud, const struct nsc_op_done *op, uint64_t bytes);
    /* once every file is read: a tagged operation's GPU time split at the
     * last rank's GPU start */
    void (*split)(void *tag, uint64_t wait_ns, uint64_t xfer_ns);
    void *ud;
};

struct nsc_stats_input {
    const char *const *files;
    int nfiles;
    const int64_t *shift_ns; /* per file, onto the merged timeline (NULL: 0) */
    const struct nsc_stats_hooks *hooks; /* NULL: none */
    const struct nsc_stats_tags *tags;   /* NULL: none */
    const char *cmd;         /* prefix of the messages on stderr (NULL: "stats") */
    int jobs;                /* files read at once (0: one per processor); same numbers */
    /* skip_first: the first N operations of each rank of a comm are left
     * out (connection set-up); 0: none */
    uint64_t skip_first;
    /* only what overlaps [t_from, t_to] seconds from the job's start (the
     * earliest SESSION start), when window is 1 */
    int window;
    double t_from, t_to;
    int top;                 /* collectives kept by enqueue lag */
    int waits;               /* 1: the wait matrices too */
};

/* What the plugin could not keep, summed over the files. */
struct nsc_stats_lost {
    uint64_t records, dropped, write, exit, events;
    uint64_t failed_writes, string_overflow, unnamed, comm_overflow;
    uint64_t memory_peak, memory_budget; /* of the file with the highest peak (v3) */
    int write_errno; /* the last failed write's, of the last file that has one */
};

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
    double p50, p99, max, gpu_p50, gpu_p99, gpu_max, queue_p50, queue_p99;
    double host_p50, host_p99, host_max;
    /* GPU time split at the last rank's GPU start (stats_model.c
     * split_kind): wait before it, transfer after; < 0: no such split in
     * the row */
    double wait_p50, wait_p99, xfer_p50, xfer_p99;
    uint64_t split_ops;      /* rank-operations split */
    /* GB/s; < 0: none (enqueue-only: enqueue to the Coll's stop moves no
     * data); from the time bw_from names: "transfer", "gpu", "host" (NULL
     * when none); host_*: from host_p50 */
    double avg_bytes, algbw, busbw, host_algbw, host_busbw;
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
    struct nsc_stats_lost lost;
    struct nsc_stats_row *rows;       /* sorted by comm, p2p, op, datatype, size */
    size_t nrows;
    struct nsc_stats_late *late;      /* largest wait first */
    size_t nlate;
    struct nsc_stats_waits *waits;    /* when the input asked for them */
    size_t nwaits;
    struct nsc_stats_coll *by_enqueue; /* the input's top, largest lag first */
    size_t nby_enqueue;
    struct nsc_stats_coll worst_gpu;  /* largest lag by GPU start; ranks 0: none */
};

/* One pass over the files: fills *res (NULL: the pass is for the hooks and
 * tags alone). Returns 0, 2 (damaged input, the rest counted) or 3 (out of
 * memory, said on stderr; *res empty). Free with nsc_stats_result_free. */
int nsc_stats_model_run(const struct nsc_stats_input *in, struct nsc_stats_result *res);
void nsc_stats_result_free(struct nsc_stats_result *res);

#endif /* NSC_STATS_MODEL_H */
