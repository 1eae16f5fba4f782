// SPDX-License-Identifier: Apache-2.0
/* call_mix.c - the synthetic operations and the two ways to run them. */
#include "call_mix.h"

#include <string.h>

#include "cycle_timer.h"

const char *const mix_kind_name[MIX_KINDS] = {"start", "stop", "state"};

/* ---- building ---- */

static int add_event(struct mix_op *op, int type, int parent) {
    int e = op->nev++;
    struct mix_event *me = &op->ev[e];
    memset(me, 0, sizeof(*me));
    me->d.type = (uint64_t)type;
    me->parent = parent;
    me->parent_group = -1;
    return e;
}

static void add_step(struct mix_op *op, int kind, int ev, int state, uint64_t arg) {
    struct mix_step *s = &op->step[op->nsteps++];
    s->kind = (uint8_t)kind;
    s->ev = (uint8_t)ev;
    s->state = (int16_t)state;
    s->arg = arg;
    op->per_kind[kind]++;
}

static int start(struct mix_op *op, int type, int parent) {
    int e = add_event(op, type, parent);
    add_step(op, MIX_START, e, 0, 0);
    return e;
}

static void coll_fields(nsc_abi_descr_v7 *d, uint64_t count, int nch, const char *proto) {
    d->coll.func = "AllReduce";
    d->coll.count = count;
    d->coll.datatype = "ncclFloat32";
    d->coll.algo = "RING";
    d->coll.proto = proto;
    d->coll.nChannels = (uint8_t)nch;
    d->coll.nWarps = 16;
    d->coll.sendBuff = (const void *)0x7f0000100000;
    d->coll.recvBuff = (void *)0x7f0000200000;
}

/* The API part every mix shares, in NCCL 2.28's order; returns the Coll. */
static int api_part(struct mix_op *op, uint64_t count, int nch, const char *proto) {
    int gapi = start(op, NSC_ABI_GROUP_API, -1);
    op->ev[gapi].d.groupApi.groupDepth = 1;
    add_step(op, MIX_STATE, gapi, 23 /* GroupApi: start of the group */, 0);
    int capi = start(op, NSC_ABI_COLL_API, gapi);
    nsc_abi_descr_v7 *d = &op->ev[capi].d;
    d->collApi.func = "AllReduce";
    d->collApi.count = count;
    d->collApi.datatype = "ncclFloat32";
    d->collApi.stream = (void *)0x55550000abc0;
    add_step(op, MIX_STOP, capi, 0, 0); /* stopped before its Coll starts */
    add_step(op, MIX_STATE, gapi, NSC_ABI_GROUP_END_API_START, 0);
    int kl = start(op, NSC_ABI_KERNEL_LAUNCH, gapi);
    op->ev[kl].d.kernelLaunch.stream = (void *)0x55550000abc0;
    add_step(op, MIX_STOP, kl, 0, 0);
    int grp = start(op, NSC_ABI_GROUP, -1);
    int coll = add_event(op, NSC_ABI_COLL, capi);
    op->ev[coll].parent_group = grp;
    coll_fields(&op->ev[coll].d, count, nch, proto);
    add_step(op, MIX_START, coll, 0, 0);
    add_step(op, MIX_STOP, coll, 0, 0);
    add_step(op, MIX_STOP, grp, 0, 0);
    add_step(op, MIX_STOP, gapi, 0, 0);
    return coll;
}

/* The proxy thread's half of one channel (mix_build_nccl_pattern): a
 * ProxyOp of 2 steps, 3 states each (the recorded network path has 2-3). */
static int pattern_proxy_op(struct mix_op *op, int coll, int ch, int *steps) {
    int is_send = ch == 0;
    int po = start(op, NSC_ABI_PROXY_OP, coll);
    nsc_abi_descr_v7 *d = &op->ev[po].d;
    d->proxyOp.channelId = (uint8_t)ch;
    d->proxyOp.peer = 1;
    d->proxyOp.nSteps = 2;
    d->proxyOp.chunkSize = 131072;
    d->proxyOp.isSend = is_send;
    add_step(op, MIX_STATE, po, 19 /* ProxyOp in progress */, 0);
    for (int s = 0; s < 2; s++) {
        int ps = add_event(op, NSC_ABI_PROXY_STEP, po);
        op->ev[ps].d.proxyStep.step = s;
        steps[s] = ps;
    }
    return po;
}

static void kernel_channels(struct mix_op *op, int coll, int n) {
    for (int c = 0; c < n; c++) {
        int k = start(op, NSC_ABI_KERNEL_CH, coll);
        op->ev[k].d.kernelCh.channelId = (uint8_t)c;
        op->ev[k].d.kernelCh.pTimer = 1700000000000000000ull + (uint64_t)c * 40;
        add_step(op, MIX_STATE, k, NSC_ABI_KERNEL_CH_STOP, 1700000000000005000ull);
        add_step(op, MIX_STOP, k, 0, 0);
    }
}

int mix_build(struct mix_op *op, const char *name) {
    memset(op, 0, sizeof(*op));
    if (!strcmp(name, "allreduce64")) {
        int coll = api_part(op, 16, 2, "LL");
        kernel_channels(op, coll, 2);
    } else if (!strcmp(name, "allreduce1m")) {
        int coll = api_part(op, 262144, 24, "SIMPLE");
        kernel_channels(op, coll, 24);
    } else if (!strcmp(name, "network")) {
        int coll = api_part(op, 262144, 2, "SIMPLE");
        kernel_channels(op, coll, 2);
        /* Recorded send steps go SendGPUWait -> SendPeerWait -> SendWait,
         * receive steps RecvWait -> RecvFlushWait -> RecvGPUWait; the mix
         * gives every step five state updates. */
        static const int send_states[5] = {8, 20, 9, 9, 9};
        static const int recv_states[5] = {10, 10, 11, 12, 12};
        for (int p = 0; p < 4; p++) {
            int is_send = p & 1;
            int po = start(op, NSC_ABI_PROXY_OP, coll);
            nsc_abi_descr_v7 *d = &op->ev[po].d;
            d->proxyOp.channelId = (uint8_t)(p / 2);
            d->proxyOp.peer = 1;
            d->proxyOp.nSteps = 8;
            d->proxyOp.chunkSize = 131072;
            d->proxyOp.isSend = is_send;
            add_step(op, MIX_STATE, po, 19 /* ProxyOp in progress */, 0);
            for (int s = 0; s < 8; s++) {
                int ps = start(op, NSC_ABI_PROXY_STEP, po);
                op->ev[ps].d.proxyStep.step = s;
                for (int k = 0; k < 5; k++)
                    add_step(op, MIX_STATE, ps, is_send ? send_states[k] : recv_states[k], 131072);
                add_step(op, MIX_STOP, ps, 0, 0);
            }
            add_step(op, MIX_STOP, po, 0, 0);
        }
    } else {
        return -1;
    }
    op->name = name;
    return 0;
}

void mix_build_nccl_pattern(struct mix_op *op, int proxy_ops) {
    /* channel 0 sends (SendGPUWait, SendPeerWait, SendWait), 1 receives
     * (RecvWait, RecvFlushWait, RecvGPUWait) */
    static const int states[2][3] = {{8, 20, 9}, {10, 11, 12}};
    memset(op, 0, sizeof(*op));
    int coll = api_part(op, 16, 2, "LL");
    int kch[2], po[2], ps[2][2];
    int first_proxy = op->nsteps;
    for (int c = 0; c < 2; c++) {
        kch[c] = start(op, NSC_ABI_KERNEL_CH, coll);
        op->ev[kch[c]].d.kernelCh.channelId = (uint8_t)c;
        op->ev[kch[c]].d.kernelCh.pTimer = 1700000000000000000ull + (uint64_t)c * 40;
        if (proxy_ops)
            po[c] = pattern_proxy_op(op, coll, c, ps[c]);
    }
    int first_steps = op->nsteps;
    for (int c = 0; c < 2 && proxy_ops; c++)
        for (int s = 0; s < 2; s++) {
            add_step(op, MIX_START, ps[c][s], 0, 0);
            for (int k = 0; k < 3; k++)
                add_step(op, MIX_STATE, ps[c][s], states[c][k], 131072);
            add_step(op, MIX_STOP, ps[c][s], 0, 0);
        }
    int first_stops = op->nsteps;
    for (int c = 0; c < 2; c++) {
        if (proxy_ops)
            add_step(op, MIX_STOP, po[c], 0, 0);
        add_step(op, MIX_STATE, kch[c], NSC_ABI_KERNEL_CH_STOP, 1700000000000005000ull);
        add_step(op, MIX_STOP, kch[c], 0, 0);
    }
    for (int i = first_proxy; i < op->nsteps; i++)
        op->step[i].part = (uint8_t)(i < first_steps ? 1 : i < first_stops ? 2 : 3);
    op->name = "nccl-pattern";
}

/* ---- running ---- */

static inline void do_start(struct mix_runner *r, void **hs, int e) {
    struct mix_event *me = &r->op->ev[e];
    nsc_abi_descr_v7 *d = &me->d;
    d->parentObj = me->parent >= 0 ? hs[me->parent] : NULL;
    if (d->type == NSC_ABI_COLL) {
        d->coll.parentGroup = hs[me->parent_group];
        d->coll.seqNumber = r->seq;
    } else if (d->type == NSC_ABI_PROXY_OP) {
        d->proxyOp.pid = r->pid;
    }
    nsc_host_start(r->host, r->ctx, &hs[e], d);
}

static inline void do_call(struct mix_runner *r, void **hs, const struct mix_step *s) {
    switch (s->kind) {
    case MIX_START:
        do_start(r, hs, s->ev);
        break;
    case MIX_STOP:
        nsc_host_stop(r->host, hs[s->ev]); /* NULL handles are skipped, as NCCL does */
        break;
    default:
        nsc_host_state(r->host, hs[s->ev], s->state, s->arg);
        break;
    }
}

static inline int wanted(const struct mix_runner *r, void *const *hs, const struct mix_step *s) {
    if (!(r->op->ev[s->ev].d.type & r->mask))
        return 0;
    return s->kind == MIX_START || hs[s->ev] != NULL;
}

int mix_wanted(const struct mix_runner *r, void *const *hs, const struct mix_step *s) {
    return wanted(r, hs, s);
}

void mix_call(struct mix_runner *r, void **hs, const struct mix_step *s) { do_call(r, hs, s); }

static void count_starts(struct mix_runner *r, void **hs) {
    for (int e = 0; e < r->op->nev; e++)
        if (r->op->ev[e].d.type & r->mask) {
            r->events_offered++;
            if (!hs[e])
                r->events_null++;
        }
}

/* --cold: a line-by-line write over the scratch buffer. */
static void scrub(struct mix_runner *r) {
    for (size_t k = 0; k < r->cold_bytes; k += 64)
        r->scratch[k] = (unsigned char)(r->scratch[k] + 1);
}

void mix_run_natural(struct mix_runner *r, double ns_per_tick) {
    void **hs = r->h[0];
    const double scale = ns_per_tick * 16.0;
    for (int i = 0; i < r->op->nsteps; i++) {
        const struct mix_step *s = &r->op->step[i];
        if (!wanted(r, hs, s))
            continue;
        if (r->cold_bytes)
            scrub(r);
        uint64_t t0 = cycle_fenced();
        do_call(r, hs, s);
        if (r->cold_bytes)
            atomic_fetch_add_explicit(&r->sync_word, 1, memory_order_seq_cst);
        uint64_t t1 = cycle_fenced();
        uint64_t d = t1 - t0;
        d = d > r->fence_overhead ? d - r->fence_overhead : 0;
        lat_hist_add(&r->single[s->kind], (uint64_t)((double)d * scale + 0.5));
        r->calls[s->kind]++;
    }
    count_starts(r, hs);
    r->seq++;
}

void mix_run_grouped(struct mix_runner *r, double ns_per_tick) {
    const double scale = ns_per_tick * 16.0;
    const struct mix_op *op = r->op;
    for (int kind = 0; kind < MIX_KINDS; kind++) {
        uint64_t n = 0;
        uint64_t seq0 = r->seq;
        uint64_t t0 = cycle_now();
        for (int k = 0; k < MIX_BATCH_OPS; k++) {
            void **hs = r->h[k];
            r->seq = seq0 + (uint64_t)k;
            for (int i = 0; i < op->nsteps; i++) {
                const struct mix_step *s = &op->step[i];
                if (s->kind != kind || !wanted(r, hs, s))
                    continue;
                do_call(r, hs, s);
                n++;
            }
        }
        uint64_t t1 = cycle_now();
        r->seq = seq0;
        if (n) {
            lat_hist_add(&r->batch[kind], (uint64_t)((double)(t1 - t0) * scale / (double)n + 0.5));
            r->calls[kind] += n;
        }
    }
    for (int k = 0; k < MIX_BATCH_OPS; k++)
        count_starts(r, r->h[k]);
    r->seq += MIX_BATCH_OPS;
}
