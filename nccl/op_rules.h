// SPDX-License-Identifier: Apache-2.0
/*
 * op_rules.h - the rules every part of ncclscope applies to an NCCL
 * operation (Coll, P2p): whether NCCL will give it KernelCh events, when it
 * is complete given what was recorded of it, and nccl-tests' size and bus
 * factors for its bandwidth. Static inline functions, no state: the
 * plugin's watchdog (watch/op_state.c), its live metrics
 * (services/live_ops.c, prometheus.c), the converter, the Python analysis
 * (its bus factor through ncclscope._analysis.bus_factor) and the tests
 * take the one answer from here, so that "in flight" means the same thing
 * in a HANG block, a metrics file and a report, and busbw the same number
 * in stats and in ncclscope.analysis.
 */
#ifndef NSC_OP_RULES_H
#define NSC_OP_RULES_H

#include <stdint.h>
#include <string.h>

/* Does NCCL give this operation KernelCh events (one per channel it runs
 * on)? A collective: yes. A Send or Recv: only when it has proxy work, that
 * is neither to its own rank nor of zero bytes; NCCL gives those no KernelCh
 * at all (2.28: only proxy ops with steps get a profiler op), so waiting for
 * their channels would keep them in flight for ever. `rank`: the
 * communicator's rank; pass a negative one while it is not known (the
 * operation is then assumed to expect KernelCh unless it moves no bytes). */
static inline int nsc_op_expects_kernel_ch(int is_p2p, uint64_t count, int peer, int rank) {
    if (!is_p2p)
        return 1;
    return count != 0 && (rank < 0 || peer != rank);
}

/* API v1-v3 give a Coll's nMaxChannels, not the channels whose KernelCh will
 * come (NCCL 2.26 spreads a small collective over fewer): their channel
 * count cannot complete an operation. */
static inline int nsc_op_channels_known(int api_version) { return api_version >= 4; }

/* The channels whose KernelCh stops complete an operation, or -1 when its
 * completion is the host rule (nsc_op_complete). kernel_recorded: KernelCh
 * was in the recorded mask when the operation started; channels_known:
 * nsc_op_channels_known(); expects: nsc_op_expects_kernel_ch(); nch: the
 * channels its descriptor gives (0 completes it at its stop). */
static inline int nsc_op_kernel_channels(int kernel_recorded, int channels_known, int expects,
                                         unsigned nch) {
    return kernel_recorded && channels_known && expects ? (int)nch : -1;
}

/* Is an operation complete? Never before its own stop, nor while a child of
 * it (a ProxyOp, a KernelCh) is open. Then, with channels to wait for
 * (kernel_channels >= 0), when that many distinct channels' KernelCh
 * stopped; without (-1: KernelCh not recorded, not expected, or channels not
 * known), when nothing of it changed for the caller's grace (`quiet`): the
 * window for its ProxyOps, which NCCL starts after its stop, to show up. */
static inline int nsc_op_complete(int stopped, unsigned children_open, int kernel_channels,
                                  unsigned channels_done, int quiet) {
    if (!stopped || children_open)
        return 0;
    if (kernel_channels >= 0)
        return channels_done >= (unsigned)kernel_channels;
    return quiet;
}

/* Has a Send or Recv completed although a child stop of it never came (a
 * lost KernelCh stop)? Yes when an operation of its communicator, on the
 * same process, that started after this one's own stop (`stop`) was seen
 * to finish on the GPU (every channel's KernelCh stopped; `later_start`:
 * the latest start among such operations, 0 for none). NCCL starts and
 * stops a launch's operations together after the launch, so an operation
 * started after our stop belongs to a later launch, and a communicator's
 * kernels run one after the other on its stream: that one cannot finish
 * before ours did. One started before our stop may share our launch, whose
 * channels run independently: it proves nothing. (A collective has its
 * seqNumber for the same rule.) */
static inline int nsc_op_p2p_overtaken(uint64_t stop, uint64_t later_start) {
    return stop != 0 && later_start > stop;
}

/* ---- nccl-tests' bandwidth (its src/<coll>.cu, *GetBw) ----
 *
 * busbw = size × bus factor / time, where size is nccl-tests' "size": the
 * per-rank buffer for AllReduce, Broadcast, Reduce and Send/Recv; the whole
 * buffer, nranks × the per-rank count NCCL's descriptor gives, for
 * AllGather, ReduceScatter, AlltoAll, Gather and Scatter. */

/* count × datatype size (the descriptor's per-rank bytes) -> nccl-tests' size. */
static inline double nsc_op_size_factor(const char *func, int is_p2p, int nranks) {
    if (is_p2p || !func || nranks <= 0)
        return 1.0;
    if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter") ||
        !strcmp(func, "AlltoAll") || !strcmp(func, "Gather") || !strcmp(func, "Scatter"))
        return (double)nranks;
    return 1.0;
}

/* The bus factor: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AlltoAll,
 * Gather and Scatter (n-1)/n; Broadcast, Reduce, Send, Recv (and anything
 * else) 1. */
static inline double nsc_op_bus_factor(const char *func, int is_p2p, int nranks) {
    if (is_p2p || !func || nranks <= 0)
        return 1.0;
    if (!strcmp(func, "AllReduce"))
        return 2.0 * (nranks - 1) / nranks;
    if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter") ||
        !strcmp(func, "AlltoAll") || !strcmp(func, "Gather") || !strcmp(func, "Scatter"))
        return (double)(nranks - 1) / nranks;
    return 1.0;
}

/* The bytes that count towards busbw for an operation of `bytes`
 * (count × datatype size): busbw = nsc_op_bus_bytes() / time. */
static inline double nsc_op_bus_bytes(const char *func, int is_p2p, int nranks, double bytes) {
    return bytes * nsc_op_size_factor(func, is_p2p, nranks) *
           nsc_op_bus_factor(func, is_p2p, nranks);
}

#endif /* NSC_OP_RULES_H */
