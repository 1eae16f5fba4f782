// SPDX-License-Identifier: Apache-2.0
/*
 * coll_track.h - one collective (or point-to-point operation) per rank,
 * from its enqueue to its completion, out of one file's record stream.
 *
 * NCCL's Coll/P2p stop means "enqueued"; the operation is done when its last
 * child is: the KernelCh events (one per channel, each with the GPU's
 * %globaltimer at start and at KernelChStop) and, on the network path, the
 * ProxyOps. The tracker keeps operations in flight by id, joins children to
 * them through their parent id, and reports each operation once when:
 *   - every KernelCh of its channels has stopped (when its enqueue asked for
 *     KernelCh: `sampled`), or
 *   - its Coll stopped and the session recorded no children at all, or
 *   - (not sampled, in a session that records KernelCh for a sample of the
 *     operations) a later-enqueued operation of the same comm completed:
 *     NCCL runs one comm's kernels in enqueue order, so this one completed
 *     before it (`inferred`; no GPU time of its own), or
 *   - it is pushed out by newer operations (more than NSC_TRACK_INFLIGHT in
 *     flight: ProxyOp-only sessions give no child count), or the file ends.
 * Memory is bounded by NSC_TRACK_INFLIGHT operations and their children,
 * whatever the trace's length.
 */
#ifndef NSC_COLL_TRACK_H
#define NSC_COLL_TRACK_H

#include <stdint.h>

#include "op_rules.h"
#include "trace_decode.h"

#define NSC_TRACK_INFLIGHT 65536

struct nsc_op_done {
    uint64_t comm_id;    /* commHash */
    uint32_t comm_serial;
    int rank, nranks;
    int is_p2p;
    uint64_t seq;        /* Coll seqNumber (P2p: 0) */
    const char *func, *dtype, *algo, *proto; /* the decoder's strings, valid during the callback */
    uint64_t count;
    int peer, nch;
    uint64_t start_ns;   /* enqueue (Coll/P2p START), on the merged timeline */
    uint64_t stop_ns;    /* Coll/P2p STOP, 0 if it never stopped */
    uint64_t end_ns;     /* last child's stop, 0 without children */
    uint64_t gpu_start, gpu_end; /* KernelCh %globaltimer range (ns, GPU clock), 0 without */
    uint32_t children, kernel_channels_done;
    uint64_t id;         /* event id in its file */
    uint32_t thread;
    /* Set only by nsc_track_finish: the operation was still in flight when
     * the file ended, and `open` lists its KernelCh/ProxyOp children that
     * started and never stopped (valid during the callback). */
    int at_end;
    const struct nsc_track_child *open;
    uint32_t nopen;
    /* at_end: the file has its END block (the process finalized cleanly) */
    int file_ended;
    /* The session records KernelCh (its mask); `sampled`: this operation's
     * enqueue asked NCCL for it, so its KernelCh events (GPU times,
     * completion) come (nsc_op_sampled: with NCCLSCOPE_KERNEL_SAMPLE only
     * some operations are; in files before format 4 all are when the mask
     * has KernelCh). */
    int kernel, sampled;
    /* Not sampled, and completed because a later-enqueued operation of its
     * comm on its rank completed (reported then, before that one). */
    int inferred;
    /* at_end, not sampled, completion unknown, and a later-enqueued sampled
     * operation of its comm on its rank is stuck (nsc_op_stuck): it may be
     * the one the comm hangs at. Set by nsc_track_finish. */
    int maybe_stuck;
};

/* A sampled-KernelCh session's operation that was not sampled: no GPU time
 * of its own, completion only by inference (`inferred`). */
static inline int nsc_op_unsampled(const struct nsc_op_done *op) {
    return op->kernel && !op->sampled;
}

/* Its completion is not known: not sampled, not inferred (in flight at the
 * end, or pushed out of the tracker's window). */
static inline int nsc_op_completion_unknown(const struct nsc_op_done *op) {
    return nsc_op_unsampled(op) && !op->inferred;
}

/* Is an operation in flight at its file's end (op->at_end) stuck? When it
 * never stopped (still enqueuing), or a child of it (KernelCh, ProxyOp) is
 * still open, or, with KernelCh asked for it (`sampled`) in a file cut without
 * its END block (a killed job), none of its channels' kernels ever started:
 * NCCL stops a Coll/P2p at enqueue, so a kernel still queued behind another
 * (a hung one, a long compute kernel) shows only as no KernelCh at all.
 * Channels are not counted: NCCL gives no KernelCh where a channel has no
 * proxy work (a Send or Recv to its own rank, zero bytes), and a comm's last
 * KernelCh may come after its finalize, or never (a file closed cleanly
 * then shows its last operations without them); docs/converter.md, "What
 * counts as stuck". An operation that was not sampled is never stuck by the
 * lack of KernelCh: it may be (maybe_stuck) when a later sampled one is.
 * nch 0: the channels are not known (API v1-v3). The one rule of hang.c and
 * the ops table's `stuck` column. */
static inline int nsc_op_stuck(const struct nsc_op_done *op) {
    if (!op->stop_ns || op->nopen > 0)
        return 1;
    /* a Send/Recv to its own rank or of 0 bytes gets no KernelCh (op_rules.h) */
    return op->sampled && !op->file_ended && op->nch > 0 && op->children == 0 &&
           nsc_op_expects_kernel_ch(op->is_p2p, op->count, op->peer, op->rank);
}

/* A child of an operation in flight (hang.h reads them). */
struct nsc_track_child {
    uint64_t id, op_id;
    uint8_t etype;       /* NSC_ET_KERNEL_CH, NSC_ET_PROXY_OP (NSC_ET_PROXY_STEP inside) */
    uint8_t ch, is_send;
    int32_t peer;        /* ProxyOp */
    int32_t state;       /* last STATE recorded (ProxyOp*: NCCL's number), -1 none */
    int32_t step_state;  /* last state of its newest open ProxyStep, -1 none */
    int32_t step;        /* that ProxyStep's step number */
    uint32_t steps_open; /* ProxySteps started and not stopped */
};


typedef void (*nsc_op_done_fn)(void *ud, const struct nsc_op_done *op);

struct nsc_coll_track;

/* shift_ns is added to every time (aligning the file to the merged
 * timeline). */
struct nsc_coll_track *nsc_track_new(struct nsc_decoder *d, int64_t shift_ns, nsc_op_done_fn fn,
                                     void *ud);
/* Feed every record of the file (the decoder's record callback). */
void nsc_track_record(struct nsc_coll_track *t, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext);
/* Reports what is still in flight and frees the tracker. */
void nsc_track_finish(struct nsc_coll_track *t);

#endif /* NSC_COLL_TRACK_H */
