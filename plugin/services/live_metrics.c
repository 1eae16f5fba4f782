// SPDX-License-Identifier: Apache-2.0
/* live_metrics.c - operations, latencies and bandwidth from the drained
 * records, and the Prometheus text file (see live_metrics.h). */
#include "live_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "comm_table.h"
#include "id_map.h"
#include "nccl_abi.h"
#include "intern.h"
#include "log.h"
#include "thread_state.h"

struct nsc_live *_Atomic nsc_live_on;
/* What is recorded now (control.h tells us): KernelCh in it makes new ops
 * GPU-timed; 0 is a stop. RELAXED: a statistic's mode. */
static _Atomic uint32_t recorded_mask;

void nsc_live_set_mask(uint32_t mask) {
    atomic_store_explicit(&recorded_mask, mask, memory_order_relaxed);
}

#define GRACE_NS 100000000ull /* host timing: quiet this long after the last stop */
#define ORPHAN_PASSES 64      /* a child whose parent never shows up is forgotten */
#define NLAT 19               /* latency buckets besides +Inf */
#define NSIZE 7               /* size buckets */
#define MAX_COMMS_KNOWN 4096
#define RETAIN_MIN_NS 60000000000ull /* a finalized comm stays in the files a minute at least */

static const double lat_le[NLAT] = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                    2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25,
                                    0.5, 1, 2.5, 5, 10};
/* Per-rank message bytes (count x datatype size), upper bounds: powers of 16. */
static const char *const size_name[NSIZE] = {"0-1KiB", "1KiB-16KiB", "16KiB-256KiB",
                                              "256KiB-4MiB", "4MiB-64MiB", "64MiB-1GiB",
                                              "1GiB+"};
enum { T_GPU, T_HOST };
static const char *const timing_name[2] = {"gpu", "host"};

struct lat {
    uint64_t b[NLAT + 1]; /* not cumulative; the last is +Inf */
    uint64_t count;
    double sum;           /* seconds */
};

/* One (comm, operation, size bucket). */
struct series {
    uint32_t serial;      /* 0: free slot */
    uint16_t func;        /* string id of the operation's name */
    uint8_t size, p2p;
    uint64_t ops, bytes;  /* counted at START */
    struct lat lat[2];    /* by timing */
    double iv_bytes, iv_seconds; /* completed with a latency since the last file */
};

struct comm {
    uint32_t serial;      /* 0: free slot */
    int described, finalized;
    struct nsc_comm_info info;
    uint64_t in_flight;
    uint64_t first_ticks, last_done_ticks;
    uint64_t gone_ns;     /* the first file that showed it finalized and idle (0: none yet) */
};

struct op {
    uint64_t id;          /* 0: free */
    uint32_t serial;      /* its series: (serial, func, size) */
    uint16_t func;
    uint8_t size, p2p;
    uint64_t start_ticks, end_ticks, gpu_start, gpu_end, touched_ns;
    uint64_t bytes;
    uint16_t nch, kch_done, live_kids;
    uint8_t kernel, stopped;
};

struct kid {
    uint64_t id;          /* 0: free */
    uint64_t parent;
    uint64_t gpu_start, gpu_end, stop_ticks;
    uint64_t orphan_pass; /* 1 + the pass it was orphaned in; 0: attached */
    uint8_t kch, stopped;
};

struct nsc_live {
    pthread_mutex_t mu;
    char path[1400], tmp[1500];
    char host[64];
    int pid;
    uint64_t ticks_per_sec;
    uint64_t pass, now_ns;
    int failing;          /* the last write failed (logged once) */

    struct nsc_id_map ops;  /* id -> struct op, at most NSC_LIVE_OPS */
    uint64_t *fifo;       /* op ids in start order */
    uint32_t fifo_head, fifo_len;
    struct nsc_id_map kids; /* id -> struct kid, at most NSC_LIVE_KIDS */
    uint64_t *orphans;    /* kid ids waiting for their parent's START */
    uint32_t norphans;
    struct series *series; /* open addressing, 2 x NSC_LIVE_SERIES */
    uint32_t nseries;
    struct comm *comms;   /* open addressing, 2 x MAX_COMMS_KNOWN */
    uint32_t ncomms;
    uint8_t dsize[65536]; /* datatype size by string id, 0: not looked up */
    uint64_t overflow;    /* ops not timed or series not created: a bound was hit */
    uint64_t retain_ns;   /* how long a finalized comm stays in the files (nsc_live_create) */
    int compacted;        /* comm_get made room once since the last file */
    uint64_t done_total;
};

static struct nsc_live *L; /* session mutex */
/* Set on the drainer while it holds mu for a pass: a hook called from
 * inside the pass (a chunk sealed, comms taken) must not lock again; any
 * other thread locks. */
static __thread int in_pass;

static inline uint64_t mix(uint64_t k) { return k * 0x9e3779b97f4a7c15ull; }

/* ---- tables ---- */

#define SERIES_CAP (2u * NSC_LIVE_SERIES)
#define COMMS_CAP (2u * MAX_COMMS_KNOWN)

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
    uint32_t i = (uint32_t)(mix(serial) >> 40) & (COMMS_CAP - 1);
    while (m->comms[i].serial && m->comms[i].serial != serial)
        i = (i + 1) & (COMMS_CAP - 1);
    return &m->comms[i];
}

/* Comms and series are removed only all together by rebuild(), so they
 * need no deletion of their own. */
static uint32_t series_get(struct nsc_live *m, uint32_t serial, uint16_t func, uint8_t size,
                           uint8_t p2p) {
    uint64_t key = (uint64_t)serial << 24 | (uint64_t)func << 8 | size;
    uint32_t i = (uint32_t)(mix(key) >> 40) & (SERIES_CAP - 1);
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
static void rebuild(struct nsc_live *m, const struct comm *src, uint32_t n,
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
                rebuild(m, all, n, comm_shown_ended);
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

/* ---- life cycle ---- */

static void free_live(struct nsc_live *m) {
    nsc_id_map_destroy(&m->ops);
    nsc_id_map_destroy(&m->kids);
    free(m->fifo);
    free(m->orphans);
    free(m->series);
    free(m->comms);
    free(m);
}

int nsc_live_create(const struct nsc_config *cfg, const struct nsc_session *s, char *err,
                    unsigned errlen) {
    if (!cfg->metrics_dir[0])
        return 0;
    struct nsc_live *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "NCCLSCOPE_METRICS_DIR: out of memory for the metrics");
        return -1;
    }
    int ops_ok = nsc_id_map_init(&m->ops, NSC_LIVE_OPS, sizeof(struct op), NSC_ID_MAP_FIXED) == 0;
    int kids_ok = nsc_id_map_init(&m->kids, NSC_LIVE_KIDS, sizeof(struct kid), NSC_ID_MAP_FIXED) == 0;
    m->fifo = calloc(NSC_LIVE_OPS, sizeof(*m->fifo));
    m->orphans = calloc(NSC_LIVE_KIDS, sizeof(*m->orphans));
    m->series = calloc(SERIES_CAP, sizeof(*m->series));
    m->comms = calloc(COMMS_CAP, sizeof(*m->comms));
    if (!ops_ok || !kids_ok || !m->fifo || !m->orphans || !m->series || !m->comms) {
        free_live(m);
        snprintf(err, errlen, "NCCLSCOPE_METRICS_DIR: out of memory for the metrics");
        return -1;
    }
    int n = snprintf(m->path, sizeof(m->path), "%s/%s-%u.prom", cfg->metrics_dir, s->host, s->pid);
    if (n < 0 || n >= (int)sizeof(m->path)) {
        free_live(m);
        snprintf(err, errlen, "NCCLSCOPE_METRICS_DIR: path too long");
        return -1;
    }
    /* node-exporter reads *.prom only: the temporary name never matches. */
    snprintf(m->tmp, sizeof(m->tmp), "%s.tmp", m->path);
    snprintf(m->host, sizeof(m->host), "%s", s->host);
    m->pid = (int)s->pid;
    m->ticks_per_sec = s->ticks_per_sec ? s->ticks_per_sec : 1000000000ull;
    /* A finalized comm's last counts stay in the file for two periods and
     * at least a minute: a collector scraping less often than we write
     * still sees them once (a short-lived comm could otherwise be shown in
     * one file only, between two scrapes, and never reach Prometheus). */
    uint64_t two = 2ull * cfg->metrics_seconds * 1000000000ull;
    m->retain_ns = two > RETAIN_MIN_NS ? two : RETAIN_MIN_NS;
    pthread_mutex_init(&m->mu, NULL);
    L = m;
    atomic_store_explicit(&nsc_live_on, m, memory_order_relaxed);
    return 0;
}

void nsc_live_destroy(void) {
    struct nsc_live *m = L;
    if (!m)
        return;
    L = NULL;
    atomic_store_explicit(&nsc_live_on, NULL, memory_order_relaxed);
    pthread_mutex_destroy(&m->mu);
    free_live(m);
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

/* Records an op's completion and forgets it. */
static void complete(struct nsc_live *m, struct op *o, int timed) {
    struct comm *c = comm_get(m, o->serial, 0);
    if (c) {
        if (c->in_flight)
            c->in_flight--;
        c->gone_ns = 0; /* after its end: its retention starts again with the next file */
        uint64_t end = o->end_ticks > o->start_ticks ? o->end_ticks : o->start_ticks;
        if (end > c->last_done_ticks)
            c->last_done_ticks = end;
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
            s->iv_bytes += (double)o->bytes;
            s->iv_seconds += sec;
        }
        m->done_total++;
    }
    op_del(m, o);
}

static int kernel_done(const struct op *o) { return o->kernel && o->nch && o->kch_done >= o->nch; }

/* Applies a child's accumulated state to its op. */
static void attach(struct nsc_live *m, struct op *o, struct kid *k) {
    o->touched_ns = m->now_ns;
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
    if (c)
        c->gone_ns = 0; /* an operation after its end (late records): not idle */
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
    o->nch = nch;
    o->kernel = nch && (atomic_load_explicit(&recorded_mask, memory_order_relaxed) >>
                        NSC_ET_KERNEL_CH & 1);
    o->touched_ns = m->now_ns;
}

void nsc_live_record(struct nsc_live *m, const struct nsc_rec *r) {
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
            if (kernel_done(o))
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
                if (k->kch) {
                    o->kch_done++;
                    if (kernel_done(o))
                        complete(m, o, 1);
                }
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
static void settle(struct nsc_live *m, uint64_t grace_ns) {
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
                if (kernel_done(o))
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
            int host_done = !o->kernel && o->stopped && !o->live_kids &&
                            m->now_ns - o->touched_ns >= grace_ns;
            if (!host_done && !kernel_done(o))
                break;
            complete(m, o, 1);
        }
        m->fifo_head = (m->fifo_head + 1) % NSC_LIVE_OPS;
        m->fifo_len--;
    }
}

void nsc_live_pass_begin(void) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    in_pass = 1;
    m->pass++;
    m->now_ns = nsc_clock_monotonic_ns();
}

void nsc_live_pass_end(void) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m)
        return;
    settle(m, GRACE_NS);
    in_pass = 0;
    pthread_mutex_unlock(&m->mu);
}

void nsc_live_comms(const struct nsc_comm_info *ci, unsigned n) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m || !n)
        return;
    int lock = !in_pass; /* the drainer's pass may seal a job and come here */
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

/* ---- the file ---- */

static double bus_factor(const char *func, int n) {
    if (!func || n <= 0)
        return 1.0;
    if (!strcmp(func, "AllReduce"))
        return 2.0 * (n - 1) / n;
    if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter") || !strcmp(func, "AlltoAll"))
        return (double)(n - 1) / n;
    return 1.0;
}

/* Label values: printable ASCII, with \ " and newline escaped. */
static void put_label(FILE *f, const char *v) {
    for (; *v; v++) {
        unsigned char ch = (unsigned char)*v;
        if (ch == '\\' || ch == '"')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch >= 0x20 && ch < 0x7f)
            fputc(ch, f);
        else
            fputc('_', f);
    }
}

static void comm_labels(FILE *f, const struct comm *c) {
    fprintf(f, "comm=\"%016" PRIx64 "\",rank=\"%d\"", c->described ? c->info.comm_id : 0,
            c->described ? c->info.rank : -1);
}

static void series_labels(FILE *f, const struct comm *c, const struct series *s, const char *op) {
    comm_labels(f, c);
    fputs(",op=\"", f);
    put_label(f, op);
    fprintf(f, "\",size=\"%s\"", size_name[s->size]);
}

struct snapshot {
    struct series *series;
    uint32_t nseries;
    struct comm *comms;
    uint32_t ncomms;
    uint64_t overflow, done_total, now_ticks;
};

/* A finalized comm with nothing in flight that files have shown so far for
 * retain_ns: forgotten now. */
static int comm_expired(const struct nsc_live *m, const struct comm *c) {
    return c->finalized && !c->in_flight && c->gone_ns && m->now_ns - c->gone_ns >= m->retain_ns;
}

/* Copies what the file shows; forgets finalized comms (and their series)
 * once shown for retain_ns, and restarts the interval bandwidth. Under mu. */
static int take_snapshot(struct nsc_live *m, struct snapshot *sn) {
    sn->series = malloc((m->nseries + 1) * sizeof(*sn->series));
    sn->comms = malloc((m->ncomms + 1) * sizeof(*sn->comms));
    if (!sn->series || !sn->comms)
        return -1;
    sn->nseries = sn->ncomms = 0;
    for (uint32_t i = 0; i < SERIES_CAP; i++)
        if (m->series[i].serial) {
            sn->series[sn->nseries++] = m->series[i];
            m->series[i].iv_bytes = m->series[i].iv_seconds = 0;
        }
    int dead = 0;
    for (uint32_t i = 0; i < COMMS_CAP; i++)
        if (m->comms[i].serial) {
            struct comm *c = &m->comms[i];
            if (c->finalized && !c->in_flight && !c->gone_ns) /* this file is the first */
                c->gone_ns = m->now_ns ? m->now_ns : 1;
            sn->comms[sn->ncomms++] = *c;
            dead += comm_expired(m, c);
        }
    sn->overflow = m->overflow;
    sn->done_total = m->done_total;
    sn->now_ticks = nsc_clock_ticks();
    if (dead) /* both tables without the expired comms */
        rebuild(m, sn->comms, sn->ncomms, comm_expired);
    m->compacted = 0;
    return 0;
}

static const struct comm *find_comm(const struct snapshot *sn, uint32_t serial) {
    for (uint32_t i = 0; i < sn->ncomms; i++)
        if (sn->comms[i].serial == serial)
            return &sn->comms[i];
    return NULL;
}

static void write_hist(FILE *f, const struct comm *c, const struct series *s, const char *op,
                       int t) {
    const struct lat *l = &s->lat[t];
    uint64_t cum = 0;
    for (unsigned i = 0; i <= NLAT; i++) {
        cum += l->b[i];
        fputs("ncclscope_latency_seconds_bucket{", f);
        series_labels(f, c, s, op);
        fprintf(f, ",timing=\"%s\",le=\"", timing_name[t]);
        if (i < NLAT)
            fprintf(f, "%g", lat_le[i]);
        else
            fputs("+Inf", f);
        fprintf(f, "\"} %" PRIu64 "\n", cum);
    }
    fputs("ncclscope_latency_seconds_sum{", f);
    series_labels(f, c, s, op);
    fprintf(f, ",timing=\"%s\"} %.9g\n", timing_name[t], l->sum);
    fputs("ncclscope_latency_seconds_count{", f);
    series_labels(f, c, s, op);
    fprintf(f, ",timing=\"%s\"} %" PRIu64 "\n", timing_name[t], l->count);
}

static void format(FILE *f, struct nsc_live *m, const struct snapshot *sn) {
    fprintf(f, "# HELP ncclscope_operations_total NCCL operations started (Coll, P2p, CeColl), per communicator, operation and per-rank message size.\n"
               "# TYPE ncclscope_operations_total counter\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!c || !c->described)
            continue; /* labels come with the comm's description, at the next chunk */
        fputs("ncclscope_operations_total{", f);
        series_labels(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?");
        fprintf(f, "} %" PRIu64 "\n", s->ops);
    }
    fprintf(f, "# HELP ncclscope_bytes_total Bytes of those operations (count x datatype size, per rank).\n"
               "# TYPE ncclscope_bytes_total counter\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!c || !c->described)
            continue;
        fputs("ncclscope_bytes_total{", f);
        series_labels(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?");
        fprintf(f, "} %" PRIu64 "\n", s->bytes);
    }
    fprintf(f, "# HELP ncclscope_latency_seconds Completed operations' latency: GPU time from KernelCh (timing=\"gpu\"), else enqueue to the last stop seen by the host (timing=\"host\").\n"
               "# TYPE ncclscope_latency_seconds histogram\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!c || !c->described)
            continue;
        for (int t = 0; t < 2; t++)
            if (s->lat[t].count)
                write_hist(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?", t);
    }
    fprintf(f, "# HELP ncclscope_busbw_bytes_per_second Bus bandwidth (nccl-tests' formula) of the operations completed since the previous file.\n"
               "# TYPE ncclscope_busbw_bytes_per_second gauge\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (s->iv_seconds <= 0 || !c || !c->described)
            continue;
        const char *op = nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?";
        int n = c && c->described ? c->info.nranks : 0;
        double bytes = s->iv_bytes;
        if (!s->p2p && n > 0 && (!strcmp(op, "AllGather") || !strcmp(op, "ReduceScatter")))
            bytes *= n; /* nccl-tests' size: the whole buffer */
        fputs("ncclscope_busbw_bytes_per_second{", f);
        series_labels(f, c, s, op);
        fprintf(f, "} %.6g\n", bytes / s->iv_seconds * (s->p2p ? 1.0 : bus_factor(op, n)));
    }
    fprintf(f, "# HELP ncclscope_operations_in_flight Operations started and not completed.\n"
               "# TYPE ncclscope_operations_in_flight gauge\n");
    for (uint32_t i = 0; i < sn->ncomms; i++) {
        if (!sn->comms[i].described)
            continue;
        fputs("ncclscope_operations_in_flight{", f);
        comm_labels(f, &sn->comms[i]);
        fprintf(f, "} %" PRIu64 "\n", sn->comms[i].in_flight);
    }
    fprintf(f, "# HELP ncclscope_seconds_since_last_completion Seconds since the communicator's last operation completed (since its first operation when none did).\n"
               "# TYPE ncclscope_seconds_since_last_completion gauge\n");
    for (uint32_t i = 0; i < sn->ncomms; i++) {
        const struct comm *c = &sn->comms[i];
        uint64_t last = c->last_done_ticks ? c->last_done_ticks : c->first_ticks;
        /* an ended comm waits for nothing: no gauge that would only grow
         * (and fire a hang alert) through its retention */
        if (!last || !c->described || c->finalized)
            continue;
        fputs("ncclscope_seconds_since_last_completion{", f);
        comm_labels(f, c);
        fprintf(f, "} %.3f\n",
                sn->now_ticks > last ? (double)(sn->now_ticks - last) / (double)m->ticks_per_sec : 0.0);
    }
    uint64_t drops = atomic_load_explicit(&nsc_thread_sentinel()->drops_ring, memory_order_relaxed);
    uint64_t records = 0;
    uint32_t nt = nsc_thread_count();
    for (uint32_t i = 0; i < nt; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        drops += atomic_load_explicit(&t->drops_ring, memory_order_relaxed);
        records += atomic_load_explicit(&t->ring.head, memory_order_relaxed);
    }
    fprintf(f, "# HELP ncclscope_records_total Records written into the rings.\n"
               "# TYPE ncclscope_records_total counter\n"
               "ncclscope_records_total{pid=\"%d\"} %" PRIu64 "\n"
               "# HELP ncclscope_dropped_records_total Records dropped: ring or record memory full, or a thread over NCCLSCOPE_MAX_THREADS.\n"
               "# TYPE ncclscope_dropped_records_total counter\n"
               "ncclscope_dropped_records_total{pid=\"%d\"} %" PRIu64 "\n"
               "# HELP ncclscope_recording 1 while ncclscope records, 0 after a stop command.\n"
               "# TYPE ncclscope_recording gauge\n"
               "ncclscope_recording{pid=\"%d\"} %d\n"
               "# HELP ncclscope_metrics_overflow_total Operations or series the metrics could not follow (a bound was reached).\n"
               "# TYPE ncclscope_metrics_overflow_total counter\n"
               "ncclscope_metrics_overflow_total{pid=\"%d\"} %" PRIu64 "\n",
            m->pid, records, m->pid, drops, m->pid, atomic_load_explicit(&recorded_mask, memory_order_relaxed) != 0, m->pid, sn->overflow);
}

/* The directory, as mkdir -p (0755: node-exporter runs as another user). */
static void make_dirs(const char *file) {
    char tmp[1400];
    snprintf(tmp, sizeof(tmp), "%s", file);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
}

int nsc_live_write(int final) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m)
        return 0;
    struct snapshot sn;
    memset(&sn, 0, sizeof(sn));
    pthread_mutex_lock(&m->mu);
    m->now_ns = nsc_clock_monotonic_ns();
    /* Host-timed ops whose grace ended while nothing was drained; at the
     * end, when everything was drained, every op that stopped. */
    settle(m, final ? 0 : GRACE_NS);
    int rc = take_snapshot(m, &sn);
    pthread_mutex_unlock(&m->mu);
    int err = ENOMEM;
    if (rc == 0) {
        int fd = open(m->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 && errno == ENOENT) {
            make_dirs(m->tmp);
            fd = open(m->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        }
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            err = errno;
            if (fd >= 0)
                close(fd);
            rc = -1;
        } else {
            format(f, m, &sn);
            int bad = ferror(f);
            if (fclose(f) != 0 || bad) {
                err = errno ? errno : EIO;
                rc = -1;
            } else if (rename(m->tmp, m->path) != 0) {
                err = errno;
                rc = -1;
            }
            if (rc != 0)
                unlink(m->tmp);
        }
    }
    free(sn.series);
    free(sn.comms);
    if (rc != 0 && !m->failing)
        nsc_log_warn("ncclscope: cannot write the metrics file %s: %s", m->path, strerror(err));
    else if (rc == 0 && m->failing)
        nsc_log_info("ncclscope: writing the metrics file %s works again", m->path);
    m->failing = rc != 0;
    return rc;
}

void nsc_live_remove(void) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (m)
        unlink(m->path);
}
