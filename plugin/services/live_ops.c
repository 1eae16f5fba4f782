// SPDX-License-Identifier: Apache-2.0
/* live_ops.c - live metrics from the records the drainer packs: operations
 * counted at their START, completed by their KernelCh or (host timing) by
 * their stops and a quiet grace (live_metrics.h), per comm, function and
 * size; the bounded tables they live in. The drainer, under mu. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "comm_table.h"
#include "intern.h"
#include "live_metrics_int.h"
#include "nccl_abi.h"
#include "op_rules.h"
#include "thread_state.h"

__thread int live_in_pass;

/* ---- tables ---- */


/* Ops and kids live in fixed id maps (util/id_map.h), keyed by event id:
 * all memory is taken at create, and removal moves neighbours, so a
 * pointer from find/add is good until the next del. */
static struct op *op_find(struct nsc_live *m, uint64_t id) { return nsc_id_map_find(&m->ops, id); }

/* The fifo bounds the ops in flight to NSC_LIVE_OPS, the map's limit;
 * NULL would mean that bound broke. */
static struct op *op_add(struct nsc_live *m, uint64_t id) {
    struct op *o = nsc_id_map_insert(&m->ops, id, NULL);
    if (o)
        o->id = id;
    return o;
}

static void op_del(struct nsc_live *m, struct op *o) { nsc_id_map_remove_value(&m->ops, o); }

static struct kid *kid_find(struct nsc_live *m, uint64_t id) {
    return nsc_id_map_find(&m->kids, id);
}

static struct kid *kid_add(struct nsc_live *m, uint64_t id) {
    struct kid *k = nsc_id_map_insert(&m->kids, id, NULL); /* NULL: NSC_LIVE_KIDS reached */
    if (k)
        k->id = id;
    return k;
}

static void kid_del(struct nsc_live *m, struct kid *k) { nsc_id_map_remove_value(&m->kids, k); }

/* The comm's slot, or the free slot where it would go. */
static struct comm *comm_slot(struct nsc_live *m, uint32_t serial) {
    uint32_t i = (uint32_t)(live_mix(serial) >> 40) & (COMMS_CAP - 1);
    while (m->comms[i].serial && m->comms[i].serial != serial)
        i = (i + 1) & (COMMS_CAP - 1);
    return &m->comms[i];
}

/* Comms and series are removed only all together by live_rebuild(), so they
 * need no deletion of their own. */
static uint32_t series_get(struct nsc_live *m, uint32_t serial, uint16_t func, uint8_t size,
                           uint8_t p2p) {
    uint64_t key = (uint64_t)serial << 24 | (uint64_t)func << 8 | size;
    uint32_t i = (uint32_t)(live_mix(key) >> 40) & (SERIES_CAP - 1);
    for (;; i = (i + 1) & (SERIES_CAP - 1)) {
        struct series *s = &m->series[i];
        if (!s->serial)
            break;
        if (s->serial == serial && s->func == func && s->size == size)
            return i + 1;
    }
    if (m->nseries >= NSC_LIVE_SERIES)
        return 0;
    struct series *s = &m->series[i];
    memset(s, 0, sizeof(*s));
    s->serial = serial;
    s->func = func;
    s->size = size;
    s->p2p = p2p;
    m->nseries++;
    return i + 1;
}

/* Both tables again from src[0..n) without the comms drop() names, nor
 * their series. Under mu. */
void live_rebuild(struct nsc_live *m, const struct comm *src, uint32_t n,
                  int (*drop)(const struct nsc_live *, const struct comm *)) {
    memset(m->comms, 0, COMMS_CAP * sizeof(*m->comms));
    m->ncomms = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!drop(m, &src[i])) {
            *comm_slot(m, src[i].serial) = src[i];
            m->ncomms++;
        }
    struct series *keep = malloc((m->nseries + 1) * sizeof(*keep));
    if (!keep)
        return; /* their series stay, unshown (format() skips a series without its comm) */
    uint32_t nk = 0;
    for (uint32_t i = 0; i < SERIES_CAP; i++)
        if (m->series[i].serial && comm_slot(m, m->series[i].serial)->serial)
            keep[nk++] = m->series[i];
    memset(m->series, 0, SERIES_CAP * sizeof(*m->series));
    m->nseries = 0;
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t si = series_get(m, keep[i].serial, keep[i].func, keep[i].size, keep[i].p2p);
        m->series[si - 1] = keep[i];
    }
    free(keep);
}

/* Ended, idle, and shown so in a file already: what gives way to a new
 * comm when the table is full (its retention is cut short). */
static int comm_shown_ended(const struct nsc_live *m, const struct comm *c) {
    (void)m;
    return c->finalized && !c->in_flight && c->gone_ns;
}

/* The comm of `serial`; with `add`, a new entry when there is none. A full
 * table first lets ended comms already shown go (once between two files:
 * the scan is not repeated per record while nothing can go); what still
 * does not fit is counted in `overflow`. */
static struct comm *comm_get(struct nsc_live *m, uint32_t serial, int add) {
    struct comm *c = comm_slot(m, serial);
    if (c->serial || !add)
        return c->serial ? c : NULL;
    if (m->ncomms >= MAX_COMMS_KNOWN && !m->compacted) {
        m->compacted = 1;
        struct comm *all = malloc(m->ncomms * sizeof(*all));
        if (all) {
            uint32_t n = 0, gone = 0;
            for (uint32_t i = 0; i < COMMS_CAP; i++)
                if (m->comms[i].serial) {
                    all[n++] = m->comms[i];
                    gone += comm_shown_ended(m, &m->comms[i]);
                }
            if (gone)
                live_rebuild(m, all, n, comm_shown_ended);
            free(all);
        }
        c = comm_slot(m, serial);
    }
    if (m->ncomms >= MAX_COMMS_KNOWN) {
        m->overflow++;
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->serial = serial;
    m->ncomms++;
    return c;
}

/* ---- operations ---- */

static uint64_t elem_bytes(struct nsc_live *m, uint16_t dtype) {
    if (!m->dsize[dtype]) /* ids below the count are published and immutable */
        m->dsize[dtype] = dtype < nsc_intern_count() ? (uint8_t)nsc_dtype_size(nsc_intern_text(dtype)) : 1;
    return m->dsize[dtype];
}

static uint8_t size_bucket(uint64_t bytes) {
    uint8_t b = 0;
    for (uint64_t lim = 1024; b < NSIZE - 1 && bytes > lim; lim <<= 4)
        b++;
    return b;
}

static void lat_add(struct lat *l, double s) {
    unsigned i = 0;
    while (i < NLAT && s > lat_le[i])
        i++;
    l->b[i]++;
    l->count++;
    l->sum += s;
}

void live_now(struct nsc_live *m) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->now_ns = nsc_clock_monotonic_ns();
    m->now_ticks = nsc_clock_ticks();
    m->now_unix_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A record's ticks as Unix time (ns), through the clocks read at the pass's
 * start: an alert compares it with Prometheus's time(). */
static uint64_t unix_ns(const struct nsc_live *m, uint64_t ticks) {
    if (ticks >= m->now_ticks)
        return m->now_unix_ns;
    double ago = (double)(m->now_ticks - ticks) * 1e9 / (double)m->ticks_per_sec;
    return ago < (double)m->now_unix_ns ? m->now_unix_ns - (uint64_t)ago : 0;
}

/* The comm's entry for a collective function; with `add`, a new one (NULL
 * when all NFSEQ are taken: counted). */
static struct fseq *fseq_get(struct nsc_live *m, struct comm *c, uint16_t func, int add) {
    for (unsigned i = 0; i < NFSEQ; i++) {
        if (c->fseq[i].func == func)
            return &c->fseq[i];
        if (!c->fseq[i].func) {
            if (!add)
                return NULL;
            c->fseq[i].func = func;
            return &c->fseq[i];
        }
    }
    if (add)
        m->overflow++;
    return NULL;
}

/* Records an op's completion and forgets it. */
static void complete(struct nsc_live *m, struct op *o, int timed) {
    struct comm *c = comm_get(m, o->serial, 0);
    /* Seen to end: its KernelCh (sampled) or its ProxyOps stopped. An
     * operation with neither (not sampled, no network) only leaves: its
     * enqueue is no latency and no completion, so the last-completion
     * series (the alert rules') keep the last real one. */
    int seen = (o->kernel && o->gpu_end > o->gpu_start) || o->proxied ||
               (!o->coll && !o->p2p); /* a CeColl: its host times are its own */
    if (!seen && c && c->in_flight)
        c->in_flight--;
    if (!seen) {
        op_del(m, o);
        return;
    }
    if (c) {
        if (c->in_flight)
            c->in_flight--;
        c->gone_ns = 0; /* after its end: its retention starts again with the next file */
        uint64_t end = o->end_ticks > o->start_ticks ? o->end_ticks : o->start_ticks;
        if (end > c->last_done_ticks) {
            c->last_done_ticks = end;
            c->last_done_unix_ns = unix_ns(m, end);
        }
        struct fseq *f = o->coll && o->func ? fseq_get(m, c, o->func, 0) : NULL;
        if (f && (!f->any_done || o->seq > f->done)) {
            f->done = o->seq;
            f->any_done = 1;
        }
    }
    uint32_t si = timed ? series_get(m, o->serial, o->func, o->size, o->p2p) : 0;
    if (si) {
        struct series *s = &m->series[si - 1];
        double sec = -1;
        int timing = T_HOST;
        if (o->kernel && o->gpu_start && o->gpu_end > o->gpu_start) {
            sec = (double)(o->gpu_end - o->gpu_start) * 1e-9;
            timing = T_GPU;
        } else if (o->end_ticks > o->start_ticks) {
            sec = (double)(o->end_ticks - o->start_ticks) / (double)m->ticks_per_sec;
        }
        if (sec > 0) {
            lat_add(&s->lat[timing], sec);
            if (timing == T_GPU)
                s->gpu_bytes += (double)o->bytes;
        }
        m->done_total++;
    }
    op_del(m, o);
}

/* op_rules.h's verdict on `o` now. Whether a Send or Recv expects KernelCh
 * depends on its comm's rank, known once the comm is described (until then
 * it waits for its channels; the next settle after the description decides
 * again). `grace_ns`: the quiet the host rule asks for; ~0: none is enough
 * (a record was just applied). */
static int op_done(struct nsc_live *m, const struct op *o, uint64_t grace_ns) {
    int rank = -1;
    if (o->p2p) {
        const struct comm *c = comm_get(m, o->serial, 0);
        if (c && c->described)
            rank = c->info.rank;
    }
    int expects = nsc_op_expects_kernel_ch(o->p2p, o->count, o->peer, rank);
    int nch = nsc_op_kernel_channels(
        o->kernel, atomic_load_explicit(&m->channels_known, memory_order_relaxed), expects, o->nch);
    int quiet = grace_ns != ~0ull && m->now_ns - o->touched_ns >= grace_ns;
    return nsc_op_complete(o->stopped, o->live_kids, nch, o->kch_done, quiet);
}
#define NOT_QUIET (~0ull)

/* Applies a child's accumulated state to its op. */
static void attach(struct nsc_live *m, struct op *o, struct kid *k) {
    o->touched_ns = m->now_ns;
    if (!k->kch)
        o->proxied = 1; /* a ProxyOp: its stop is the transfer's end */
    if (k->kch) {
        if (k->gpu_start && (!o->gpu_start || k->gpu_start < o->gpu_start))
            o->gpu_start = k->gpu_start;
        if (k->gpu_end > o->gpu_end)
            o->gpu_end = k->gpu_end;
    }
    if (k->stopped) {
        if (k->stop_ticks > o->end_ticks)
            o->end_ticks = k->stop_ticks;
        if (k->kch)
            o->kch_done++;
    } else {
        o->live_kids++;
    }
}

static void op_start(struct nsc_live *m, const struct nsc_rec *r) {
    const union nsc_desc *d = &r->u.start.d;
    uint16_t func, dtype;
    uint64_t count;
    uint16_t nch = 0;
    uint8_t p2p = 0;
    switch (r->h.etype) {
    case NSC_ET_COLL:
        func = d->coll.func, dtype = d->coll.dtype, count = d->coll.count, nch = d->coll.nch;
        break;
    case NSC_ET_P2P:
        func = d->p2p.func, dtype = d->p2p.dtype, count = d->p2p.count, nch = d->p2p.nch, p2p = 1;
        break;
    default: /* CeColl */
        func = d->ce_coll.func, dtype = d->ce_coll.dtype, count = d->ce_coll.count;
        break;
    }
    uint64_t seq = 0;
    int32_t peer = 0;
    if (r->h.etype == NSC_ET_COLL)
        seq = d->coll.seq;
    else if (p2p)
        peer = d->p2p.peer;
    uint64_t bytes = count * elem_bytes(m, dtype);
    uint8_t size = size_bucket(bytes);
    /* The comm first: making room for it drops the series of every comm
     * not in the table (rebuild), which would take this one's with it. */
    struct comm *c = comm_get(m, r->h.aux, 1);
    uint32_t si = series_get(m, r->h.aux, func, size, p2p);
    if (si) {
        m->series[si - 1].ops++;
        m->series[si - 1].bytes += bytes;
    } else {
        m->overflow++;
    }
    if (c && !c->first_ticks)
        c->first_ticks = r->h.ticks;
    if (c) {
        c->gone_ns = 0; /* an operation after its end (late records): not idle */
        if (!c->first_unix_ns)
            c->first_unix_ns = unix_ns(m, r->h.ticks);
        struct fseq *f = r->h.etype == NSC_ET_COLL && func ? fseq_get(m, c, func, 1) : NULL;
        if (f && seq >= f->enq)
            f->enq = seq;
    }
    if (op_find(m, r->h.id))
        return; /* a duplicate id cannot happen; never track one twice */
    if (m->fifo_len == NSC_LIVE_OPS) {
        /* Too many in flight: the oldest completes untimed. */
        uint64_t old = m->fifo[m->fifo_head];
        m->fifo_head = (m->fifo_head + 1) % NSC_LIVE_OPS;
        m->fifo_len--;
        struct op *x = op_find(m, old);
        if (x) {
            m->overflow++;
            complete(m, x, 0);
        }
    }
    if (c)
        c->in_flight++;
    struct op *o = op_add(m, r->h.id);
    if (!o) { /* cannot happen: the fifo holds every op in the map */
        m->overflow++;
        if (c)
            c->in_flight--;
        return;
    }
    m->fifo[(m->fifo_head + m->fifo_len) % NSC_LIVE_OPS] = r->h.id;
    m->fifo_len++;
    o->serial = r->h.aux;
    o->func = func;
    o->size = size;
    o->p2p = p2p;
    o->start_ticks = o->end_ticks = r->h.ticks;
    o->bytes = bytes;
    o->count = count;
    o->seq = seq;
    o->peer = peer;
    o->coll = r->h.etype == NSC_ET_COLL;
    o->nch = nch;
    /* CeColl runs on copy engines: no channels, no KernelCh */
    /* sampled (trace_format.h: NSC_RF_SAMPLED): KernelCh will come */
    o->kernel = r->h.etype != NSC_ET_CE_COLL && (r->h.flags & NSC_RF_SAMPLED) != 0;
    o->proxied = 0;
    o->touched_ns = m->now_ns;
}

static void live_record_in(struct nsc_live *m, const struct nsc_rec *r) {
    unsigned et = r->h.etype;
    int is_op = et == NSC_ET_COLL || et == NSC_ET_P2P || et == NSC_ET_CE_COLL;
    switch (r->h.kind) {
    case NSC_REC_START:
        if (is_op) {
            op_start(m, r);
        } else if (r->u.start.parent && !(r->h.flags & NSC_RF_FOREIGN_PARENT)) {
            struct kid *k = kid_add(m, r->h.id);
            if (!k) {
                m->overflow++;
                return;
            }
            k->parent = r->u.start.parent;
            k->kch = et == NSC_ET_KERNEL_CH;
            if (k->kch)
                k->gpu_start = r->u.start.d.kernel_ch.ptimer;
            struct op *o = op_find(m, k->parent);
            if (o) {
                attach(m, o, k);
            } else if (m->norphans < NSC_LIVE_KIDS) {
                /* Its parent's ring is drained later in this pass. */
                k->orphan_pass = m->pass + 1; /* never 0 */
                m->orphans[m->norphans++] = k->id;
            } else {
                kid_del(m, k);
            }
        }
        return;
    case NSC_REC_STATE:
        if (et == NSC_ET_KERNEL_CH && r->h.aux == NSC_ABI_KERNEL_CH_STOP) {
            struct kid *k = kid_find(m, r->h.id);
            if (!k)
                return;
            if (r->u.state.arg > k->gpu_end)
                k->gpu_end = r->u.state.arg;
            struct op *o = k->orphan_pass ? NULL : op_find(m, k->parent);
            if (o && k->gpu_end > o->gpu_end)
                o->gpu_end = k->gpu_end;
        }
        return;
    case NSC_REC_STOP:
        if (is_op) {
            struct op *o = op_find(m, r->h.id);
            if (!o)
                return;
            o->stopped = 1;
            o->touched_ns = m->now_ns;
            if (r->h.ticks > o->end_ticks)
                o->end_ticks = r->h.ticks;
            if (op_done(m, o, NOT_QUIET))
                complete(m, o, 1);
        } else {
            struct kid *k = kid_find(m, r->h.id);
            if (!k)
                return;
            k->stopped = 1;
            k->stop_ticks = r->h.ticks;
            if (k->orphan_pass)
                return; /* applied when its parent shows up */
            struct op *o = op_find(m, k->parent);
            if (o) {
                o->touched_ns = m->now_ns;
                if (o->live_kids)
                    o->live_kids--;
                if (k->stop_ticks > o->end_ticks)
                    o->end_ticks = k->stop_ticks;
                if (k->kch)
                    o->kch_done++;
                if (op_done(m, o, NOT_QUIET))
                    complete(m, o, 1);
            }
            kid_del(m, k);
        }
        return;
    case NSC_REC_COMM_FINALIZE: {
        /* Added when unknown: a comm whose description the drainer has not
         * taken yet (nsc_live_comms comes later for a comm that lived less
         * than a pass) must not enter as a live one that never ends. */
        struct comm *c = comm_get(m, r->h.aux, 1);
        if (c)
            c->finalized = 1;
        return;
    }
    default:
        return;
    }
}

/* Children whose parent's START came later in the pass; ops that are done
 * by the host rule, oldest first. Under mu. */
void live_settle(struct nsc_live *m, uint64_t grace_ns) {
    uint32_t keep = 0;
    for (uint32_t i = 0; i < m->norphans; i++) {
        struct kid *k = kid_find(m, m->orphans[i]);
        if (!k || !k->orphan_pass)
            continue;
        struct op *o = op_find(m, k->parent);
        if (o) {
            k->orphan_pass = 0;
            attach(m, o, k);
            if (k->stopped) {
                kid_del(m, k);
                if (op_done(m, o, NOT_QUIET))
                    complete(m, o, 1);
            }
        } else if (m->pass + 1 - k->orphan_pass > ORPHAN_PASSES) {
            kid_del(m, k); /* its parent was not recorded */
        } else {
            m->orphans[keep++] = m->orphans[i];
        }
    }
    m->norphans = keep;
    while (m->fifo_len) {
        struct op *o = op_find(m, m->fifo[m->fifo_head]);
        if (o) {
            if (!op_done(m, o, grace_ns))
                break;
            complete(m, o, 1);
        }
        m->fifo_head = (m->fifo_head + 1) % NSC_LIVE_OPS;
        m->fifo_len--;
    }
}

/* RELAXED: nsc_live_on is set before the engine's threads start and
 * cleared after they are joined. */
void live_record(const struct nsc_rec *r) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (m)
        live_record_in(m, r);
}

void nsc_live_pass_begin(void) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    live_in_pass = 1;
    m->pass++;
    live_now(m);
}

void nsc_live_pass_end(void) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m)
        return;
    live_settle(m, GRACE_NS);
    live_in_pass = 0;
    pthread_mutex_unlock(&m->mu);
}

void nsc_live_comms(const struct nsc_comm_info *ci, unsigned n) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m || !n)
        return;
    int lock = !live_in_pass; /* the drainer's pass may seal a job and come here */
    if (lock)
        pthread_mutex_lock(&m->mu);
    for (unsigned i = 0; i < n; i++) {
        /* A comm these metrics do not follow enters from its description
         * only while it is open. One that ended first (let go already, or
         * its finalize record found the table full) has nothing to show:
         * entering, it would stay as a live comm that never ends and push
         * out ended comms the files still show. */
        struct comm *c = comm_get(m, ci[i].serial, 0);
        if (!c && nsc_comm_serial_live(ci[i].serial) != 0)
            c = comm_get(m, ci[i].serial, 1);
        if (c) {
            c->info = ci[i];
            c->described = 1;
        }
    }
    if (lock)
        pthread_mutex_unlock(&m->mu);
}

