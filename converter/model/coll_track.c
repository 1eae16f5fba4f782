/* coll_track.c - joining collectives with their children. */
#include "coll_track.h"

#include <stdlib.h>
#include <string.h>

#include "event_types.h"

struct op {
    uint64_t id;          /* 0: free */
    struct nsc_rec start; /* the Coll/P2p START */
    uint32_t thread;
    uint64_t start_ns, stop_ns, end_ns, gpu_start, gpu_end;
    uint32_t children, kch_done;
    int reported;
};

/* Children (struct nsc_track_child, coll_track.h): a KernelCh or ProxyOp
 * (op_id: its operation), or a ProxyStep (op_id: its ProxyOp). id 0: free,
 * UINT64_MAX: deleted. */

/* What children told about a parent not seen yet. Records of different
 * threads reach the file in drain order, not time order: a KernelCh on the
 * proxy thread can be written before its Coll's START from the application
 * thread (the flusher read that ring first). Direct-mapped by parent id;
 * a collision forgets the older entry (bounded memory). */
#define EARLY_CAP 16384
struct early {
    uint64_t op_id; /* 0: free */
    uint64_t end_ns, gpu_start, gpu_end;
    uint32_t children, kch_done;
};

struct nsc_coll_track {
    struct nsc_decoder *d;
    int64_t shift;
    nsc_op_done_fn fn;
    void *ud;
    int kernel;            /* the session recorded KernelCh */
    struct op *ops;        /* open addressing, capacity 2 x INFLIGHT */
    size_t ops_cap;
    uint64_t *fifo;        /* op ids in start order */
    size_t fifo_head, fifo_len;
    struct nsc_track_child *kids;
    size_t kids_cap, kids_n, kids_used;
    struct early *early;
};

static struct early *early_of(struct nsc_coll_track *t, uint64_t op_id, int create) {
    struct early *e = &t->early[(op_id * 0x9e3779b97f4a7c15ull) >> 50];
    if (e->op_id == op_id)
        return e;
    if (!create)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->op_id = op_id;
    return e;
}

static size_t slot_of(uint64_t id, size_t cap) {
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct op *op_find(struct nsc_coll_track *t, uint64_t id) {
    for (size_t i = slot_of(id, t->ops_cap);; i = (i + 1) & (t->ops_cap - 1)) {
        if (t->ops[i].id == id)
            return &t->ops[i];
        if (t->ops[i].id == 0)
            return NULL;
    }
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void op_remove(struct nsc_coll_track *t, struct op *o) {
    size_t cap = t->ops_cap, i = (size_t)(o - t->ops), j = i;
    for (;;) {
        j = (j + 1) & (cap - 1);
        if (t->ops[j].id == 0)
            break;
        size_t k = slot_of(t->ops[j].id, cap);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            t->ops[i] = t->ops[j];
            i = j;
        }
    }
    t->ops[i].id = 0;
}

static struct nsc_track_child *kid_find(struct nsc_coll_track *t, uint64_t id) {
    for (size_t i = slot_of(id, t->kids_cap);; i = (i + 1) & (t->kids_cap - 1)) {
        if (t->kids[i].id == id)
            return &t->kids[i];
        if (t->kids[i].id == 0)
            return NULL;
    }
}

static void kids_rehash(struct nsc_coll_track *t, size_t cap) {
    struct nsc_track_child *old = t->kids;
    size_t oc = t->kids_cap;
    struct nsc_track_child *n = calloc(cap, sizeof(*n));
    if (!n)
        return;
    t->kids = n;
    t->kids_cap = cap;
    t->kids_n = t->kids_used = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].id && old[i].id != UINT64_MAX) {
            size_t s = slot_of(old[i].id, cap);
            while (n[s].id)
                s = (s + 1) & (cap - 1);
            n[s] = old[i];
            t->kids_n++;
            t->kids_used++;
        }
    free(old);
}

static struct nsc_track_child *kid_add(struct nsc_coll_track *t, uint64_t id, uint64_t op_id, uint8_t etype) {
    if ((t->kids_used + 1) * 2 > t->kids_cap) {
        /* Grow while live children are many; otherwise just clear tombstones.
         * Live children are bounded by the operations in flight. */
        kids_rehash(t, t->kids_n * 4 > t->kids_cap ? t->kids_cap * 2 : t->kids_cap);
        if ((t->kids_used + 1) * 2 > t->kids_cap)
            return NULL;
    }
    size_t i = slot_of(id, t->kids_cap);
    while (t->kids[i].id && t->kids[i].id != UINT64_MAX)
        i = (i + 1) & (t->kids_cap - 1);
    if (t->kids[i].id == 0)
        t->kids_used++;
    t->kids[i] = (struct nsc_track_child){.id = id, .op_id = op_id, .etype = etype, .state = -1,
                                .step_state = -1, .step = -1};
    t->kids_n++;
    return &t->kids[i];
}

static void report(struct nsc_coll_track *t, struct op *o, const struct nsc_track_child *open,
                   uint32_t nopen) {
    if (o->reported)
        return;
    o->reported = 1;
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
        d.nch = r->u.start.d.p2p.nch;
    } else {
        d.seq = r->u.start.d.coll.seq;
        d.func = nsc_decoder_str(t->d, r->u.start.d.coll.func);
        d.dtype = nsc_decoder_str(t->d, r->u.start.d.coll.dtype);
        d.algo = nsc_decoder_str(t->d, r->u.start.d.coll.algo);
        d.proto = nsc_decoder_str(t->d, r->u.start.d.coll.proto);
        d.count = r->u.start.d.coll.count;
        d.nch = r->u.start.d.coll.nch;
    }
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
    d.open = open;
    d.nopen = nopen;
    t->fn(t->ud, &d);
}

/* Done when every channel's kernel finished, or when nothing more can come. */
static void maybe_done(struct nsc_coll_track *t, struct op *o) {
    if (!o->stop_ns)
        return;
    unsigned nch = o->start.h.etype == NSC_ET_P2P ? o->start.u.start.d.p2p.nch
                                                   : o->start.u.start.d.coll.nch;
    int done = t->kernel ? (nch ? o->kch_done >= nch : o->children == 0)
                         : !(t->d->session.event_mask & (1u << NSC_ET_PROXY_OP));
    if (done) {
        report(t, o, NULL, 0);
        op_remove(t, o);
    }
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
    t->kernel = (d->session.event_mask >> NSC_ET_KERNEL_CH) & 1;
    t->ops_cap = 2 * NSC_TRACK_INFLIGHT;
    t->ops = calloc(t->ops_cap, sizeof(*t->ops));
    t->fifo = calloc(NSC_TRACK_INFLIGHT, sizeof(*t->fifo));
    t->kids_cap = 4096;
    t->kids = calloc(t->kids_cap, sizeof(*t->kids));
    t->early = calloc(EARLY_CAP, sizeof(*t->early));
    if (!t->ops || !t->fifo || !t->kids || !t->early) {
        free(t->ops);
        free(t->fifo);
        free(t->kids);
        free(t->early);
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
            t->fifo[(t->fifo_head + t->fifo_len) % NSC_TRACK_INFLIGHT] = r->h.id;
            t->fifo_len++;
            size_t i = slot_of(r->h.id, t->ops_cap);
            while (t->ops[i].id)
                i = (i + 1) & (t->ops_cap - 1);
            struct op *o = &t->ops[i];
            memset(o, 0, sizeof(*o));
            o->id = r->h.id;
            o->start = *r;
            o->thread = thread;
            o->start_ns = when(t, r->h.ticks);
            struct early *e = early_of(t, o->id, 0);
            if (e) { /* children that were written before this START */
                o->children = e->children;
                o->kch_done = e->kch_done;
                o->end_ns = e->end_ns;
                o->gpu_start = e->gpu_start;
                o->gpu_end = e->gpu_end;
                e->op_id = 0;
            }
        } else if ((et == NSC_ET_KERNEL_CH || et == NSC_ET_PROXY_OP) && r->u.start.parent &&
                   !(r->h.flags & NSC_RF_FOREIGN_PARENT)) {
            uint64_t parent = r->u.start.parent;
            struct op *o = op_find(t, parent);
            uint32_t *children;
            uint64_t *gpu_start;
            struct early *e = NULL;
            if (o) {
                children = &o->children;
                gpu_start = &o->gpu_start;
            } else {
                e = early_of(t, parent, 1);
                children = &e->children;
                gpu_start = &e->gpu_start;
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
        if (et == NSC_ET_KERNEL_CH && r->h.aux == 22 /* KernelChStop */) {
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
            k->id = UINT64_MAX;
            t->kids_n--;
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
            struct op *o = op_find(t, k->op_id);
            k->id = UINT64_MAX;
            t->kids_n--;
            uint64_t ns = when(t, r->h.ticks);
            if (!o) {
                struct early *e = early_of(t, k->op_id, 0);
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

static int cmp_kid_op(const void *a, const void *b) {
    const struct nsc_track_child *x = a, *y = b;
    return x->op_id < y->op_id ? -1 : x->op_id > y->op_id;
}

void nsc_track_finish(struct nsc_coll_track *t) {
    if (!t)
        return;
    /* The children still open, grouped by operation: what each operation
     * in flight was waiting on. */
    struct nsc_track_child *open = calloc(t->kids_n + 1, sizeof(*open));
    size_t nopen = 0;
    for (size_t i = 0; open && i < t->kids_cap; i++)
        if (t->kids[i].id && t->kids[i].id != UINT64_MAX && t->kids[i].etype != NSC_ET_PROXY_STEP &&
            nopen < t->kids_n)
            open[nopen++] = t->kids[i];
    if (open)
        qsort(open, nopen, sizeof(*open), cmp_kid_op);
    static const struct nsc_track_child none;
    /* In start order, so reports come out as they happened. */
    for (size_t k = 0; k < t->fifo_len; k++) {
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
        report(t, o, end > lo ? open + lo : &none, (uint32_t)(end - lo));
    }
    free(open);
    free(t->ops);
    free(t->fifo);
    free(t->kids);
    free(t->early);
    free(t);
}
