/*
 * stats.h - `ncclscope stats`: per (communicator, operation, datatype, size
 * bucket) counts, latency percentiles and nccl-tests bandwidths, and the
 * straggler table (for each collective, the rank that entered last and by
 * how much).
 *
 * Per rank and operation: GPU time (first KernelCh GPU start to last
 * KernelCh GPU end across channels), queue time (enqueue to the GPU start
 * mapped to the host clock, gpu_clock.h) and host time (enqueue, the
 * Coll/P2p start, to completion, the last KernelCh/ProxyOp child's stop, or
 * to the Coll's own stop when the trace has no children: "enqueue only").
 * Percentiles and bandwidths come from GPU time when a row has it, else
 * from host time (labelled host-only). Bytes follow nccl-tests: all_gather
 * and reduce_scatter count the whole buffer (count x nranks); busbw = algbw
 * x 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter), 1
 * (others), algbw = bytes / median latency. Stragglers by GPU start: per
 * rank, how often its kernel started last and how long it made the first
 * rank wait, late on the host or on the GPU (docs/converter.md).
 */
#ifndef NSC_STATS_H
#define NSC_STATS_H

#include <stdio.h>
#include <stdint.h>

struct nsc_stats_opts {
    const char *const *files;
    int nfiles;
    const int64_t *shift_ns; /* per file, onto the merged timeline (NULL: 0) */
    int json;                /* 1: JSON, 2: HTML tables and a latency-by-size SVG chart */
    int top;                 /* straggler rows to print */
    FILE *out;
    int by_caller;           /* the Python call-site table instead (python_callers.h) */
    int jobs;                /* files read at once (0: one per processor); same output */
};

/* Returns 0, 2 when some input was damaged (the rest is still counted). */
int nsc_stats(const struct nsc_stats_opts *o);

#endif /* NSC_STATS_H */
