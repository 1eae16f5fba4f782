// SPDX-License-Identifier: Apache-2.0
/* coll_track.c - joining collectives with their children. */
#include "coll_track.h"

#include <stdlib.h>
#include <string.h>

#include "decoded.h"
#include "event_types.h"
#include "id_map.h"
#include "nccl_abi.h"

struct op {
    uint64_t id;
    struct nsc_rec start; /* the Coll/P2p START */
    uint32_t thread;
    uint64_t start_ns, stop_ns, end_ns, gpu_start, gpu_end;
    uint32_t children, kch_done;
    uint64_t order;       /* its START's place among the file's Coll/P2p STARTs */
    int reported;
    int sampled, inferred, maybe_stuck;
};

/* A comm's operations that were not sampled and are not known complete
 * yet, by START order (ids; those reported since, pushed out of the
 * window, are skipped). At most NSC_TRACK_INFLIGHT: older ones have left
 * the window already. */
struct pending {
    uint64_t *ids;
    size_t head, n, cap; /* ids[head .. n) */
};

/* Children (struct nsc_track_child, coll_track.h): a KernelCh or ProxyOp
 * (op_id: its operation), or a ProxyStep (op_id: its ProxyOp). */

/* What children told about a parent not seen yet. Records of different
 * threads reach the file in drain order, not time order: a KernelCh on the
 * proxy thread can be written before its Coll's START from the application
 * thread (the flusher read that ring first), thousands of operations ahead
 * when one ring is drained late. A map by parent id, at most EARLY_MAX
 * parents (children of parents that never come, in damaged input, stay
 * until then); past it a child's counts are not kept. (A direct-mapped
 * table of 16,384 forgot the older of two colliding parents: on 2 x H200,
 * 92 of 3,618 collectives of one rank lost their KernelCh and looked stuck
 * in a complete trace.) */
#define EARLY_MAX (1u << 20)
struct early {
    uint64_t end_ns, gpu_start, gpu_end;
    uint32_t children, kch_done;
};

struct nsc_coll_track {
    struct nsc_decoder *d;
    int64_t shift;
    nsc_op_done_fn fn;
    void *ud;
    int kernel;            /* the session recorded KernelCh */
    uint32_t version;      /* the file's format version (nsc_op_sampled) */
    uint64_t starts;       /* Coll/P2p STARTs so far */
    /* API v1-v3 (NCCL 2.23-2.26): a Coll's nChannels is NCCL's nMaxChannels,
     * the most it may use, not the channels whose KernelCh will come (2.26
     * spreads a small collective over fewer), and a channel's KernelCh may
     * start after another's stopped: nothing says an operation is done
     * before the file's end. Its operations are reported when they leave
     * the window of NSC_TRACK_INFLIGHT, or at the end, where one with a
     * child still open is stuck; their nch is 0 (not known). */
    int nch_unknown;
    struct nsc_id_map ops;  /* id -> struct op, at most NSC_TRACK_INFLIGHT */
    uint64_t *fifo;         /* op ids in start order */
    size_t fifo_head, fifo_len;
    struct nsc_id_map kids; /* id -> struct nsc_track_child */
    struct nsc_id_map early; /* parent id -> struct early */
    struct nsc_id_map pend;  /* comm serial -> struct pending */
};

/* NULL when there is none (create 0), or none can be made (create 1: the
 * map is full or memory short). Valid until the map's next insert/remove. */
static struct early *early_of(struct nsc_coll_track *t, uint64_t op_id, int create) {
    struct early *e = nsc_id_map_find(&t->early, op_id);
    if (e || !create || nsc_id_map_count(&t->early) >= EARLY_MAX)
        return e;
    e = nsc_id_map_insert(&t->early, op_id, NULL);
    if (e)
        memset(e, 0, sizeof(*e));
    return e;
}

/* Pointers from these stay valid until the next insert or remove in the
 * same map (util/id_map.h). */
static struct op *op_find(struct nsc_coll_track *t, uint64_t id) {
    return nsc_id_map_find(&t->ops, id);
}

static void op_remove(struct nsc_coll_track *t, struct op *o) {
    nsc_id_map_remove_value(&t->ops, o);
}

static struct nsc_track_child *kid_find(struct nsc_coll_track *t, uint64_t id) {
    return nsc_id_map_find(&t->kids, id);
}

static void kid_remove(struct nsc_coll_track *t, struct nsc_track_child *k) {
    nsc_id_map_remove_value(&t->kids, k);
}

static struct nsc_track_child *kid_add(struct nsc_coll_track *t, uint64_t id, uint64_t op_id, uint8_t etype) {
    struct nsc_track_child *k = nsc_id_map_insert(&t->kids, id, NULL);
    if (k)
        *k = (struct nsc_track_child){.id = id, .op_id = op_id, .etype = etype, .state = -1,
                                      .step_state = -1, .step = -1};
    return k;
}

/* The channels whose kernels an operation waits for; 0: not known. */
static unsigned op_nch(const struct nsc_coll_track *t, const struct op *o) {
    if (t->nch_unknown)
        return 0;
    return o->start.h.etype == NSC_ET_P2P ? o->start.u.start.d.p2p.nch
                                          : o->start.u.start.d.coll.nch;
}

/* What the callback gets of an operation (open: at the end, else NULL). */
static void describe(const struct nsc_coll_track *t, const struct op *o,
                     const struct nsc_track_child *open, uint32_t nopen, struct nsc_op_done *dp) {
    const struct nsc_rec *r = &o->start;
    struct nsc_op_done d;
    memset(&d, 0, sizeof(d));
    const struct nsc_comm_info *ci = nsc_decoder_comm(t->d, r->h.aux);
    d.comm_serial = r->h.aux;
    d.comm_id = ci ? ci->comm_id : 0;
    d.rank = ci ? ci->rank : -1;
    d.nranks = ci ? ci->nranks : 0;
    d.is_p2p = r->h.etype == NSC_ET_P2P;
    if (d.is_p2p) {
        d.func = nsc_decoder_str(t->d, r->u.start.d.p2p.func);
        d.dtype = nsc_decoder_str(t->d, r->u.start.d.p2p.dtype);
        d.count = r->u.start.d.p2p.count;
        d.peer = r->u.start.d.p2p.peer;
    } else {
        d.seq = r->u.start.d.coll.seq;
        d.func = nsc_decoder_str(t->d, r->u.start.d.coll.func);
        d.dtype = nsc_decoder_str(t->d, r->u.start.d.coll.dtype);
        d.algo = nsc_decoder_str(t->d, r->u.start.d.coll.algo);
        d.proto = nsc_decoder_str(t->d, r->u.start.d.coll.proto);
        d.count = r->u.start.d.coll.count;
    }
    d.nch = (int)op_nch(t, o);
    d.start_ns = o->start_ns;
    d.stop_ns = o->stop_ns;
    d.end_ns = o->end_ns;
    d.gpu_start = o->gpu_start;
    d.gpu_end = o->gpu_end;
    d.children = o->children;
    d.kernel_channels_done = o->kch_done;
    d.id = o->id;
    d.thread = o->thread;
    d.at_end = open != NULL;
    d.file_ended = d.at_end && nsc_decoder_ended(t->d);
    d.open = open;
    d.nopen = nopen;
    d.kernel = t->kernel;
    d.sampled = o->sampled;
    d.inferred = o->inferred;
    d.maybe_stuck = o->maybe_stuck;
    *dp = d;
}

static void report(struct nsc_coll_track *t, struct op *o, const struct nsc_track_child *open,
                   uint32_t nopen) {
    if (o->reported)
        return;
    o->reported = 1;
    struct nsc_op_done d;
    describe(t, o, open, nopen, &d);
    t->fn(t->ud, &d);
}

/* An operation that was not sampled waits for a later one of its comm. */
static void pending_add(struct nsc_coll_track *t, uint32_t serial, uint64_t id) {
    struct pending *q = nsc_id_map_insert(&t->pend, serial, NULL);
    if (!q)
        return; /* out of memory: it stays unknown (reported at the end) */
    if (q->n - q->head >= NSC_TRACK_INFLIGHT)
        q->head++; /* the oldest left the window: reported already */
    if (q->head && q->head * 2 >= q->n) {
        memmove(q->ids, q->ids + q->head, (q->n - q->head) * sizeof(*q->ids));
        q->n -= q->head;
        q->head = 0;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 16;
        uint64_t *v = realloc(q->ids, cap * sizeof(*v));
        if (!v)
            return;
        q->ids = v;
        q->cap = cap;
    }
    q->ids[q->n++] = id;
}

/* A sampled operation of comm `serial` whose START was the order-th
 * completed on the GPU: every operation of the comm enqueued before it
 * that was not sampled completed before it (NCCL runs a comm's kernels in
 * enqueue order), reported now, in enqueue order. */
static void infer_before(struct nsc_coll_track *t, uint32_t serial, uint64_t order) {
    struct pending *q = nsc_id_map_find(&t->pend, serial);
    while (q && q->head < q->n) {
        struct op *o = op_find(t, q->ids[q->head]);
        if (o && o->order > order)
            break;
        q->head++;
        if (!o || o->reported)
            continue;
        o->inferred = 1;
        report(t, o, NULL, 0);
        op_remove(t, o);
        q = nsc_id_map_find(&t->pend, serial); /* maps do not move each other's values */
    }
}

/* Done when every channel's kernel finished, or when nothing more can come. */
/* One that was not sampled waits for a later one of its comm (infer_before). */
static void maybe_done(struct nsc_coll_track *t, struct op *o) {
    if (!o->stop_ns || (t->kernel && (t->nch_unknown || !o->sampled)))
        return;
    unsigned nch = op_nch(t, o);
    int done = t->kernel ? (nch ? o->kch_done >= nch : o->children == 0)
                         : !(nsc_dec_session(t->d)->event_mask & (1u << NSC_ET_PROXY_OP));
    if (!done)
        return;
    if (t->kernel && o->kch_done > 0) { /* its kernels ran: those before it did */
        uint64_t id = o->id;
        infer_before(t, o->start.h.aux, o->order);
        if (!(o = op_find(t, id)))
            return;
    }
    report(t, o, NULL, 0);
    op_remove(t, o);
}

struct nsc_coll_track *nsc_track_new(struct nsc_decoder *d, int64_t shift_ns, nsc_op_done_fn fn,
                                     void *ud) {
    struct nsc_coll_track *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->d = d;
    t->shift = shift_ns;
    t->fn = fn;
    t->ud = ud;
    t->kernel = (nsc_dec_session(d)->event_mask >> NSC_ET_KERNEL_CH) & 1;
    t->version = nsc_dec_session(d)->format_version;
    t->nch_unknown = !nsc_op_channels_known((int)nsc_dec_session(d)->api_version);
    int ok = nsc_id_map_init(&t->ops, 1024, sizeof(struct op), NSC_ID_MAP_GROW) == 0;
    ok = nsc_id_map_init(&t->kids, 4096, sizeof(struct nsc_track_child), NSC_ID_MAP_GROW) == 0 && ok;
    ok = nsc_id_map_init(&t->early, 1024, sizeof(struct early), NSC_ID_MAP_GROW) == 0 && ok;
    ok = nsc_id_map_init(&t->pend, 16, sizeof(struct pending), NSC_ID_MAP_GROW) == 0 && ok;
    t->fifo = calloc(NSC_TRACK_INFLIGHT, sizeof(*t->fifo));
    if (!ok || !t->fifo) {
        nsc_id_map_destroy(&t->ops);
        nsc_id_map_destroy(&t->kids);
        nsc_id_map_destroy(&t->early);
        nsc_id_map_destroy(&t->pend);
        free(t->fifo);
        free(t);
        return NULL;
    }
    return t;
}

static uint64_t when(struct nsc_coll_track *t, uint64_t ticks) {
    return nsc_shift_ns(nsc_decoder_mono_ns(t->d, ticks), t->shift);
}

void nsc_track_record(struct nsc_coll_track *t, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    (void)ext;
    unsigned et = r->h.etype;
    switch (r->h.kind) {
    case NSC_REC_START:
        if (et == NSC_ET_COLL || et == NSC_ET_P2P) {
            if (op_find(t, r->h.id))
                return; /* a duplicate id: damaged input */
            if (t->fifo_len == NSC_TRACK_INFLIGHT) {
                /* Too many in flight: the oldest is reported with what it has. */
                uint64_t old = t->fifo[t->fifo_head];
                t->fifo_head = (t->fifo_head + 1) % NSC_TRACK_INFLIGHT;
                t->fifo_len--;
                struct op *o = op_find(t, old);
                if (o) {
                    report(t, o, NULL, 0);
                    op_remove(t, o);
                }
            }
            struct op *o = nsc_id_map_insert(&t->ops, r->h.id, NULL);
            if (!o)
                return; /* out of memory: the operation is not reported */
            t->fifo[(t->fifo_head + t->fifo_len) % NSC_TRACK_INFLIGHT] = r->h.id;
            t->fifo_len++;
            o->id = r->h.id;
            o->start = *r;
            o->thread = thread;
            o->start_ns = when(t, r->h.ticks);
            o->order = ++t->starts;
            o->sampled = nsc_op_sampled(t->version, nsc_dec_session(t->d)->event_mask, r->h.flags);
            if (t->kernel && !o->sampled)
                pending_add(t, r->h.aux, o->id);
            struct early *e = early_of(t, o->id, 0);
            if (e) { /* children that were written before this START */
                o->children = e->children;
                o->kch_done = e->kch_done;
                o->end_ns = e->end_ns;
                o->gpu_start = e->gpu_start;
                o->gpu_end = e->gpu_end;
                nsc_id_map_remove_value(&t->early, e);
            }
        } else if ((et == NSC_ET_KERNEL_CH || et == NSC_ET_PROXY_OP) && r->u.start.parent &&
                   !(r->h.flags & NSC_RF_FOREIGN_PARENT)) {
            uint64_t parent = r->u.start.parent;
            struct op *o = op_find(t, parent);
            uint32_t *children, none_c = 0;
            uint64_t *gpu_start, none_g = 0;
            struct early *e = NULL;
            if (o) {
                children = &o->children;
                gpu_start = &o->gpu_start;
            } else if ((e = early_of(t, parent, 1))) {
                children = &e->children;
                gpu_start = &e->gpu_start;
            } else { /* not kept (EARLY_MAX) */
                children = &none_c;
                gpu_start = &none_g;
            }
            (*children)++;
            if (et == NSC_ET_KERNEL_CH) {
                uint64_t g = r->u.start.d.kernel_ch.ptimer;
                if (g && (!*gpu_start || g < *gpu_start))
                    *gpu_start = g;
            }
            struct nsc_track_child *k = kid_add(t, r->h.id, parent, (uint8_t)et);
            if (k && et == NSC_ET_KERNEL_CH)
                k->ch = r->u.start.d.kernel_ch.ch;
            else if (k) {
                k->ch = r->u.start.d.proxy_op.ch;
                k->is_send = r->u.start.d.proxy_op.is_send;
                k->peer = r->u.start.d.proxy_op.peer;
            }
        } else if (et == NSC_ET_PROXY_STEP && r->u.start.parent) {
            /* Kept for where a hang stands (hang.h): the ProxyOp's newest step. */
            struct nsc_track_child *pop = kid_find(t, r->u.start.parent);
            if (pop && pop->etype == NSC_ET_PROXY_OP) {
                pop->steps_open++;
                pop->step = r->u.start.d.proxy_step.step;
                pop->step_state = -1;
                struct nsc_track_child *k = kid_add(t, r->h.id, pop->id, NSC_ET_PROXY_STEP);
                if (k)
                    k->step = r->u.start.d.proxy_step.step;
            }
        }
        return;
    case NSC_REC_STATE:
        if (et == NSC_ET_KERNEL_CH && r->h.aux == NSC_ABI_KERNEL_CH_STOP) {
            struct nsc_track_child *k = kid_find(t, r->h.id);
            struct op *o = k ? op_find(t, k->op_id) : NULL;
            struct early *e = k && !o ? early_of(t, k->op_id, 0) : NULL;
            uint64_t *gpu_end = o ? &o->gpu_end : e ? &e->gpu_end : NULL;
            if (gpu_end && r->u.state.arg > *gpu_end)
                *gpu_end = r->u.state.arg;
        } else if (et == NSC_ET_PROXY_OP || et == NSC_ET_PROXY_STEP) {
            struct nsc_track_child *k = kid_find(t, r->h.id);
            if (k && k->etype == et && et == NSC_ET_PROXY_OP)
                k->state = (int32_t)r->h.aux;
            else if (k && k->etype == et) {
                struct nsc_track_child *pop = kid_find(t, k->op_id);
                if (pop && pop->etype == NSC_ET_PROXY_OP) {
                    pop->step = k->step;
                    pop->step_state = (int32_t)r->h.aux;
                }
            }
        }
        return;
    case NSC_REC_STOP:
        if (et == NSC_ET_PROXY_STEP) {
            struct nsc_track_child *k = kid_find(t, r->h.id);
            if (!k || k->etype != et)
                return;
            struct nsc_track_child *pop = kid_find(t, k->op_id);
            if (pop && pop->etype == NSC_ET_PROXY_OP && pop->steps_open)
                pop->steps_open--;
            kid_remove(t, k);
        } else if (et == NSC_ET_COLL || et == NSC_ET_P2P) {
            struct op *o = op_find(t, r->h.id);
            if (o && o->start.h.etype == et) { /* a STOP of another type is not its stop */
                o->stop_ns = when(t, r->h.ticks);
                maybe_done(t, o);
            }
        } else if (et == NSC_ET_KERNEL_CH || et == NSC_ET_PROXY_OP) {
            struct nsc_track_child *k = kid_find(t, r->h.id);
            if (!k || k->etype != et)
                return;
            uint64_t op_id = k->op_id;
            kid_remove(t, k);
            struct op *o = op_find(t, op_id);
            uint64_t ns = when(t, r->h.ticks);
            if (!o) {
                struct early *e = early_of(t, op_id, 0);
                if (e) {
                    if (ns > e->end_ns)
                        e->end_ns = ns;
                    if (et == NSC_ET_KERNEL_CH)
                        e->kch_done++;
                }
                return;
            }
            if (ns > o->end_ns)
                o->end_ns = ns;
            if (et == NSC_ET_KERNEL_CH)
                o->kch_done++;
            maybe_done(t, o);
        }
        return;
    default:
        return;
    }
}

/* By operation, then by id: the order of the report, whatever the map's. */
static int cmp_kid_op(const void *a, const void *b) {
    const struct nsc_track_child *x = a, *y = b;
    if (x->op_id != y->op_id)
        return x->op_id < y->op_id ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void nsc_track_finish(struct nsc_coll_track *t) {
    if (!t)
        return;
    /* The children still open, grouped by operation: what each operation
     * in flight was waiting on. */
    struct nsc_track_child *open = calloc(nsc_id_map_count(&t->kids) + 1, sizeof(*open));
    size_t nopen = 0;
    struct nsc_id_map_iter it;
    uint64_t key;
    void *v;
    for (nsc_id_map_iter_init(&t->kids, &it); open && nsc_id_map_next(&t->kids, &it, &key, &v);)
        if (((struct nsc_track_child *)v)->etype != NSC_ET_PROXY_STEP)
            open[nopen++] = *(struct nsc_track_child *)v;
    if (open)
        qsort(open, nopen, sizeof(*open), cmp_kid_op);
    static const struct nsc_track_child none;
    /* Per operation still in flight (start order): its open children
     * [first, first + count) in `open`, and whether it is stuck. */
    struct at_end {
        size_t first;
        uint32_t count;
        int stuck;
    } *ae = calloc(t->fifo_len + 1, sizeof(*ae));
    for (size_t k = 0; ae && k < t->fifo_len; k++) {
        struct op *o = op_find(t, t->fifo[(t->fifo_head + k) % NSC_TRACK_INFLIGHT]);
        if (!o)
            continue;
        size_t lo = 0, hi = nopen;
        while (lo < hi) { /* the first open child of o */
            size_t mid = (lo + hi) / 2;
            if (open[mid].op_id < o->id)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t end = lo;
        while (end < nopen && open[end].op_id == o->id)
            end++;
        ae[k].first = lo;
        ae[k].count = (uint32_t)(end - lo);
        struct nsc_op_done d;
        describe(t, o, end > lo ? open + lo : &none, ae[k].count, &d);
        d.at_end = 1;
        ae[k].stuck = nsc_op_stuck(&d);
    }
    /* Not sampled and not known complete (the ones before the comm's last
     * completed sampled operation were inferred): may be stuck when a
     * sampled operation of the same comm enqueued after it is. Backwards,
     * per comm: "a stuck sampled one comes later". */
    struct nsc_id_map later;
    int have_later = ae && t->kernel && nsc_id_map_init(&later, 16, sizeof(uint64_t), NSC_ID_MAP_GROW) == 0;
    for (size_t k = t->fifo_len; have_later && k-- > 0;) {
        struct op *o = op_find(t, t->fifo[(t->fifo_head + k) % NSC_TRACK_INFLIGHT]);
        if (!o)
            continue;
        uint64_t seen = 0;
        nsc_id_map_get_u64(&later, o->start.h.aux, &seen);
        if (o->sampled && ae[k].stuck && !seen)
            nsc_id_map_put_u64(&later, o->start.h.aux, 1);
        else if (!o->sampled && seen)
            o->maybe_stuck = 1;
    }
    if (have_later)
        nsc_id_map_destroy(&later);
    /* In start order, so reports come out as they happened. */
    for (size_t k = 0; k < t->fifo_len; k++) {
        struct op *o = op_find(t, t->fifo[(t->fifo_head + k) % NSC_TRACK_INFLIGHT]);
        if (!o)
            continue;
        if (!ae) { /* out of memory: without the open children */
            report(t, o, &none, 0);
            continue;
        }
        report(t, o, ae[k].count ? open + ae[k].first : &none, ae[k].count);
    }
    free(ae);
    free(open);
    struct nsc_id_map_iter pit;
    for (nsc_id_map_iter_init(&t->pend, &pit); nsc_id_map_next(&t->pend, &pit, &key, &v);)
        free(((struct pending *)v)->ids);
    nsc_id_map_destroy(&t->pend);
    nsc_id_map_destroy(&t->ops);
    nsc_id_map_destroy(&t->kids);
    free(t->fifo);
    nsc_id_map_destroy(&t->early);
    free(t);
}
