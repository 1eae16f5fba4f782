// SPDX-License-Identifier: Apache-2.0
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
 * Every callback returns success, init too: a comm we cannot take runs
 * without us (init_common says why init does not fail).
 */
#include <string.h>

#include "bench_passthrough.h"
#include "chain.h"
#include "control.h"
#include "log.h"
#include "nccl_abi.h"
#include "nccl_v1_names.h"
#include "hot_line.h"
#include "kernel_sample.h"
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

/* A NetPlugin's fields depend on the net plugin that sent it. */
static inline void fill_net(struct nsc_start *s, const nsc_abi_descr_v7 *d) {
    union nsc_desc *o = &s->rec->u.start.d;
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
}

/* Whether a START of type `et` takes an EXT record (the EXT column of
 * nccl/event_schema.def): a CollApi only for a user tag, most have none. */
static inline int needs_ext(const nsc_abi_descr_v7 *d, unsigned et, int v7) {
    switch (et) {
#define EXT_NEVER 0
#define EXT_ALWAYS 1
#define EXT_NETIB (d->netPlugin.data && net_is_ib(d->netPlugin.id))
#define EXT_TAG (v7 && d->collApi.userTag != 0)
#define NSC_EVENT(ET, VMIN, EXT)                                                               \
    case NSC_ET_##ET:                                                                          \
        return EXT_##EXT;
#include "event_schema.def"
#undef EXT_NEVER
#undef EXT_ALWAYS
#undef EXT_NETIB
#undef EXT_TAG
    default:
        return 0;
    }
}

/* The descriptor's fields into the START (o) and its EXT, one statement per
 * row of nccl/event_schema.def: PUT_<KIND>(where it goes, d's member).
 * v7-only members (VMIN 7) are read only from v7 calls; an EXT that only
 * some STARTs take (XC) is written when there is one. */
#define DST_D(f) o->f
#define DST_X(f) s->ext->u.ext.f
#define DST_XC(f) s->ext->u.ext.f
#define HAS_D 1
#define HAS_X 1
#define HAS_XC (s->ext != NULL)
#define HAS_NIB 0 /* NetPlugin: fill_net */
#define HAS_NIBX 0
#define HAS_NSK 0
#define HAS_NRAW 0
#define PUT_U(dst, src) dst = src
#define PUT_I(dst, src) dst = src
#define PUT_B(dst, src) dst = src
#define PUT_STR(dst, src) dst = nsc_intern(sc, src)
#define PUT_PTR(dst, src) dst = (uint64_t)(uintptr_t)(src)
#define PUT_PARENT(dst, src) dst = nsc_parent_id(src, &s->rec->h.flags)
#define PUT_CETAG(dst, src)                                                                    \
    do {                                                                                       \
        dst = (uint32_t)((src) >> 32);                                                         \
        s->ext->u.ext.ce_coll.user_tag_lo = (uint32_t)(src);                                   \
    } while (0)
#define PUT_PY(dst, src) dst = nsc_py_caller(&s->rec->h.flags)
#define PUT_NETID(dst, src)
#define PUT_NETU(dst, src)
#define PUT_NETI(dst, src)
#define PUT_NETPTR(dst, src)
#define PUT_LIT(dst, src)
static inline void fill(struct nsc_start *s, const nsc_abi_descr_v7 *d, unsigned et, int v7) {
    union nsc_desc *o = &s->rec->u.start.d;
    struct nsc_intern_cache *sc = &s->t->strings;
    switch (et) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ET_##ET:
#define NSC_EVENT_END(ET)                                                                      \
    if (NSC_ET_##ET == NSC_ET_NET_PLUGIN) /* a constant per case */                            \
        fill_net(s, d);                                                                        \
    break;
#define NSC_FIELD(ET, NAME, KIND, ABI, WHERE, OURS, TSV, VMIN, SHOW)                           \
    if (((VMIN) < 7 || v7) && HAS_##WHERE) {                                                   \
        PUT_##KIND(DST_##WHERE(OURS), d->ABI);                                                 \
    }
#include "event_schema.def"
    default:
        break;
    }
}
#undef DST_D
#undef DST_X
#undef DST_XC
#undef HAS_D
#undef HAS_X
#undef HAS_XC
#undef HAS_NIB
#undef HAS_NIBX
#undef HAS_NSK
#undef HAS_NRAW
#undef PUT_U
#undef PUT_I
#undef PUT_B
#undef PUT_STR
#undef PUT_PTR
#undef PUT_PARENT
#undef PUT_CETAG
#undef PUT_PY
#undef PUT_NETID
#undef PUT_NETU
#undef PUT_NETI
#undef PUT_NETPTR
#undef PUT_LIT

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

/* KernelCh sampling (record/kernel_sample.h): the handle bit for an event
 * of type et. An operation's API event (v1-v4: its plan's Group) reads
 * what NCCL enqueued it with and decides about the next; a Coll or P2p is
 * sampled when that parent was (flag NSC_RF_SAMPLED), or, where the parent
 * is not recorded, by the word as it is now (NCCL copied it a moment
 * before). Without sampling, every operation is when KernelCh is recorded. */
static inline uint64_t sample(struct nsc_comm *c, int et, const nsc_abi_descr_v7 *d,
                              uint64_t ticks, int version, uint32_t chained, uint16_t *flags) {
    int op = et == NSC_ET_COLL || et == NSC_ET_P2P;
    int keep = (chained & NSC_ABI_KERNEL_CH) != 0;
    int api = version >= 5 ? et == NSC_ET_COLL_API || et == NSC_ET_P2P_API : et == NSC_ET_GROUP;
    if (!op && !api)
        return 0;
    if (!(nsc_ctl_recording() & NSC_ABI_KERNEL_CH))
        return 0;
    if (!nsc_ksample_on()) {
        if (op)
            *flags |= NSC_RF_SAMPLED;
        return op ? NSC_HANDLE_SAMPLED : 0;
    }
    if (api)
        return nsc_ksample_enqueue(c, ticks, keep) ? NSC_HANDLE_SAMPLED : 0;
    uint64_t p = (uint64_t)(uintptr_t)d->parentObj;
    int known = p && nsc_handle_valid(p) && !(p & NSC_HANDLE_UNRECORDED) &&
                ((p >> NSC_HANDLE_ETYPE_SHIFT) & 0xf) ==
                    (unsigned)(version <= 4 ? NSC_ET_GROUP
                                            : et == NSC_ET_COLL ? NSC_ET_COLL_API : NSC_ET_P2P_API);
    int yes = known ? (p & NSC_HANDLE_SAMPLED) != 0 : nsc_ksample_enqueue(c, ticks, keep);
    if (yes)
        *flags |= NSC_RF_SAMPLED;
    return yes ? NSC_HANDLE_SAMPLED : 0;
}

/* A KernelCh or KernelPhase under an operation that was not sampled: not
 * recorded (NCCL gives it only where a chained plugin asks for KernelCh on
 * every operation, or a host that ignores the mask word). */
static inline int unsampled_kernel(int et, const nsc_abi_descr_v7 *d) {
    if ((et != NSC_ET_KERNEL_CH && et != NSC_ET_KERNEL_PHASE) || !nsc_ksample_on())
        return 0;
    uint64_t p = (uint64_t)(uintptr_t)d->parentObj;
    unsigned pt = (unsigned)(p >> NSC_HANDLE_ETYPE_SHIFT) & 0xf;
    if (et == NSC_ET_KERNEL_PHASE) /* under a KernelCh left unrecorded above */
        return (p & NSC_HANDLE_UNRECORDED) && pt == NSC_ET_KERNEL_CH;
    return p && nsc_handle_valid(p) && (pt == NSC_ET_COLL || pt == NSC_ET_P2P) &&
           !(p & NSC_HANDLE_SAMPLED);
}

/* What v1-v3 descriptors tell of their comm, which their init does not:
 * a Coll's or P2p's commHash and comm name (the rank is in every
 * descriptor's header). */
struct learnt {
    uint64_t comm_id;
    const char *name;
};

/* The shared startEvent. `d` is a v7-layout descriptor of which `dsize`
 * bytes exist (NCCL's own for v5..v7, a lifted copy for v1..v4); its
 * v7-only members are read only when `v7`; `type` its NCCL type bit
 * (v1..v4 store it in 8 bits); `version` the API version of the caller;
 * `learn` (v1-v3, else NULL) what the descriptor tells of its comm. */
static inline void start_event(void *ctx, void **eHandle, const nsc_abi_descr_v7 *d,
                               uint64_t type, const struct learnt *learn, int v7, size_t dsize,
                               int version) {
    int pass = atomic_load_explicit(&nsc_hot.passthrough, memory_order_relaxed);
    if (__builtin_expect(pass, 0) && pass != 3) {
        if (pass == 2) /* the floor plugin's behaviour */
            nsc_bench_floor(1, type);
        *eHandle = (void *)&nsc_passthrough_token; /* the empty plugin's behaviour */
        return;
    }
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
     * descriptors carry the real one, but a ProxyOp from another process
     * (PXN) carries that process's. */
    if (learn && (et == NSC_ET_COLL || et == NSC_ET_P2P))
        nsc_comm_learn(c, ctx, d->rank, learn->comm_id, learn->name);
    else if (learn && et == NSC_ET_PROXY_OP && d->proxyOp.pid == nsc_session_pid)
        nsc_comm_learn(c, ctx, d->rank, 0, NULL);
    /* What we record now (0 while stopped, control.h) and what a chained
     * plugin asked for (0 without one, chain.h): two relaxed loads. NCCL
     * may deliver a type we do not record when only the chained plugin
     * wants it, or in the moment after a stop or a set_mask. */
    uint32_t chained = nsc_chain_mask(c);
    if (__builtin_expect(!(nsc_ctl_recording() & type) || unsampled_kernel(et, d), 0)) {
        if (chained & type)
            start_unrecorded(c, eHandle, d, (unsigned)et, dsize, version);
        else if (version <= 4 && et == NSC_ET_GROUP && (nsc_ctl_recording() & NSC_GROUP_GATES))
            /* v1-v4 start a plan's Coll and P2p (and so their children)
             * only under a Group handle that is not NULL: one recorded
             * nowhere (its children have no parent, its stop writes
             * nothing), as for a chained plugin's type. */
            *eHandle = (void *)(uintptr_t)(nsc_thread_next_id(nsc_thread_get()) |
                                           (uint64_t)et << NSC_HANDLE_ETYPE_SHIFT |
                                           NSC_HANDLE_UNRECORDED);
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
        /* A parent started while the benchmarks' passthrough was on has the
         * token for a handle: no parent we know (as if NCCL passed NULL). */
        parent = d->parentObj == (void *)&nsc_passthrough_token ? 0
                                                                : nsc_parent_id(d->parentObj, &flags);
    }
    uint64_t sampled = sample(c, et, d, ticks, version, chained, &flags);
    /* A CollApi takes an EXT only for a user tag (most calls have none). */
    int with_ext = needs_ext(d, (unsigned)et, v7);
    struct nsc_start s;
    s.t = nsc_thread_get();
    if (nsc_start_begin(&s, c, (unsigned)et, parent, flags, with_ext, ticks, eHandle) == 0) {
        fill(&s, d, (unsigned)et, v7);
        nsc_start_commit(&s);
    }
    *eHandle = (void *)((uintptr_t)*eHandle | sampled);
    /* hook: per-operation state for the watchdog (op_state.h): Coll, P2p
     * and their children take a slab handle; others, or a full slab, keep
     * the plain one */
    if (__builtin_expect(pass != 3, 1)) /* 3: benchmarks' recording without this hook */
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
    if (__builtin_expect(eHandle == (void *)&nsc_passthrough_token, 0)) {
        if (atomic_load_explicit(&nsc_hot.passthrough, memory_order_relaxed) == 2)
            nsc_bench_floor(4, (uint64_t)eState);
        return NSC_ABI_SUCCESS;
    }
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
    if (__builtin_expect(eHandle == (void *)&nsc_passthrough_token, 0)) {
        if (atomic_load_explicit(&nsc_hot.passthrough, memory_order_relaxed) == 2)
            nsc_bench_floor(3, 0);
        return NSC_ABI_SUCCESS;
    }
    /* NCCL (2.28-2.31) never clears its CollApi handle and stops it at every
     * collective call: once CollApi leaves the mask (stop, set_mask) the
     * last one would be stopped again at each call. Only with a chained
     * plugin may NCCL still ask for CollApi we do not record. */
    uint64_t h = (uint64_t)(uintptr_t)eHandle;
    /* the handle's type first: other stops read nothing more */
    if (((h >> NSC_HANDLE_ETYPE_SHIFT) & 0xf) == NSC_ET_COLL_API &&
        __builtin_expect(!(nsc_ctl_recording() & NSC_ABI_COLL_API), 0) && !nsc_chain_active())
        return NSC_ABI_SUCCESS;
    if (!h)
        return NSC_ABI_SUCCESS;
    uint64_t ticks = nsc_clock_ticks();
    /* hook: watchdog state, before the record. Its CAS on the slot is a
     * locked instruction, which waits for every store before it to leave
     * the store buffer: after the record, it waited for the record's line,
     * a miss inside NCCL (caches cold between callbacks); before it, the
     * record's stores drain after we return. The record depends on the
     * handle's bits only, never on the slot, which the hook may free. */
    if (nsc_handle_is_slab(h))
        nsc_opst_stop(h, ticks); /* the stop record's time */
    nsc_record_end_at(eHandle, NSC_REC_STOP, 0, 0, ticks);
    if (__builtin_expect(nsc_chain_active(), 0))
        nsc_chain_stop(eHandle);
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
    uint32_t m = UINT32_MAX;
    struct nsc_comm *c =
        nsc_session_comm_open(version, comm_id, name, nnodes, nranks, rank, logfn, &m);
    if (!c) {
        /* Not a failure for NCCL, which handles one badly: 2.29 and later
         * unload the plugin on it and once more at the comm's finalize, so
         * its reference count drops twice and the plugin is unloaded under
         * the comms still using it; 2.23-2.27 stop profiling every comm of
         * the process. So the comm gets no context (finalize ignores NULL;
         * its events, if the process-wide mask brings any, are counted as
         * invalid_context), and where nothing records in this process
         * NCCL is told to deliver nothing. */
        if (m == 0)
            *mask = 0;
        return NSC_ABI_SUCCESS;
    }
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
    start_event(ctx, eHandle, d, d->type, NULL, 1, sizeof(nsc_abi_descr_v7), 7);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result start_v6(void *ctx, void **eHandle, void *eDescr) {
    /* A v6 descriptor is the v6 part of a v7 one (nccl_abi.h); with v7 = 0
     * nothing past it is read. */
    const nsc_abi_descr_v6 *d6 = eDescr;
    start_event(ctx, eHandle, (const nsc_abi_descr_v7 *)eDescr, d6->type, NULL, 0,
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
    start_event(ctx, eHandle, (const nsc_abi_descr_v7 *)eDescr, d5->type, NULL, 0,
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

/* ---- v1..v4: lifted into a v7 descriptor, member by member as the
 * NSC_LIFT_* rows of nccl/event_schema.def say; the header by hand (a
 * Coll's/P2p's parentObj is its Group there, which nsc_parent_id takes as
 * it comes) ---- */
#define UP_SAME(dst, src) dst = src
#define UP_COPY(dst, src) memcpy(&(dst), &(src), sizeof(src))
#define UP_V1FUNC(dst, src) dst = nsc_v1_name(NSC_V1_FUNC, src)
#define UP_V1DTYPE(dst, src) dst = nsc_v1_name(NSC_V1_DTYPE, src)
#define UP_V1ALGO(dst, src) dst = nsc_v1_name(NSC_V1_ALGO, src)
#define UP_V1PROTO(dst, src) dst = nsc_v1_name(NSC_V1_PROTO, src)
#define LIFT_HEADER(o, d)                                                                      \
    do {                                                                                       \
        memset(&(d), 0, sizeof(d));                                                            \
        (d).type = (o)->type;                                                                  \
        (d).parentObj = (o)->parentObj;                                                        \
        (d).rank = (o)->rank;                                                                  \
    } while (0)

static nsc_abi_result start_v4(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v4 *o = eDescr;
    nsc_abi_descr_v7 d;
    LIFT_HEADER(o, d);
    switch ((unsigned)o->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V4(ET, OLD, NEW, CONV) UP_##CONV(d.NEW, o->OLD);
#include "event_schema.def"
    default:
        break;
    }
    start_event(ctx, eHandle, &d, o->type, NULL, 0, sizeof(d), 4);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result init_v4(void **ctx, int *mask, const char *commName, uint64_t commHash,
                              int nNodes, int nranks, int rank, nsc_abi_logger logfn) {
    return init_common(4, ctx, mask, commHash, commName, nNodes, nranks, rank, logfn);
}

/* ---- v1..v3: no comm information at init; rank, commHash and name from
 * descriptors ---- */
#define LEARNT(o)                                                                              \
    ((o)->type == NSC_ABI_COLL  ? (struct learnt){(o)->coll.commHash, (o)->coll.name}         \
     : (o)->type == NSC_ABI_P2P ? (struct learnt){(o)->p2p.commHash, (o)->p2p.name}           \
                                : (struct learnt){0, NULL})
static nsc_abi_result start_v1(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v1 *o = eDescr;
    nsc_abi_descr_v7 d;
    LIFT_HEADER(o, d);
    switch ((unsigned)o->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V1(ET, OLD, NEW, CONV) UP_##CONV(d.NEW, o->OLD);
#include "event_schema.def"
    default:
        break;
    }
    struct learnt l = LEARNT(o);
    start_event(ctx, eHandle, &d, o->type, &l, 0, sizeof(d), 1);
    return NSC_ABI_SUCCESS;
}

/* v2 and v3 name their fields alike; only offsets differ. */
static nsc_abi_result start_v2(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v2 *o = eDescr;
    nsc_abi_descr_v7 d;
    LIFT_HEADER(o, d);
    switch ((unsigned)o->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V23(ET, OLD, NEW, CONV) UP_##CONV(d.NEW, o->OLD);
#include "event_schema.def"
    default:
        break;
    }
    struct learnt l = LEARNT(o);
    start_event(ctx, eHandle, &d, o->type, &l, 0, sizeof(d), 2);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result start_v3(void *ctx, void **eHandle, void *eDescr) {
    const nsc_abi_descr_v3 *o = eDescr;
    nsc_abi_descr_v7 d;
    LIFT_HEADER(o, d);
    switch ((unsigned)o->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V23(ET, OLD, NEW, CONV) UP_##CONV(d.NEW, o->OLD);
#define NSC_LIFT_V3(ET, OLD, NEW, CONV) UP_##CONV(d.NEW, o->OLD);
#include "event_schema.def"
    default:
        break;
    }
    struct learnt l = LEARNT(o);
    start_event(ctx, eHandle, &d, o->type, &l, 0, sizeof(d), 3);
    return NSC_ABI_SUCCESS;
}
#undef UP_SAME
#undef UP_COPY
#undef UP_V1FUNC
#undef UP_V1DTYPE
#undef UP_V1ALGO
#undef UP_V1PROTO
#undef LIFT_HEADER
#undef LEARNT

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
