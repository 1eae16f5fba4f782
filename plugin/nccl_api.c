/*
 * nccl_api.c - the seven exported ncclProfiler_vN tables, each a thin adapter
 * from its version's descriptor into the one internal event model.
 *
 * v5, v6 and v7 descriptors are read directly (each extends the one before
 * without moving a field; nccl_abi.h checks it): the v7-only members are
 * read only from v7 calls (`v7` below, a constant in each caller, so the
 * inlined code of older versions never touches them). v1..v4 descriptors
 * are first lifted into a v7 descriptor on the stack, the same translation
 * NCCL's own adapters make in reverse; those NCCL versions are old and the
 * copy costs a few nanoseconds.
 *
 * Every callback returns success. Only init can fail, which makes NCCL run
 * that communicator without us.
 */
#include <string.h>

#include "chain.h"
#include "control.h"
#include "log.h"
#include "nccl_abi.h"
#include "nccl_v1_names.h"
#include "op_state.h"
#include "python_caller.h"
#include "recorder.h"
#include "session.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- descriptor -> records ---- */

static inline int net_is_ib(int64_t id) {
    return ((uint64_t)id & NSC_ABI_NET_TYPE_MASK) == NSC_ABI_NET_TYPE_IB &&
           ((uint64_t)id & NSC_ABI_NET_VER_MASK) == 1;
}
static inline int net_is_sock(int64_t id) {
    return ((uint64_t)id & NSC_ABI_NET_TYPE_MASK) == NSC_ABI_NET_TYPE_SOCK &&
           ((uint64_t)id & NSC_ABI_NET_VER_MASK) == 1;
}

static inline void fill(struct nsc_start *s, const nsc_abi_descr_v7 *d, unsigned et, int v7) {
    union nsc_desc *o = &s->rec->u.start.d;
    struct nsc_intern_cache *sc = &s->t->strings;
    switch (et) {
    case NSC_ET_GROUP_API:
        o->group_api.depth = d->groupApi.groupDepth;
        o->group_api.graph = d->groupApi.graphCaptured;
        o->group_api.py_stack = nsc_py_caller(&s->rec->h.flags);
        break;
    case NSC_ET_COLL_API:
        o->coll_api.count = d->collApi.count;
        o->coll_api.stream = (uint64_t)(uintptr_t)d->collApi.stream;
        o->coll_api.root = d->collApi.root;
        o->coll_api.func = nsc_intern(sc, d->collApi.func);
        o->coll_api.dtype = nsc_intern(sc, d->collApi.datatype);
        o->coll_api.graph = d->collApi.graphCaptured;
        o->coll_api.py_stack = nsc_py_caller(&s->rec->h.flags);
        if (s->ext) /* v7 with a tag: see start_event */
            s->ext->u.ext.coll_api.user_tag = d->collApi.userTag;
        break;
    case NSC_ET_P2P_API:
        o->p2p_api.count = d->p2pApi.count;
        o->p2p_api.stream = (uint64_t)(uintptr_t)d->p2pApi.stream;
        o->p2p_api.func = nsc_intern(sc, d->p2pApi.func);
        o->p2p_api.dtype = nsc_intern(sc, d->p2pApi.datatype);
        o->p2p_api.graph = d->p2pApi.graphCaptured;
        o->p2p_api.py_stack = nsc_py_caller(&s->rec->h.flags);
        if (v7)
            o->p2p_api.user_tag = d->p2pApi.userTag;
        break;
    case NSC_ET_KERNEL_LAUNCH:
        o->kernel_launch.stream = (uint64_t)(uintptr_t)d->kernelLaunch.stream;
        break;
    case NSC_ET_COLL:
        o->coll.seq = d->coll.seqNumber;
        o->coll.count = d->coll.count;
        o->coll.root = d->coll.root;
        o->coll.func = nsc_intern(sc, d->coll.func);
        o->coll.dtype = nsc_intern(sc, d->coll.datatype);
        o->coll.algo = nsc_intern(sc, d->coll.algo);
        o->coll.proto = nsc_intern(sc, d->coll.proto);
        o->coll.nch = d->coll.nChannels;
        o->coll.nwarps = d->coll.nWarps;
        s->ext->u.ext.coll.parent_group = nsc_parent_id(d->coll.parentGroup, &s->rec->h.flags);
        s->ext->u.ext.coll.send_buff = (uint64_t)(uintptr_t)d->coll.sendBuff;
        s->ext->u.ext.coll.recv_buff = (uint64_t)(uintptr_t)d->coll.recvBuff;
        if (v7) {
            s->ext->u.ext.coll.user_tag = d->coll.userTag;
            s->ext->u.ext.coll.variant = nsc_intern(sc, d->coll.kernelVariant);
            s->ext->u.ext.coll.is_sym = d->coll.isSymColl;
        }
        break;
    case NSC_ET_P2P:
        o->p2p.count = d->p2p.count;
        o->p2p.peer = d->p2p.peer;
        o->p2p.func = nsc_intern(sc, d->p2p.func);
        o->p2p.dtype = nsc_intern(sc, d->p2p.datatype);
        o->p2p.nch = d->p2p.nChannels;
        s->ext->u.ext.p2p.parent_group = nsc_parent_id(d->p2p.parentGroup, &s->rec->h.flags);
        s->ext->u.ext.p2p.buff = (uint64_t)(uintptr_t)d->p2p.buff;
        if (v7)
            s->ext->u.ext.p2p.user_tag = d->p2p.userTag;
        break;
    case NSC_ET_PROXY_OP:
        o->proxy_op.pid = d->proxyOp.pid;
        o->proxy_op.peer = d->proxyOp.peer;
        o->proxy_op.nsteps = d->proxyOp.nSteps;
        o->proxy_op.chunk = d->proxyOp.chunkSize;
        o->proxy_op.ch = d->proxyOp.channelId;
        o->proxy_op.is_send = (uint8_t)d->proxyOp.isSend;
        break;
    case NSC_ET_PROXY_STEP:
        o->proxy_step.step = d->proxyStep.step;
        break;
    case NSC_ET_KERNEL_CH:
        o->kernel_ch.ptimer = d->kernelCh.pTimer;
        o->kernel_ch.ch = d->kernelCh.channelId;
        break;
    case NSC_ET_NET_PLUGIN:
        o->net.plugin_id = (uint64_t)d->netPlugin.id;
        if (d->netPlugin.data && net_is_ib(d->netPlugin.id)) {
            const nsc_abi_net_ib_v1 *ib = d->netPlugin.data;
            o->net.kind = 1;
            o->net.ev_type = ib->type;
            o->net.a = ib->qp.device;
            o->net.b = ib->qp.opcode;
            o->net.length = ib->qp.length;
            s->ext->u.ext.net_ib.wr_id = ib->qp.wr_id;
            s->ext->u.ext.net_ib.qp = ib->qp.qpNum;
        } else if (d->netPlugin.data && net_is_sock(d->netPlugin.id)) {
            const nsc_abi_net_sock_v1 *sk = d->netPlugin.data;
            o->net.kind = 2;
            o->net.ev_type = sk->type;
            o->net.a = sk->sock.fd;
            o->net.b = sk->sock.op;
            o->net.length = sk->sock.length;
        } else {
            o->net.kind = 0; /* unknown plugin: keep the pointer value only */
            o->net.length = (uint64_t)(uintptr_t)d->netPlugin.data;
        }
        break;
    case NSC_ET_CE_COLL:
        o->ce_coll.seq = d->ceColl.seqNumber;
        o->ce_coll.count = d->ceColl.count;
        o->ce_coll.root = d->ceColl.root;
        o->ce_coll.func = nsc_intern(sc, d->ceColl.func);
        o->ce_coll.dtype = nsc_intern(sc, d->ceColl.datatype);
        o->ce_coll.sync = nsc_intern(sc, d->ceColl.syncStrategy);
        o->ce_coll.intra = d->ceColl.intraBatchSync;
        s->ext->u.ext.ce_coll.send_buff = (uint64_t)(uintptr_t)d->ceColl.sendBuff;
        s->ext->u.ext.ce_coll.recv_buff = (uint64_t)(uintptr_t)d->ceColl.recvBuff;
        s->ext->u.ext.ce_coll.stream = (uint64_t)(uintptr_t)d->ceColl.stream;
        s->ext->u.ext.ce_coll.batch_size = d->ceColl.batchSize;
        s->ext->u.ext.ce_coll.num_batches = d->ceColl.numBatches;
        s->ext->u.ext.ce_coll.ce_seq = d->ceColl.ceSeqNum;
        if (v7) {
            o->ce_coll.user_tag_hi = (uint32_t)(d->ceColl.userTag >> 32);
            s->ext->u.ext.ce_coll.user_tag_lo = (uint32_t)d->ceColl.userTag;
        }
        break;
    case NSC_ET_CE_SYNC:
        o->ce_sync.complete = d->ceCollSync.isComplete;
        o->ce_sync.nranks = d->ceCollSync.nRanks;
        break;
    case NSC_ET_CE_BATCH:
        o->ce_batch.num_ops = d->ceCollBatch.numOps;
        o->ce_batch.total_bytes = d->ceCollBatch.totalBytes;
        o->ce_batch.intra = d->ceCollBatch.useIntraSync;
        break;
    case NSC_ET_KERNEL_PHASE: /* v7 only: start_event refuses it from older versions */
        o->kernel_phase.ptimer = d->kernelPhase.pTimer;
        o->kernel_phase.name = nsc_intern(sc, d->kernelPhase.phaseName);
        o->kernel_phase.ch = d->kernelPhase.channelId;
        o->kernel_phase.phase = d->kernelPhase.phaseId;
        break;
    default: /* Group, ProxyCtrl: nothing but the header */
        break;
    }
}

/* An event we do not record but a chained plugin wants: a handle with an
 * id (its children and its stop find the chained plugin's handle through
 * it) marked unrecorded (trace_format.h). */
static void start_unrecorded(struct nsc_comm *c, void **eHandle, const nsc_abi_descr_v7 *d,
                             unsigned et, size_t dsize, int version) {
    uint64_t h = nsc_thread_next_id(nsc_thread_get()) | (uint64_t)et << NSC_HANDLE_ETYPE_SHIFT |
                 NSC_HANDLE_UNRECORDED;
    *eHandle = (void *)(uintptr_t)h;
    nsc_chain_start(c, h, d, dsize, version);
}

/* The shared startEvent. `d` is a v7-layout descriptor of which `dsize`
 * bytes exist (NCCL's own for v5..v7, a lifted copy for v1..v4); its
 * v7-only members are read only when `v7`; `type` its NCCL type bit
 * (v1..v4 store it in 8 bits); `version` the API version of the caller. */
static inline void start_event(void *ctx, void **eHandle, const nsc_abi_descr_v7 *d,
                               uint64_t type, int learn_rank, int v7, size_t dsize,
                               int version) {
    uint64_t ticks = nsc_clock_ticks();
    *eHandle = NULL;
    struct nsc_comm *c = nsc_comm_from_context(ctx);
    if (__builtin_expect(!c, 0)) {
        nsc_count(&nsc_counters.invalid_context);
        return;
    }
    int et = nsc_etype_from_bit(type);
    if (__builtin_expect(et < 0 || (!v7 && et == NSC_ET_KERNEL_PHASE), 0))
        return;
    /* Group descriptors carry rank 0 whatever the rank; Coll, P2p and proxy
     * descriptors carry the real one. */
    if (learn_rank && (et == NSC_ET_COLL || et == NSC_ET_P2P || et == NSC_ET_PROXY_OP))
        nsc_comm_learn_rank(c, d->rank);
    /* What we record now (0 while stopped, control.h) and what a chained
     * plugin asked for (0 without one, chain.h): two relaxed loads. NCCL
     * may deliver a type we do not record when only the chained plugin
     * wants it, or in the moment after a stop or a set_mask. */
    uint32_t chained = nsc_chain_mask(c);
    if (__builtin_expect(!(nsc_ctl_recording() & type), 0)) {
        if (chained & type)
            start_unrecorded(c, eHandle, d, (unsigned)et, dsize, version);
        return;
    }
    uint16_t flags = 0;
    uint64_t parent;
    if (et == NSC_ET_PROXY_OP && d->proxyOp.pid != nsc_session_pid) {
        /* PXN: the parent lives in another process. Its handle is an id
         * there; keep it as a number for the converter, flag it. */
        flags |= NSC_RF_FOREIGN_PARENT;
        parent = nsc_handle_id((uint64_t)(uintptr_t)d->parentObj);
    } else {
        parent = nsc_parent_id(d->parentObj, &flags);
    }
    /* A CollApi takes an EXT only for a user tag (most calls have none). */
    int with_ext = et == NSC_ET_COLL || et == NSC_ET_P2P || et == NSC_ET_CE_COLL ||
                   (et == NSC_ET_NET_PLUGIN && d->netPlugin.data && net_is_ib(d->netPlugin.id)) ||
                   (v7 && et == NSC_ET_COLL_API && d->collApi.userTag != 0);
    struct nsc_start s;
    s.t = nsc_thread_get();
    if (nsc_start_begin(&s, c, (unsigned)et, parent, flags, with_ext, ticks, eHandle) == 0) {
        fill(&s, d, (unsigned)et, v7);
        nsc_start_commit(&s);
    }
    /* hook: per-operation state for the watchdog (op_state.h): Coll, P2p
     * and their children take a slab handle; others, or a full slab, keep
     * the plain one */
    *eHandle = (void *)(uintptr_t)nsc_opst_start(
        c, (unsigned)et, d, (uint64_t)(uintptr_t)*eHandle, ticks,
        et == NSC_ET_COLL ? d->coll.func : et == NSC_ET_P2P ? d->p2p.func : NULL);
    if (__builtin_expect(chained & type, 0)) /* also when the ring was full */
        nsc_chain_start(c, (uint64_t)(uintptr_t)*eHandle, d, dsize, version);
}

/* State arguments sit at offset 0 in every version's union; ProxyCtrl
 * states carry an int, the others a 64-bit value (KernelPhaseStop's is
 * kernelCh.pTimer, as KernelChStop's). */
static inline nsc_abi_result record_state(void *eHandle, int eState, const void *args) {
    uint64_t arg = 0;
    if (args) {
        if (eState >= NSC_ABI_PROXY_CTRL_IDLE && eState <= NSC_ABI_PROXY_CTRL_APPEND_END) {
            int v;
            memcpy(&v, args, sizeof(v));
            arg = (uint64_t)(int64_t)v;
        } else {
            memcpy(&arg, args, sizeof(arg));
        }
    }
    nsc_record_state(eHandle, eState, arg);
    if (__builtin_expect(nsc_chain_active(), 0))
        nsc_chain_state(eHandle, eState, arg);
    nsc_opst_state((uint64_t)(uintptr_t)eHandle, eState, arg, 0); /* hook: watchdog state */
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result stop_event(void *eHandle) {
    nsc_record_stop(eHandle);
    if (__builtin_expect(nsc_chain_active(), 0))
        nsc_chain_stop(eHandle);
    /* hook: watchdog state; last, since it may free the handle's slot */
    if (nsc_handle_is_slab((uint64_t)(uintptr_t)eHandle))
        nsc_opst_stop((uint64_t)(uintptr_t)eHandle, 0); /* 0: it reads the clock if it must */
    return NSC_ABI_SUCCESS;
}

/* A context that is not live (a second finalize, one kept past it) is
 * counted and ignored: its slot may belong to another communicator now.
 * NULL is what a failed init left; nothing to count. */
static nsc_abi_result finalize(void *ctx) {
    if (!ctx)
        return NSC_ABI_SUCCESS;
    struct nsc_comm *c = nsc_comm_claim_context(ctx);
    if (c) {
        nsc_ctl_comm_close(c);
        nsc_chain_comm_close(c); /* the chained plugin's finalize before ours */
        nsc_session_comm_close(c);
    } else
        nsc_count(&nsc_counters.invalid_context);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result init_common(int version, void **ctx, int *mask, uint64_t comm_id,
                                  const char *name, int nnodes, int nranks, int rank,
                                  nsc_abi_logger logfn) {
    *ctx = NULL;
    uint32_t m = 0;
    struct nsc_comm *c =
        nsc_session_comm_open(version, comm_id, name, nnodes, nranks, rank, logfn, &m);
    if (!c)
        return NSC_ABI_INTERNAL_ERROR;
    nsc_chain_comm_open(c, comm_id, name, nnodes, nranks, rank, logfn);
    /* Ours or'ed with the chained plugin's, only what this version defines
     * (KernelPhase brings KernelCh, which NCCL 2.31 would otherwise turn on
     * itself, and log); kept for set_mask and stop (control.h). */
    nsc_ctl_comm_open(c, mask);
    *ctx = nsc_comm_context(c);
    return NSC_ABI_SUCCESS;
}

/* ---- v7 / v6 / v5 ---- */
static nsc_abi_result start_v7(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v7 *d = eDescr;
    start_event(ctx, eHandle, d, d->type, 0, 1, sizeof(nsc_abi_descr_v7), 7);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result start_v6(void *ctx, void **eHandle, void *eDescr) {
    /* A v6 descriptor is the v6 part of a v7 one (nccl_abi.h); with v7 = 0
     * nothing past it is read. */
    const nsc_abi_descr_v6 *d6 = eDescr;
    start_event(ctx, eHandle, (const nsc_abi_descr_v7 *)eDescr, d6->type, 0, 0,
                sizeof(nsc_abi_descr_v6), 6);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result start_v5(void *ctx, void **eHandle, void *eDescr) {
    /* A v5 descriptor is a v6 one without the CE members; NCCL never sends
     * CE types through v5. */
    const nsc_abi_descr_v5 *d5 = eDescr;
    if (d5->type >= NSC_ABI_CE_COLL) {
        *eHandle = NULL;
        return NSC_ABI_SUCCESS;
    }
    start_event(ctx, eHandle, (const nsc_abi_descr_v7 *)eDescr, d5->type, 0, 0,
                sizeof(nsc_abi_descr_v5), 5);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result state_any(void *eHandle, int eState, void *args) {
    return record_state(eHandle, eState, args);
}

static nsc_abi_result init_v7(void **ctx, uint64_t commId, int *mask, const char *commName,
                              int nNodes, int nranks, int rank, nsc_abi_logger logfn) {
    return init_common(7, ctx, mask, commId, commName, nNodes, nranks, rank, logfn);
}
static nsc_abi_result init_v6(void **ctx, uint64_t commId, int *mask, const char *commName,
                              int nNodes, int nranks, int rank, nsc_abi_logger logfn) {
    return init_common(6, ctx, mask, commId, commName, nNodes, nranks, rank, logfn);
}
static nsc_abi_result init_v5(void **ctx, uint64_t commId, int *mask, const char *commName,
                              int nNodes, int nranks, int rank, nsc_abi_logger logfn) {
    return init_common(5, ctx, mask, commId, commName, nNodes, nranks, rank, logfn);
}

/* ---- v4 ---- */
static nsc_abi_result start_v4(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v4 *o = eDescr;
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = o->type;
    d.parentObj = o->parentObj; /* v4: a Coll's/P2p's parent is its Group */
    d.rank = o->rank;
    switch (o->type) {
    case NSC_ABI_COLL:
        d.coll.seqNumber = o->coll.seqNumber;
        d.coll.func = o->coll.func;
        d.coll.sendBuff = o->coll.sendBuff;
        d.coll.recvBuff = o->coll.recvBuff;
        d.coll.count = o->coll.count;
        d.coll.root = o->coll.root;
        d.coll.datatype = o->coll.datatype;
        d.coll.nChannels = o->coll.nChannels;
        d.coll.nWarps = o->coll.nWarps;
        d.coll.algo = o->coll.algo;
        d.coll.proto = o->coll.proto;
        break;
    case NSC_ABI_P2P:
        d.p2p.func = o->p2p.func;
        d.p2p.buff = o->p2p.buff;
        d.p2p.datatype = o->p2p.datatype;
        d.p2p.count = o->p2p.count;
        d.p2p.peer = o->p2p.peer;
        d.p2p.nChannels = o->p2p.nChannels;
        break;
    case NSC_ABI_PROXY_OP:
        memcpy(&d.proxyOp, &o->proxyOp, sizeof(o->proxyOp));
        break;
    case NSC_ABI_PROXY_STEP:
        d.proxyStep.step = o->proxyStep.step;
        break;
    case NSC_ABI_KERNEL_CH:
        d.kernelCh.channelId = o->kernelCh.channelId;
        d.kernelCh.pTimer = o->kernelCh.pTimer;
        break;
    case NSC_ABI_NET_PLUGIN:
        d.netPlugin.id = o->netPlugin.id;
        d.netPlugin.data = o->netPlugin.data;
        break;
    default:
        break;
    }
    start_event(ctx, eHandle, &d, o->type, 0, 0, sizeof(d), 4);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result init_v4(void **ctx, int *mask, const char *commName, uint64_t commHash,
                              int nNodes, int nranks, int rank, nsc_abi_logger logfn) {
    return init_common(4, ctx, mask, commHash, commName, nNodes, nranks, rank, logfn);
}

/* ---- v1..v3: no comm information at init; rank from descriptors ---- */
/* Fields common to v1..v3 besides coll/p2p. */
#define LIFT_COMMON(o, d)                                                                      \
    do {                                                                                       \
        (d).type = (o)->type;                                                                  \
        (d).parentObj = (o)->parentObj;                                                        \
        (d).rank = (o)->rank;                                                                  \
        if ((o)->type == NSC_ABI_PROXY_OP)                                                     \
            memcpy(&(d).proxyOp, &(o)->proxyOp, sizeof((o)->proxyOp));                         \
        else if ((o)->type == NSC_ABI_PROXY_STEP)                                              \
            (d).proxyStep.step = (o)->proxyStep.step;                                          \
    } while (0)

static nsc_abi_result start_v1(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v1 *o = eDescr;
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    LIFT_COMMON(o, d);
    if (o->type == NSC_ABI_COLL) {
        d.coll.seqNumber = o->coll.seqNumber;
        d.coll.func = nsc_v1_name(NSC_V1_FUNC, o->coll.func);
        d.coll.sendBuff = o->coll.sendBuff;
        d.coll.recvBuff = o->coll.recvBuff;
        d.coll.count = o->coll.count;
        d.coll.root = o->coll.root;
        d.coll.datatype = nsc_v1_name(NSC_V1_DTYPE, o->coll.datatype);
        d.coll.nChannels = o->coll.nMaxChannels;
        d.coll.nWarps = o->coll.nWarps;
        d.coll.algo = nsc_v1_name(NSC_V1_ALGO, o->coll.algo);
        d.coll.proto = nsc_v1_name(NSC_V1_PROTO, o->coll.proto);
    } else if (o->type == NSC_ABI_P2P) {
        d.p2p.func = nsc_v1_name(NSC_V1_FUNC, o->p2p.func);
        d.p2p.buff = o->p2p.buff;
        d.p2p.datatype = nsc_v1_name(NSC_V1_DTYPE, o->p2p.datatype);
        d.p2p.count = o->p2p.count;
        d.p2p.peer = o->p2p.peer;
    }
    start_event(ctx, eHandle, &d, o->type, 1, 0, sizeof(d), 1);
    return NSC_ABI_SUCCESS;
}

/* v2 and v3 name their fields alike; only offsets differ. */
#define LIFT_V2V3(o, d)                                                                        \
    do {                                                                                       \
        LIFT_COMMON(o, d);                                                                     \
        if ((o)->type == NSC_ABI_COLL) {                                                       \
            (d).coll.seqNumber = (o)->coll.seqNumber;                                          \
            (d).coll.func = (o)->coll.func;                                                    \
            (d).coll.sendBuff = (o)->coll.sendBuff;                                            \
            (d).coll.recvBuff = (o)->coll.recvBuff;                                            \
            (d).coll.count = (o)->coll.count;                                                  \
            (d).coll.root = (o)->coll.root;                                                    \
            (d).coll.datatype = (o)->coll.datatype;                                            \
            (d).coll.nChannels = (o)->coll.nMaxChannels;                                       \
            (d).coll.nWarps = (o)->coll.nWarps;                                                \
            (d).coll.algo = (o)->coll.algo;                                                    \
            (d).coll.proto = (o)->coll.proto;                                                  \
        } else if ((o)->type == NSC_ABI_P2P) {                                                 \
            (d).p2p.func = (o)->p2p.func;                                                      \
            (d).p2p.buff = (o)->p2p.buff;                                                      \
            (d).p2p.datatype = (o)->p2p.datatype;                                              \
            (d).p2p.count = (o)->p2p.count;                                                    \
            (d).p2p.peer = (o)->p2p.peer;                                                      \
        }                                                                                      \
    } while (0)

static nsc_abi_result start_v2(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v2 *o = eDescr;
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    LIFT_V2V3(o, d);
    start_event(ctx, eHandle, &d, o->type, 1, 0, sizeof(d), 2);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result start_v3(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v3 *o = eDescr;
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    LIFT_V2V3(o, d);
    if (o->type == NSC_ABI_KERNEL_CH) {
        d.kernelCh.channelId = o->kernelCh.channelId;
    } else if (o->type == NSC_ABI_NET_PLUGIN) {
        d.netPlugin.id = o->netPlugin.id;
        d.netPlugin.data = o->netPlugin.data;
    }
    start_event(ctx, eHandle, &d, o->type, 1, 0, sizeof(d), 3);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result init_v1(void **ctx, int *mask) {
    return init_common(1, ctx, mask, 0, "", -1, -1, -1, NULL);
}
static nsc_abi_result init_v2(void **ctx, int *mask) {
    return init_common(2, ctx, mask, 0, "", -1, -1, -1, NULL);
}
static nsc_abi_result init_v3(void **ctx, int *mask) {
    return init_common(3, ctx, mask, 0, "", -1, -1, -1, NULL);
}

/* ---- exported tables: with python_api.c's ncclscope_py_v1, the only
 * symbols the .so exports ---- */
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v7 = {
    "ncclscope", init_v7, start_v7, stop_event, state_any, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v6 = {
    "ncclscope", init_v6, start_v6, stop_event, state_any, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v5 = {
    "ncclscope", init_v5, start_v5, stop_event, state_any, finalize};
EXPORT const nsc_abi_profiler_v4 ncclProfiler_v4 = {
    "ncclscope", init_v4, start_v4, stop_event, state_any, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v3 = {
    "ncclscope", init_v3, start_v3, stop_event, state_any, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v2 = {
    "ncclscope", init_v2, start_v2, stop_event, state_any, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v1 = {
    "ncclscope", init_v1, start_v1, stop_event, state_any, finalize};
