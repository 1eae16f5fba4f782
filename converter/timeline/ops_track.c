// SPDX-License-Identifier: Apache-2.0
/*
 * ops_track.c - the default layout's GPU track of a rank: its operations
 * (collectives and p2p) at their GPU time, each with channels nested under
 * it, on one track (timeline.h).
 *
 * An operation is drawn from its first KernelCh's GPU start to its last
 * KernelCh's GPU end (%globaltimer, mapped onto the host clock by the
 * file's GPU clock offset). Without GPU timers (KernelCh not recorded, the
 * default event mask) its GPU time is not known: it is drawn from when it
 * could start on the GPU, its enqueue or the completion of the operation
 * before it on the track, whichever is later, to its completion (category
 * "estimated", argument "timing" says so). Operations of one stream run one
 * after the other, so one track holds them; an operation that overlaps the
 * last one on a track (a p2p group's Send and Recv run in one kernel) goes
 * to the next track, NSC_OPS_LANES at most, and past them it is an async
 * slice (counted, as --detail's lanes do).
 *
 * Channels: a collective's channels run at the same time, so they cannot all
 * nest under it on one track (slices on a track nest or follow each other).
 * Under the operation are the channels that ran one after the other, ending
 * with the last one to finish, which holds the operation's end: the channel
 * ending last, then the channel ending last among those that ended before
 * it started, and so on. The operation's arguments say how many channels ran
 * and how far apart their starts and ends were; every channel on its own
 * track is --detail's layout.
 *
 * Order: records reach the file in drain order, so an operation's KernelCh
 * may come before its report (coll_track.h) or just after it (the last
 * KernelCh's STOP completes the operation, and the timeline sees that
 * KernelCh after the report), and operations issued from several threads
 * are reported out of their order. An operation waits here until all the
 * KernelCh its tracker counted have come; then, among the last READY_WINDOW
 * operations ready, the earliest is written first, so that the tracks fill
 * in time order and an operation reported late does not take a track of
 * its own. It is written with its channels, the operation first: Perfetto
 * orders a track's events by time, keeping the written order for equal
 * times, so a channel starting at its operation's start still nests under
 * it.
 */
#include "timeline_int.h"

#include <stdlib.h>
#include <string.h>

#include "event_types.h"

/* Operations waiting for their channels, at most: past it an operation is
 * drawn with the channels it has, and a channel of an operation not yet
 * reported is not kept (counted in kernelch_not_drawn). */
#define PEND_MAX (1u << 16)
#define READY_WINDOW 4096

struct waiting {
    uint64_t start, id;
};

struct tl_ops {
    struct nsc_id_map pend;   /* op id -> struct pend_op */
    struct waiting *heap;     /* ready operations, earliest start on top */
    uint32_t nheap, capheap;
};

struct pend_ch {
    uint64_t id, gs, ge; /* GPU interval, GPU clock */
    uint8_t ch, drawable; /* drawable: passed the filters */
};

struct pend_op {
    int have_op, ready;
    struct nsc_op_done op;  /* strings below; no open children */
    char func[40], dtype[24], algo[24], proto[24];
    uint32_t nk, capk;
    struct pend_ch *k;
};

static void copy_str(char *dst, size_t n, const char **p) {
    if (*p) {
        snprintf(dst, n, "%s", *p);
        *p = dst;
    }
}

/* The strings of a waiting operation point into the entry, which the map
 * may move: set again before each use. */
static void repoint(struct pend_op *q) {
    q->op.func = q->op.func ? q->func : NULL;
    q->op.dtype = q->op.dtype ? q->dtype : NULL;
    q->op.algo = q->op.algo ? q->algo : NULL;
    q->op.proto = q->op.proto ? q->proto : NULL;
}

static struct pend_op *pend_of(struct tl_file *f, uint64_t id, int create) {
    if (!f->ops)
        return NULL;
    struct pend_op *q = nsc_id_map_find(&f->ops->pend, id);
    if (q || !create || nsc_id_map_count(&f->ops->pend) >= PEND_MAX)
        return q;
    q = nsc_id_map_insert(&f->ops->pend, id, NULL);
    if (q)
        memset(q, 0, sizeof(*q));
    return q;
}

static void lane_name(struct nsc_timeline *t, uint32_t serial, struct rank_view *v, int lane) {
    if (v->lanes_named & (1ull << lane))
        return;
    v->lanes_named |= 1ull << lane;
    char name[96];
    if (lane == 0)
        snprintf(name, sizeof(name), "GPU: NCCL operations");
    else
        snprintf(name, sizeof(name), "GPU: NCCL operations (overlapping, %d)", lane + 1);
    tl_name_process(t, serial);
    tl_name_thread(t, serial, NSC_TID_GPU_LANE + (uint32_t)lane, name);
}

static int by_end_desc(const void *a, const void *b) {
    const struct pend_ch *x = a, *y = b;
    if (x->ge != y->ge)
        return x->ge > y->ge ? -1 : 1;
    return x->gs < y->gs ? -1 : x->gs > y->gs;
}

/* The channels drawn under the operation (the rule at the top), earliest
 * first: their indices into q->k, sorted by end here. */
static uint32_t chain_of(struct pend_op *q, uint64_t s, uint64_t e, uint32_t *sel) {
    qsort(q->k, q->nk, sizeof(*q->k), by_end_desc);
    uint32_t n = 0;
    uint64_t before = e;
    for (uint32_t i = 0; i < q->nk; i++) {
        const struct pend_ch *c = &q->k[i];
        if (!c->drawable || c->ge <= c->gs || c->gs < s || c->ge > before)
            continue;
        sel[n++] = i;
        before = c->gs;
    }
    for (uint32_t i = 0; i < n / 2; i++) { /* end-first -> start-first */
        uint32_t x = sel[i];
        sel[i] = sel[n - 1 - i];
        sel[n - 1 - i] = x;
    }
    return n;
}

static void channel_out(struct nsc_timeline *t, const struct pend_op *q, const struct pend_ch *c,
                        int64_t off, uint64_t pid, uint32_t tid) {
    struct tl_file *f = &t->f;
    struct nsc_args *a = tl_args(t);
    nsc_arg_u(a, "id", tl_out_id(t, f->index, c->id));
    nsc_arg_u(a, "parent", tl_out_id(t, f->index, q->op.id));
    nsc_arg_u(a, "channel", c->ch);
    nsc_arg_u(a, "pTimer_start", c->gs);
    nsc_arg_u(a, "pTimer_stop", c->ge);
    nsc_arg_u(a, "channels_recorded", q->nk);
    char name[32];
    snprintf(name, sizeof(name), "ch %u", c->ch);
    struct nsc_tev ev = {.k = NSC_TEV_SLICE, .cat = "KernelCh", .name = name, .pid = pid,
                         .tid = tid, .ts = nsc_shift_ns(c->gs, off), .dur = c->ge - c->gs,
                         .args = a};
    tl_out(t, &ev);
}

/* Writes one operation and its channels. */
static void draw_entry(struct nsc_timeline *t, struct pend_op *q) {
    struct tl_file *f = &t->f;
    repoint(q);
    const struct nsc_op_done *op = &q->op;
    struct rank_view *v = tl_view_of(f, op->comm_serial);
    if (!v)
        return;
    tl_rotate(t);
    const struct nsc_gpu_clock *g = tl_gpu_clock(f, op->comm_serial);
    int measured = g && op->gpu_start && op->gpu_end > op->gpu_start;
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    uint64_t s, e;
    int lane = -1;
    if (measured) {
        s = nsc_shift_ns(op->gpu_start, g->offset_ns);
        e = s + (op->gpu_end - op->gpu_start);
        for (int l = 0; l < NSC_OPS_LANES && lane < 0; l++)
            if (v->lane_end[l] <= s)
                lane = l;
    } else if (op->end_ns) {
        s = op->start_ns;
        e = end;
        /* it could start on the GPU when the one before it on the track
         * completed: the first track whose last operation completed before
         * this one did */
        for (int l = 0; l < NSC_OPS_LANES && lane < 0; l++)
            if (v->lane_end[l] < e || v->lane_end[l] <= s)
                lane = l;
        if (lane >= 0 && v->lane_end[lane] > s)
            s = v->lane_end[lane];
        f->n.ops_estimated++;
    } else {
        /* no completion recorded: its enqueue only */
        s = op->start_ns;
        e = end;
        for (int l = 0; l < NSC_OPS_LANES && lane < 0; l++)
            if (v->lane_end[l] <= s)
                lane = l;
    }
    uint64_t pid = tl_out_pid(f->index, op->comm_serial);
    uint32_t tid = NSC_TID_GPU_LANE + (uint32_t)(lane >= 0 ? lane : 0);
    lane_name(t, op->comm_serial, v, lane >= 0 ? lane : 0);
    if (lane >= 0) {
        v->lane_end[lane] = e;
        if ((uint64_t)lane + 1 > f->n.ops_lanes)
            f->n.ops_lanes = (uint64_t)lane + 1;
    } else {
        f->n.ops_async++; /* an async slice, on a row of its own: nothing nests in it */
    }
    uint32_t sel_fixed[64], *sel = q->nk <= 64 ? sel_fixed : malloc(q->nk * sizeof(*sel));
    uint32_t nsel = 0;
    if (measured && lane >= 0 && q->nk && sel)
        nsel = chain_of(q, op->gpu_start, op->gpu_end, sel);
    struct nsc_args *a = tl_op_args(t, op);
    const char *cat = measured ? "GPU" : op->end_ns ? "estimated" : "enqueue";
    /* KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): this one was not asked for */
    int unsampled = nsc_op_unsampled(op);
    nsc_arg_s(a, "timing",
              measured ? "GPU: first KernelCh start to last KernelCh end (%globaltimer)"
              : !op->end_ns && unsampled
                  ? "host: enqueue only (KernelCh not sampled for this operation: "
                    "NCCLSCOPE_KERNEL_SAMPLE)"
              : !op->end_ns ? "host: enqueue only (no completion recorded)"
              : lane < 0 ? "host: enqueue to completion (no GPU timers)"
                         : "estimated: from enqueue or the previous operation's completion, "
                           "whichever is later, to completion (no GPU timers)");
    nsc_arg_s(a, "completion", tl_op_completion(op));
    nsc_arg_us(a, "enqueue_ts_us", op->start_ns);
    if (end >= op->start_ns)
        nsc_arg_us(a, "enqueue_to_completion_us", end - op->start_ns);
    if (measured) {
        if ((int64_t)(s - op->start_ns) < 0)
            f->n.gpu_before_enqueue++; /* a kernel cannot start before its enqueue */
        uint64_t first_end = UINT64_MAX, last_start = 0;
        uint32_t timed = 0;
        for (uint32_t i = 0; i < q->nk; i++) {
            if (!q->k[i].gs || q->k[i].ge <= q->k[i].gs)
                continue; /* no GPU interval, or an impossible one */
            timed++;
            if (q->k[i].ge < first_end)
                first_end = q->k[i].ge;
            if (q->k[i].gs > last_start)
                last_start = q->k[i].gs;
        }
        nsc_arg_u(a, "channels_recorded", q->nk);
        nsc_arg_u(a, "channels_nested", nsel);
        if (timed) {
            nsc_arg_us(a, "channel_start_spread_us",
                       last_start > op->gpu_start ? last_start - op->gpu_start : 0);
            nsc_arg_us(a, "channel_end_spread_us",
                       op->gpu_end > first_end ? op->gpu_end - first_end : 0);
        }
    }
    struct nsc_tev ev = {.k = lane >= 0 ? NSC_TEV_SLICE : NSC_TEV_ASYNC,
                         .cat = cat,
                         .name = op->func ? op->func : "?", .id = tl_out_id(t, f->index, op->id),
                         .pid = pid, .tid = tid, .ts = s, .dur = e - s, .args = a};
    tl_out(t, &ev);
    f->n.ops_drawn++;
    for (uint32_t i = 0; i < nsel; i++)
        channel_out(t, q, &q->k[sel[i]], g->offset_ns, pid, tid);
    if (lane >= 0 && t->o.flows) {
        /* enqueue -> GPU: from the host's Coll/P2p slice, when it nested */
        struct placed *rp = tl_recent_slot(t, op->id);
        if (rp->key == op->id + 1)
            tl_flow(t, tl_out_id(t, f->index, op->id) | (1ull << 61), "enqueue", rp, pid, tid, s);
        if (!op->is_p2p)
            tl_chain(t, op, pid, tid, s);
    }
    if (sel != sel_fixed)
        free(sel);
}

/* Writes a waiting operation and forgets it. */
static void draw(struct nsc_timeline *t, uint64_t id) {
    struct tl_file *f = &t->f;
    struct pend_op *q = pend_of(f, id, 0);
    if (!q)
        return;
    draw_entry(t, q);
    free(q->k);
    nsc_id_map_remove_value(&f->ops->pend, q);
}

static int before(const struct waiting *a, const struct waiting *b) {
    return a->start != b->start ? a->start < b->start : a->id < b->id;
}

static void heap_push(struct tl_ops *o, struct waiting w) {
    if (o->nheap == o->capheap) {
        uint32_t n = o->capheap ? o->capheap * 2 : 256;
        struct waiting *h = realloc(o->heap, n * sizeof(*h));
        if (!h)
            return; /* drawn at the flush, in its order there */
        o->heap = h;
        o->capheap = n;
    }
    uint32_t i = o->nheap++;
    o->heap[i] = w;
    while (i && before(&o->heap[i], &o->heap[(i - 1) / 2])) {
        struct waiting x = o->heap[i];
        o->heap[i] = o->heap[(i - 1) / 2];
        o->heap[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static uint64_t heap_pop(struct tl_ops *o) {
    uint64_t id = o->heap[0].id;
    o->heap[0] = o->heap[--o->nheap];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < o->nheap && before(&o->heap[l], &o->heap[m]))
            m = l;
        if (r < o->nheap && before(&o->heap[r], &o->heap[m]))
            m = r;
        if (m == i)
            break;
        struct waiting x = o->heap[i];
        o->heap[i] = o->heap[m];
        o->heap[m] = x;
        i = m;
    }
    return id;
}

/* Where the operation begins on the track, for the order of writing. */
static uint64_t start_of(const struct tl_file *f, const struct pend_op *q) {
    const struct nsc_gpu_clock *g = tl_gpu_clock(f, q->op.comm_serial);
    if (g && q->op.gpu_start && q->op.gpu_end > q->op.gpu_start)
        return nsc_shift_ns(q->op.gpu_start, g->offset_ns);
    return q->op.start_ns;
}

/* An operation has its channels: among the ready ones, the earliest is
 * written once more than READY_WINDOW wait. */
static void ready(struct nsc_timeline *t, struct pend_op *q, uint64_t id) {
    struct tl_ops *o = t->f.ops;
    q->ready = 1;
    heap_push(o, (struct waiting){start_of(&t->f, q), id});
    while (o->nheap > READY_WINDOW)
        draw(t, heap_pop(o));
}

void tl_ops_op(struct nsc_timeline *t, const struct nsc_op_done *op) {
    struct tl_file *f = &t->f;
    struct pend_op alone, *q = pend_of(f, op->id, 1);
    if (!q) { /* cannot wait (PEND_MAX, memory short): drawn without its channels */
        memset(&alone, 0, sizeof(alone));
        q = &alone;
    }
    if (q->have_op)
        return; /* reported twice: damaged input */
    q->have_op = 1;
    q->op = *op;
    q->op.open = NULL;
    q->op.nopen = 0;
    copy_str(q->func, sizeof(q->func), &q->op.func);
    copy_str(q->dtype, sizeof(q->dtype), &q->op.dtype);
    copy_str(q->algo, sizeof(q->algo), &q->op.algo);
    copy_str(q->proto, sizeof(q->proto), &q->op.proto);
    if (q == &alone)
        draw_entry(t, q);
    else if (q->nk >= op->kernel_channels_done)
        ready(t, q, op->id);
}

void tl_ops_kernel_ch(struct nsc_timeline *t, const struct nsc_event *e, int drawable) {
    struct tl_file *f = &t->f;
    const struct nsc_rec *r = &e->start;
    uint64_t parent = r->u.start.parent;
    if (!parent || (r->h.flags & NSC_RF_FOREIGN_PARENT))
        return;
    uint64_t gs = r->u.start.d.kernel_ch.ptimer, ge = nsc_event_gpu_end(e);
    const struct nsc_gpu_clock *g = tl_gpu_clock(f, r->h.aux);
    struct rank_view *v = tl_view_of(f, r->h.aux);
    if (gs && ge && ge <= gs && g && v) {
        /* Impossible: flagged where it happened (on the operations track,
         * an instant nests anywhere), and left out of its operation. */
        f->n.gpu_impossible++;
        if (drawable) {
            tl_rotate(t);
            lane_name(t, r->h.aux, v, 0);
            struct nsc_args *a = tl_args(t);
            nsc_arg_u(a, "id", tl_out_id(t, f->index, e->id));
            nsc_arg_u(a, "parent", tl_out_id(t, f->index, parent));
            nsc_arg_u(a, "pTimer_start", gs);
            nsc_arg_u(a, "pTimer_stop", ge);
            struct nsc_tev ev = {.k = NSC_TEV_INSTANT, .scope = 't', .cat = "KernelCh",
                                 .name = "impossible GPU interval",
                                 .pid = tl_out_pid(f->index, r->h.aux), .tid = NSC_TID_GPU_LANE,
                                 .ts = nsc_shift_ns(gs, g->offset_ns), .args = a};
            tl_out(t, &ev);
        }
    }
    struct pend_op *q = pend_of(f, parent, 1);
    if (!q) {
        f->n.kernelch_not_drawn++;
        return;
    }
    if (q->nk == q->capk) {
        uint32_t n = q->capk ? q->capk * 2 : 8;
        struct pend_ch *k = realloc(q->k, n * sizeof(*k));
        if (!k) {
            f->n.kernelch_not_drawn++;
            return;
        }
        q->k = k;
        q->capk = n;
    }
    q->k[q->nk++] = (struct pend_ch){e->id, gs, ge, r->u.start.d.kernel_ch.ch,
                                     (uint8_t)(drawable != 0)};
    if (q->have_op && !q->ready && q->nk >= q->op.kernel_channels_done)
        ready(t, q, parent);
}

void tl_ops_flush(struct nsc_timeline *t) {
    struct tl_file *f = &t->f;
    struct tl_ops *o = f->ops;
    if (!o)
        return;
    /* Operations reported and still waiting for a channel (its KernelCh was
     * cut or lost) join the ready ones, and all are drawn, earliest first;
     * channels whose operation was never reported (drawn before they came,
     * or lost) are not drawn. */
    struct nsc_id_map_iter it;
    uint64_t key;
    void *val;
    for (nsc_id_map_iter_init(&o->pend, &it); nsc_id_map_next(&o->pend, &it, &key, &val);) {
        struct pend_op *q = val;
        if (q->have_op && !q->ready) {
            q->ready = 1;
            heap_push(o, (struct waiting){start_of(f, q), key});
        }
    }
    while (o->nheap)
        draw(t, heap_pop(o));
    for (nsc_id_map_iter_init(&o->pend, &it); nsc_id_map_next(&o->pend, &it, &key, &val);) {
        struct pend_op *q = val;
        if (q->have_op) /* not in the heap (memory short): drawn now, in map order */
            draw_entry(t, q);
        else
            f->n.kernelch_not_drawn += q->nk;
        free(q->k);
    }
    nsc_id_map_clear(&o->pend);
}

int tl_ops_init(struct tl_file *f) {
    f->ops = calloc(1, sizeof(*f->ops));
    if (!f->ops)
        return -1;
    if (nsc_id_map_init(&f->ops->pend, 64, sizeof(struct pend_op), NSC_ID_MAP_GROW) != 0) {
        free(f->ops);
        f->ops = NULL;
        return -1;
    }
    return 0;
}

void tl_ops_free(struct tl_file *f) {
    struct tl_ops *o = f->ops;
    if (!o)
        return;
    struct nsc_id_map_iter it;
    uint64_t key;
    void *val;
    for (nsc_id_map_iter_init(&o->pend, &it); nsc_id_map_next(&o->pend, &it, &key, &val);)
        free(((struct pend_op *)val)->k);
    nsc_id_map_destroy(&o->pend);
    free(o->heap);
    free(o);
    f->ops = NULL;
}
