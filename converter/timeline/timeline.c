// SPDX-License-Identifier: Apache-2.0
/* timeline.c - processes, tracks, nesting and the GPU tracks (timeline.h). */
#include "timeline_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decoded.h"
#include "event_types.h"

struct nsc_timeline *nsc_timeline_new(const struct nsc_timeline_opts *o, struct nsc_sink *sink) {
    struct nsc_timeline *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->o = *o;
    t->sink = sink;
    t->recent = calloc(PLACED_CAP, sizeof(*t->recent));
    if (nsc_args_init(&t->args) != 0 || !t->recent ||
        nsc_id_map_init(&t->chain, o->flows ? 4096 : 8, sizeof(struct placed), NSC_ID_MAP_GROW) != 0) {
        nsc_timeline_free(t);
        return NULL;
    }
    return t;
}

/* Calls fn on every track of the file. */
static void each_track(struct tl_file *f, void (*fn)(struct track *)) {
    struct nsc_id_map_iter it;
    uint64_t key;
    void *v;
    for (nsc_id_map_iter_init(&f->tracks, &it); nsc_id_map_next(&f->tracks, &it, &key, &v);)
        fn(*(struct track **)v);
}

static void track_free(struct track *k) { free(k); }
static void track_unname(struct track *k) { k->named = 0; }

static void file_free(struct tl_file *f) {
    if (f->tracks.keys) {
        each_track(f, track_free);
        nsc_id_map_destroy(&f->tracks);
    }
    free(f->comm_named);
    for (uint32_t k = 0; k < f->nviews; k++)
        free(f->views[k]);
    free(f->views);
    free(f->phases);
    tl_ops_free(f);
    memset(f, 0, sizeof(*f));
}

void nsc_timeline_free(struct nsc_timeline *t) {
    if (!t)
        return;
    file_free(&t->f);
    free(t->recent);
    nsc_id_map_destroy(&t->chain);
    nsc_args_free(&t->args);
    free(t);
}

int nsc_timeline_file_begin(struct nsc_timeline *t, int index, const char *path,
                            const struct nsc_decoder *d, struct nsc_events *ev,
                            const struct nsc_gpu_clock *gpu, uint32_t ngpu) {
    file_free(&t->f);
    struct tl_file *f = &t->f;
    f->index = index;
    f->path = path;
    f->dec = d;
    f->open = ev;
    f->gpu = gpu;
    f->ngpu = ngpu;
    t->have_file = 1;
    if (!t->o.detail && tl_ops_init(f) != 0)
        return -1;
    return nsc_id_map_init(&f->tracks, 64, sizeof(struct track *), NSC_ID_MAP_GROW);
}

void nsc_timeline_totals(const struct nsc_timeline *t, struct nsc_timeline_totals *out) {
    *out = t->tot;
}

/* ---- parts, filters ---- */

/* A new part of the output began: names are written again where they are
 * next used, since each part must stand alone in Perfetto. */
static void reset_names(struct nsc_timeline *t) {
    struct tl_file *f = &t->f;
    if (!t->have_file)
        return;
    each_track(f, track_unname);
    if (f->comm_named)
        memset(f->comm_named, 0, f->ncomm_named * sizeof(*f->comm_named));
    for (uint32_t i = 0; i < f->nviews; i++)
        if (f->views[i])
            f->views[i]->lanes_named = f->views[i]->channels_named = 0;
}

void tl_rotate(struct nsc_timeline *t) {
    if (nsc_sink_rotate(t->sink))
        reset_names(t);
}

/* Whether an event of comm `serial` and type etype over [start, end] passes
 * the filters. Counts, for the run's warning, what --ranks and --comm each
 * matched (tested apart, so that a --comm that exists is not reported as
 * matching nothing because --ranks dropped its events first). The caller
 * counts what it drops: only event records are counted as filtered out, so
 * that the summary's "N events (M filtered out)" has M <= N (operation
 * slices, marks and Python calls, drawn from those events, were counted too
 * and M exceeded N). */
static int keep(struct nsc_timeline *t, uint32_t serial, int etype, uint64_t start, uint64_t end) {
    const struct nsc_timeline_opts *o = &t->o;
    int ok = 1;
    if (o->nranks || o->comm) {
        const struct nsc_comm_info *ci = nsc_decoder_comm(t->f.dec, serial);
        if (!ci)
            return 0;
        if (o->nranks) {
            int in = 0;
            for (int i = 0; i < o->nranks && !in; i++)
                in = o->ranks[i] == ci->rank;
            if (in)
                t->tot.ranks_matched++;
            ok = in;
        }
        if (o->comm) {
            /* `hang` and `info` print commIds as 0x...: the prefix is the
             * hex digits after it, in either case */
            const char *h = o->comm;
            if (h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
                h += 2;
            char hex[17];
            snprintf(hex, sizeof(hex), "%016" PRIx64, ci->comm_id);
            int in = (*h && strncasecmp(hex, h, strlen(h)) == 0) || strcmp(ci->name, o->comm) == 0;
            if (in)
                t->tot.comm_matched++;
            ok = ok && in;
        }
        if (!ok)
            return 0;
    }
    /* after --ranks and --comm: what they match does not depend on --events */
    if (o->event_mask && etype >= 0 && !((o->event_mask >> etype) & 1))
        return 0;
    if (o->t_to > 0) {
        double a = ((double)start - (double)o->t_origin) / 1e9;
        double b = ((double)end - (double)o->t_origin) / 1e9;
        if (b < o->t_from || a > o->t_to)
            return 0;
    }
    return 1;
}

/* ---- processes and tracks ---- */

void tl_name_process(struct nsc_timeline *t, uint32_t serial) {
    struct tl_file *f = &t->f;
    if (serial >= NSC_COMM_SERIAL_MAX)
        return; /* damaged: no comm has it; its events keep a numbered process */
    if (serial >= f->ncomm_named) {
        size_t n = serial + 64;
        if (n < f->ncomm_named * 2)
            n = f->ncomm_named * 2;
        uint32_t *p = realloc(f->comm_named, n * sizeof(*p));
        if (!p)
            return;
        memset(p + f->ncomm_named, 0, (n - f->ncomm_named) * sizeof(*p));
        f->comm_named = p;
        f->ncomm_named = n;
    }
    const struct nsc_comm_info *ci = nsc_decoder_comm(f->dec, serial);
    uint32_t want = ci ? (uint32_t)ci->rank + 2u : 1; /* re-name once the rank is known */
    if (f->comm_named[serial] == want)
        return;
    f->comm_named[serial] = want;
    char name[256];
    const struct nsc_session *s = nsc_dec_session(f->dec);
    if (serial == NSC_PY_SERIAL) {
        snprintf(name, sizeof(name), "%s pid %u python", s->host, s->pid);
        ci = NULL;
    } else if (ci) {
        char rank[16];
        if (ci->rank >= 0)
            snprintf(rank, sizeof(rank), "%d", ci->rank);
        else
            snprintf(rank, sizeof(rank), "?");
        snprintf(name, sizeof(name), "%s pid %u rank %s/%d comm %s%s%016" PRIx64, s->host, s->pid,
                 rank, ci->nranks, ci->name, ci->name[0] ? " " : "", ci->comm_id);
    } else {
        snprintf(name, sizeof(name), "%s pid %u comm #%u", s->host, s->pid, serial);
    }
    struct nsc_tev e = {.k = NSC_TEV_PROCESS, .pid = tl_out_pid(f->index, serial), .name = name,
                        .sort = (uint64_t)f->index * 100000 +
                                (ci && ci->rank >= 0 ? (uint64_t)ci->rank : 99999) + 1};
    tl_out(t, &e);
}

void nsc_timeline_comm(struct nsc_timeline *t, uint32_t serial) { tl_name_process(t, serial); }

static const char *role_of(const struct tl_file *f, unsigned etype) {
    switch (etype) {
    case NSC_ET_KERNEL_CH:
    case NSC_ET_KERNEL_PHASE:
        /* NCCL 2.31 (API v7) polls GPU counters on a profiler thread per device */
        if (nsc_dec_session(f->dec)->api_version >= 7)
            return "profiler thread";
        return "proxy thread";
    case NSC_ET_PROXY_OP:
    case NSC_ET_PROXY_STEP:
    case NSC_ET_PROXY_CTRL:
        return "proxy thread";
    case NSC_ET_NET_PLUGIN:
        return "network thread";
    default:
        return "application thread";
    }
}

static struct track *track_of(struct nsc_timeline *t, uint32_t thread, uint32_t serial,
                              unsigned etype) {
    struct tl_file *f = &t->f;
    const struct nsc_decoder *d = f->dec;
    uint64_t key = ((uint64_t)thread << 32) | serial;
    struct track **slot = nsc_id_map_find(&f->tracks, key);
    struct track *k = slot ? *slot : NULL;
    int known;
    uint32_t tid = nsc_dec_tid(d, thread, &known);
    if (!known)
        tid = 1000000 + thread;
    if (!k) {
        k = calloc(1, sizeof(*k));
        if (!k || !(slot = nsc_id_map_insert(&f->tracks, key, NULL))) {
            free(k);
            return NULL;
        }
        k->key = key;
        *slot = k;
    }
    if (!k->named || k->tid != tid) {
        k->tid = tid;
        k->named = 1;
        tl_name_process(t, serial);
        char name[96];
        const char *os = nsc_dec_thread_name(d, thread);
        snprintf(name, sizeof(name), "%s %u%s%s%s",
                 serial == NSC_PY_SERIAL ? "python thread" : role_of(f, etype), tid,
                 os[0] ? " (" : "", os, os[0] ? ")" : "");
        struct nsc_tev e = {.k = NSC_TEV_THREAD, .pid = tl_out_pid(f->index, serial), .tid = tid,
                            .name = name};
        tl_out(t, &e);
    }
    return k;
}

static const char *event_name(const struct nsc_decoder *dec, const struct nsc_rec *r) {
    const union nsc_desc *d = &r->u.start.d;
    const char *s = NULL;
    switch (r->h.etype) {
    case NSC_ET_COLL_API: s = nsc_decoder_str(dec, d->coll_api.func); break;
    case NSC_ET_P2P_API: s = nsc_decoder_str(dec, d->p2p_api.func); break;
    case NSC_ET_COLL: s = nsc_decoder_str(dec, d->coll.func); break;
    case NSC_ET_P2P: s = nsc_decoder_str(dec, d->p2p.func); break;
    case NSC_ET_CE_COLL: s = nsc_decoder_str(dec, d->ce_coll.func); break;
    case NSC_ET_KERNEL_PHASE: s = nsc_decoder_str(dec, d->kernel_phase.name); break;
    default: break;
    }
    return s ? s : nsc_etype_name(r->h.etype);
}

/* ---- GPU-side tracks ---- */

/* A view is 4.5 KB: made for the serials that have operations, so a
 * damaged serial far out costs a pointer array, not a view per serial. */
struct rank_view *tl_view_of(struct tl_file *f, uint32_t serial) {
    if (serial >= NSC_COMM_SERIAL_MAX)
        return NULL;
    if (serial >= f->nviews) {
        uint32_t n = serial + 8;
        if (n < f->nviews * 2)
            n = f->nviews * 2;
        struct rank_view **v = realloc(f->views, n * sizeof(*v));
        if (!v)
            return NULL;
        memset(v + f->nviews, 0, (n - f->nviews) * sizeof(*v));
        f->views = v;
        f->nviews = n;
    }
    if (!f->views[serial])
        f->views[serial] = calloc(1, sizeof(struct rank_view));
    return f->views[serial];
}

void tl_name_thread(struct nsc_timeline *t, uint32_t serial, uint32_t tid, const char *name) {
    /* GPU tracks sort first: lanes, then channels */
    struct nsc_tev e = {.k = NSC_TEV_THREAD, .pid = tl_out_pid(t->f.index, serial), .tid = tid,
                        .name = name, .sort = tid - NSC_TID_GPU_LANE + 1};
    tl_out(t, &e);
}

/* The arguments every drawing of an operation starts with (both layouts):
 * its id, what NCCL chose for it, its size. Returns the argument list to
 * add to. */
struct nsc_args *tl_op_args(struct nsc_timeline *t, const struct nsc_op_done *op) {
    struct nsc_args *a = tl_args(t);
    nsc_arg_u(a, "id", tl_out_id(t, t->f.index, op->id));
    if (!op->is_p2p) {
        nsc_arg_u(a, "seqNumber", op->seq);
        if (op->algo)
            nsc_arg_s(a, "algo", op->algo);
        if (op->proto)
            nsc_arg_s(a, "proto", op->proto);
    } else {
        nsc_arg_i(a, "peer", op->peer);
    }
    nsc_arg_u(a, "nChannels", (uint64_t)op->nch);
    nsc_arg_u(a, "count", op->count);
    if (op->dtype)
        nsc_arg_s(a, "datatype", op->dtype);
    return a;
}

/* What completed an operation (both layouts' "completion" argument); with
 * KernelCh sampled, one that was not asked for has none of its own. */
const char *tl_op_completion(const struct nsc_op_done *op) {
    return op->end_ns ? (op->kernel_channels_done ? "last KernelCh" : "last ProxyOp")
           : op->inferred ? "not sampled: before a later operation of its comm that completed"
           : nsc_op_unsampled(op) ? "not sampled (NCCLSCOPE_KERNEL_SAMPLE): unknown"
                                  : "unknown (no KernelCh/ProxyOp recorded): enqueue only";
}

/* A collective's (or p2p's) enqueue-to-completion slice on its rank's GPU
 * lanes, with what NCCL chose for it. */
void nsc_timeline_op(struct nsc_timeline *t, const struct nsc_op_done *op) {
    struct tl_file *f = &t->f;
    struct rank_view *v = tl_view_of(f, op->comm_serial);
    if (!v)
        return;
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    if (!end || end < op->start_ns)
        return;
    tl_rotate(t);
    if (!keep(t, op->comm_serial, op->is_p2p ? NSC_ET_P2P : NSC_ET_COLL, op->start_ns, end))
        return;
    if (!t->o.detail) {
        tl_inflight_add(t, op->comm_serial, v, op->start_ns, end,
                        op->count * (uint64_t)nsc_dtype_size(op->dtype));
        tl_ops_op(t, op);
        return;
    }
    int lane = -1;
    for (int l = 0; l < NSC_GPU_LANES; l++)
        if (v->lane_end[l] <= op->start_ns) {
            lane = l;
            break;
        }
    uint32_t tid = NSC_TID_GPU_LANE + (uint32_t)(lane >= 0 ? lane : 0);
    if (!(v->lanes_named & (1ull << (tid - NSC_TID_GPU_LANE)))) {
        v->lanes_named |= 1ull << (tid - NSC_TID_GPU_LANE);
        char name[96];
        snprintf(name, sizeof(name), "GPU: NCCL operations, enqueue to completion (lane %u)",
                 tid - NSC_TID_GPU_LANE);
        tl_name_process(t, op->comm_serial);
        tl_name_thread(t, op->comm_serial, tid, name);
    }
    if (lane >= 0)
        v->lane_end[lane] = end;
    else
        /* Reported after later operations took every lane over its time
         * (it completed late): an async slice, which Perfetto stacks on its
         * own row, instead of a slice overlapping another on a lane. */
        f->n.ops_async++;
    struct nsc_args *a = tl_op_args(t, op);
    nsc_arg_s(a, "completion", tl_op_completion(op));
    nsc_arg_u(a, "children", op->children);
    const struct nsc_gpu_clock *g = tl_gpu_clock(f, op->comm_serial);
    if (g && op->gpu_start && op->gpu_end > op->gpu_start) {
        /* The check of the GPU clock mapping against the CPU's: a kernel
         * cannot start before the host enqueued it. */
        uint64_t gpu_start = nsc_shift_ns(op->gpu_start, g->offset_ns);
        if ((int64_t)(gpu_start - op->start_ns) < 0)
            f->n.gpu_before_enqueue++;
        nsc_arg_us(a, "gpu_us", op->gpu_end - op->gpu_start);
        nsc_arg_us(a, "gpu_start_ts_us", gpu_start);
    }
    struct nsc_tev e = {.k = lane >= 0 ? NSC_TEV_SLICE : NSC_TEV_ASYNC, .cat = "completion",
                        .name = op->func ? op->func : "?", .id = tl_out_id(t, f->index, op->id),
                        .pid = tl_out_pid(f->index, op->comm_serial), .tid = tid,
                        .ts = op->start_ns, .dur = end - op->start_ns, .args = a};
    tl_out(t, &e);
    f->n.ops_drawn++;
    uint64_t bytes = op->count * (uint64_t)nsc_dtype_size(op->dtype);
    tl_inflight_add(t, op->comm_serial, v, op->start_ns, end, bytes);
    if (lane < 0 || op->is_p2p || !t->o.flows)
        return;
    /* One chain per collective across ranks, in the order the files are
     * read: following it shows who entered late. */
    tl_chain(t, op, tl_out_pid(f->index, op->comm_serial), tid, op->start_ns);
}

/* The GPU track of channel ch of comm `serial`, named when first used. */
static uint32_t gpu_channel_track(struct nsc_timeline *t, uint32_t serial, unsigned ch) {
    struct rank_view *v = tl_view_of(&t->f, serial);
    uint32_t tid = NSC_TID_GPU_CHANNEL + ch;
    if (v && ch < 64 && !(v->channels_named & (1ull << ch))) {
        v->channels_named |= 1ull << ch;
        char name[64];
        snprintf(name, sizeof(name), "GPU channel %u (KernelCh, %%globaltimer)", ch);
        tl_name_thread(t, serial, tid, name);
    }
    return tid;
}

/* One KernelPhase's GPU interval on its channel's GPU track. [ps, pe] is
 * its KernelCh's GPU interval when that was drawn (else 0, 0): a phase
 * reaching outside it is clamped into it, so it nests under it on the track
 * (its args keep the recorded timers and say "clamped"). */
static void gpu_phase_out(struct nsc_timeline *t, const struct gpu_phase *p, uint64_t ps,
                          uint64_t pe) {
    struct tl_file *f = &t->f;
    const struct nsc_gpu_clock *g = tl_gpu_clock(f, p->serial);
    if (!g)
        return;
    uint64_t s = p->gs, e = p->ge;
    int clamped = 0;
    if (pe > ps && e > s && (s < ps || e > pe) && s < pe && e > ps) {
        s = s < ps ? ps : s;
        e = e > pe ? pe : e;
        clamped = 1;
    }
    uint32_t tid = gpu_channel_track(t, p->serial, p->ch);
    struct nsc_args *a = tl_args(t);
    nsc_arg_u(a, "id", tl_out_id(t, f->index, p->id));
    if (p->parent)
        nsc_arg_u(a, "parent", tl_out_id(t, f->index, p->parent));
    nsc_arg_s(a, "phaseName", nsc_decoder_str(f->dec, p->name));
    nsc_arg_u(a, "phaseId", p->phase);
    nsc_arg_u(a, "channel", p->ch);
    nsc_arg_u(a, "pTimer_start", p->gs);
    nsc_arg_u(a, "pTimer_stop", p->ge);
    if (clamped)
        nsc_arg_bool(a, "clamped", 1);
    const char *nm = nsc_decoder_str(f->dec, p->name);
    struct nsc_tev ev = {.k = NSC_TEV_SLICE, .cat = "KernelPhase", .name = nm ? nm : "KernelPhase",
                         .pid = tl_out_pid(f->index, p->serial), .tid = tid,
                         .ts = (uint64_t)((int64_t)s + g->offset_ns), .dur = e - s, .args = a};
    if (p->ge <= p->gs) {
        f->n.gpu_impossible++;
        ev.k = NSC_TEV_INSTANT;
        ev.scope = 't';
        ev.name = "impossible GPU interval";
    }
    tl_out(t, &ev);
}

/* Draws the KernelPhases waiting for KernelCh `parent` (every one waiting
 * for parent 0), clamped into [ps, pe], earliest first. The protobuf output
 * needs that order: Perfetto orders a track's events by time, keeping the
 * written order for equal times, and an END closes the slice opened last;
 * so a KernelCh is written before its phases (a phase starting at its GPU
 * start still nests), and a phase before the next (one ending where the
 * next begins closes first). */
static void gpu_phases_draw(struct nsc_timeline *t, uint64_t parent, uint64_t ps, uint64_t pe) {
    struct tl_file *f = &t->f;
    for (;;) {
        uint32_t k = UINT32_MAX;
        for (uint32_t i = 0; i < f->nphases; i++)
            if ((!parent || f->phases[i].parent == parent) &&
                (k == UINT32_MAX || f->phases[i].gs < f->phases[k].gs))
                k = i;
        if (k == UINT32_MAX)
            return;
        struct gpu_phase p = f->phases[k];
        memmove(&f->phases[k], &f->phases[k + 1], (f->nphases - k - 1) * sizeof(p));
        f->nphases--;
        gpu_phase_out(t, &p, ps, pe);
    }
}

/* A KernelPhase's GPU interval: it waits for its KernelCh to be drawn when
 * that one is still open (NCCL 2.31 stops the phases first), else it is
 * drawn now. */
static void gpu_phase_slice(struct nsc_timeline *t, const struct nsc_event *e) {
    struct tl_file *f = &t->f;
    const struct nsc_rec *r = &e->start;
    uint64_t ge = nsc_event_gpu_end(e);
    if (!r->u.start.d.kernel_phase.ptimer || !ge)
        return; /* not stopped on the GPU: nothing to place */
    struct gpu_phase p = {e->id, r->u.start.parent, r->u.start.d.kernel_phase.ptimer, ge,
                          r->h.aux, r->u.start.d.kernel_phase.name,
                          r->u.start.d.kernel_phase.ch, r->u.start.d.kernel_phase.phase};
    if (!p.parent || !nsc_events_find(f->open, p.parent)) {
        gpu_phase_out(t, &p, 0, 0);
        return;
    }
    if (f->nphases == f->phases_cap && f->phases_cap < GPU_PHASES_MAX) {
        uint32_t n = f->phases_cap ? f->phases_cap * 2 : 64;
        struct gpu_phase *q = realloc(f->phases, n * sizeof(*q));
        if (q) {
            f->phases = q;
            f->phases_cap = n;
        }
    }
    if (f->nphases == f->phases_cap)
        gpu_phase_out(t, &p, 0, 0); /* cannot wait: drawn unclamped */
    else
        f->phases[f->nphases++] = p;
}

/* A KernelCh's GPU interval on its channel's GPU track, in host time. */
static void gpu_channel_slice(struct nsc_timeline *t, const struct nsc_event *e) {
    struct tl_file *f = &t->f;
    const struct nsc_rec *r = &e->start;
    const struct nsc_gpu_clock *g = tl_gpu_clock(f, r->h.aux);
    if (!g)
        return;
    uint64_t gs = r->u.start.d.kernel_ch.ptimer, ge = nsc_event_gpu_end(e);
    if (!gs || !ge)
        return; /* not stopped on the GPU yet (unfinished): nothing to place */
    unsigned ch = r->u.start.d.kernel_ch.ch;
    uint32_t tid = gpu_channel_track(t, r->h.aux, ch);
    int64_t off = g->offset_ns;
    struct nsc_args *a = tl_args(t);
    nsc_arg_u(a, "id", tl_out_id(t, f->index, e->id));
    nsc_arg_u(a, "parent", tl_out_id(t, f->index, r->u.start.parent));
    nsc_arg_u(a, "pTimer_start", gs);
    nsc_arg_u(a, "pTimer_stop", ge);
    char name[32];
    snprintf(name, sizeof(name), "ch %u", ch);
    struct nsc_tev ev = {.k = NSC_TEV_SLICE, .cat = "KernelCh", .name = name,
                         .pid = tl_out_pid(f->index, r->h.aux), .tid = tid,
                         .ts = nsc_shift_ns(gs, off), .dur = ge - gs, .args = a};
    if (ge <= gs) {
        /* Impossible: flagged where it happened instead of drawn. */
        f->n.gpu_impossible++;
        ev.k = NSC_TEV_INSTANT;
        ev.scope = 't';
        ev.name = "impossible GPU interval";
    }
    tl_out(t, &ev);
    if (f->nphases)
        gpu_phases_draw(t, e->id, gs, ge);
}

/* ---- events ---- */

/* What the default layout draws on the threads' tracks: the host API and
 * what NCCL enqueues from it. GPU-side events are on the operations track
 * (ops_track.c); the proxy, network and profiler threads' events are
 * --detail's. */
static int host_drawn(const struct nsc_timeline *t, unsigned etype) {
    switch (etype) {
    case NSC_ET_PROXY_OP:
    case NSC_ET_PROXY_STEP:
    case NSC_ET_PROXY_CTRL:
    case NSC_ET_KERNEL_CH:
    case NSC_ET_NET_PLUGIN:
    case NSC_ET_KERNEL_PHASE:
        return t->o.detail;
    default:
        return 1;
    }
}

void nsc_timeline_started(struct nsc_timeline *t, struct nsc_event *e) {
    if (!host_drawn(t, e->start.h.etype)) {
        e->track = NULL;
        e->prev = e->next = NULL;
        return;
    }
    struct track *k = track_of(t, e->start_thread, e->start.h.aux, e->start.h.etype);
    e->track = k;
    if (k) {
        e->prev = k->tail;
        e->next = NULL;
        if (k->tail)
            k->tail->next = e;
        else
            k->head = e;
        k->tail = e;
    }
}

void nsc_timeline_event(struct nsc_timeline *t, struct nsc_event *e, int unfinished,
                        uint64_t last_ns) {
    struct tl_file *f = &t->f;
    const struct nsc_rec *r = &e->start;
    struct track *k = e->track;
    uint64_t end = unfinished ? last_ns : e->stop_ns;
    if (end < e->start_ns)
        end = e->start_ns;
    /* Nests on its thread's track only if nothing started after it is still
     * open and it stopped on the thread that started it; otherwise it is an
     * async slice (Perfetto draws those on their own rows). */
    int async = e->next != NULL || (!unfinished && e->stop_thread != e->start_thread);
    uint64_t pid = tl_out_pid(f->index, r->h.aux);
    const char *name = event_name(f->dec, r);
    const char *cat = nsc_etype_name(r->h.etype);
    uint64_t oid = tl_out_id(t, f->index, e->id);
    tl_rotate(t);
    int kept = keep(t, r->h.aux, r->h.etype, e->start_ns, end);
    if (!kept)
        t->tot.filtered++;
    if (!host_drawn(t, r->h.etype)) {
        if (r->h.etype == NSC_ET_KERNEL_CH && !unfinished)
            tl_ops_kernel_ch(t, e, kept);
        kept = 0;
    }
    if (kept && k && !k->named) /* a new part began after this event started */
        track_of(t, (uint32_t)(k->key >> 32), r->h.aux, r->h.etype);
    if (kept) {
        struct nsc_args *a = tl_args(t);
        tl_event_args(t, a, e);
        if (unfinished)
            nsc_arg_bool(a, "unfinished", 1);
        struct nsc_tev ev = {.k = async ? NSC_TEV_ASYNC : NSC_TEV_SLICE, .cat = cat, .name = name,
                             .id = oid, .pid = pid, .tid = k ? k->tid : 0, .ts = e->start_ns,
                             .dur = end - e->start_ns, .args = a};
        tl_out(t, &ev);
        if (r->h.etype == NSC_ET_KERNEL_CH && !unfinished)
            gpu_channel_slice(t, e);
        else if (r->h.etype == NSC_ET_KERNEL_PHASE && !unfinished)
            gpu_phase_slice(t, e);
        /* Parent -> child arrow. The parent is still open (it stops after its
         * children) or was written recently. Both ends bind to the slices that
         * start at those times on those threads (X slices; Perfetto does not
         * bind flows to async slices, so those get none). */
        if (t->o.flows && !async && k) {
            uint64_t parent = r->u.start.parent;
            struct placed from = {0, 0, 0, 0};
            if (parent && !(r->h.flags & NSC_RF_FOREIGN_PARENT)) {
                struct nsc_event *pe = nsc_events_find(f->open, parent);
                struct placed *rp = tl_recent_slot(t, parent);
                if (pe && pe->has_start && pe->track &&
                    (!t->o.event_mask || ((t->o.event_mask >> pe->start.h.etype) & 1))) {
                    from = (struct placed){1, tl_out_pid(f->index, pe->start.h.aux),
                                           ((struct track *)pe->track)->tid, pe->start_ns};
                } else if (rp->key == parent + 1) {
                    from = *rp;
                }
            }
            if (from.key)
                tl_flow(t, oid, nsc_etype_name(r->h.etype), &from, pid, k->tid, e->start_ns);
            struct placed *me = tl_recent_slot(t, e->id);
            *me = (struct placed){e->id + 1, pid, k->tid, e->start_ns};
        }
    }
    if (r->h.etype == NSC_ET_KERNEL_CH && f->nphases && t->o.detail)
        gpu_phases_draw(t, e->id, 0, 0); /* its own GPU slice was not drawn */
    t->tot.events++;
    if (unfinished)
        t->tot.unfinished++;
    if (k) {
        if (e->prev)
            e->prev->next = e->next;
        else
            k->head = e->next;
        if (e->next)
            e->next->prev = e->prev;
        else
            k->tail = e->prev;
    }
    nsc_events_remove(f->open, e);
}

void nsc_timeline_marker(struct nsc_timeline *t, uint32_t thread, uint32_t serial, uint64_t ts,
                         const char *name) {
    tl_rotate(t);
    if (!keep(t, serial, -1, ts, ts))
        return;
    struct track *k = track_of(t, thread, serial, NSC_ET_GROUP_API);
    struct nsc_tev e = {.k = NSC_TEV_INSTANT, .scope = 'p', .name = name,
                        .pid = tl_out_pid(t->f.index, serial), .tid = k ? k->tid : 0, .ts = ts};
    tl_out(t, &e);
}

/* A Python call (python_view.h) on its thread's track: in the file's
 * python process, or around the NCCL calls it made in a comm's process. */
void nsc_timeline_py_slice(struct nsc_timeline *t, const struct nsc_py_slice *s) {
    tl_rotate(t);
    if (!keep(t, s->serial, -1, s->start_ns, s->end_ns))
        return;
    struct track *k = track_of(t, s->thread, s->serial, NSC_ET_COLL_API);
    if (!k)
        return;
    /* "file:line function": the function names the slice; C: the whole name */
    const char *sp = s->c_call ? NULL : strrchr(s->location, ' ');
    struct nsc_args *a = tl_args(t);
    nsc_arg_s(a, "location", s->location);
    if (s->by_exception)
        nsc_arg_bool(a, "exception", 1);
    if (s->unfinished)
        nsc_arg_bool(a, "unfinished", 1);
    struct nsc_tev e = {.k = NSC_TEV_SLICE, .cat = s->c_call ? "python.c" : "python",
                        .name = sp ? sp + 1 : s->location, .pid = tl_out_pid(t->f.index, s->serial),
                        .tid = k->tid, .ts = s->start_ns, .dur = s->end_ns - s->start_ns,
                        .args = a};
    tl_out(t, &e);
}

void nsc_timeline_ops_done(struct nsc_timeline *t) {
    tl_ops_flush(t);
    tl_inflight_drain(t);
    memset(t->recent, 0, PLACED_CAP * sizeof(*t->recent));
}

/* Drop and loss counters as counter tracks and an instant with the details. */
static void file_summary(struct nsc_timeline *t, uint64_t last_ns) {
    struct tl_file *f = &t->f;
    const struct nsc_decoder *d = f->dec;
    const struct nsc_losses *l = nsc_dec_losses(d);
    const struct nsc_stats_header *h = nsc_dec_stats(d);
    const struct nsc_session *s = nsc_dec_session(d);
    uint64_t drops = l->dropped;
    uint64_t pid = tl_out_pid(f->index, 0);
    char name[160];
    snprintf(name, sizeof(name), "ncclscope %s pid %u", s->host, s->pid);
    struct nsc_tev e = {.k = NSC_TEV_PROCESS, .pid = pid, .name = name};
    tl_out(t, &e);
    struct nsc_tev cnt = {.k = NSC_TEV_COUNTER, .name = "ncclscope dropped records",
                          .ckey = "dropped", .pid = pid, .has_tid = 1, .ts = last_ns,
                          .cval = (int64_t)drops};
    tl_out(t, &cnt);
    if (l->total != drops) {
        cnt.name = "ncclscope lost records";
        cnt.ckey = "lost";
        cnt.cval = (int64_t)l->total;
        tl_out(t, &cnt);
    }
    if (l->total != drops)
        snprintf(name, sizeof(name),
                 "ncclscope: %llu records lost (%llu dropped, %llu to write errors, %llu at exit)",
                 (unsigned long long)l->total, (unsigned long long)drops,
                 (unsigned long long)l->write, (unsigned long long)l->exit);
    else
        snprintf(name, sizeof(name), "ncclscope: %llu records dropped", (unsigned long long)drops);
    struct nsc_args *a = tl_args(t);
    nsc_arg_u(a, "drops_no_thread", h->drops_no_thread);
    nsc_arg_u(a, "invalid_context", h->invalid_context);
    nsc_arg_u(a, "invalid_handle", h->invalid_handle);
    tl_losses_args(a, l, h, nsc_dec_unnamed(d));
    struct nsc_tev in = {.k = NSC_TEV_INSTANT, .scope = 'p', .name = name, .pid = pid,
                         .ts = last_ns, .args = a};
    tl_out(t, &in);
}

void nsc_timeline_file_counts(const struct nsc_timeline *t, struct nsc_timeline_counts *out) {
    *out = t->f.n;
}

void nsc_timeline_gpu_flush(struct nsc_timeline *t) {
    gpu_phases_draw(t, 0, 0, 0); /* phases whose KernelCh never started */
}

void nsc_timeline_file_end(struct nsc_timeline *t, uint64_t last_ns,
                           struct nsc_timeline_counts *out) {
    file_summary(t, last_ns);
    *out = t->f.n;
}
