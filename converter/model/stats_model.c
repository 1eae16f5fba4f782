// SPDX-License-Identifier: Apache-2.0
/* stats_model.c - aggregating completed operations into the tables of
 * `ncclscope stats` and `report` (stats_model.h); reports/stats.c prints
 * them. */
#include "stats_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_track.h"
#include "decoded.h"
#include "event_types.h"
#include "gpu_clock.h"
#include "hash.h"
#include "op_rules.h"
#include "latency_hist.h"
#include "ops.h"
#include "parallel.h"

/* ---- aggregation rows ---- */

struct row {
    uint64_t comm_id;
    int nranks, is_p2p;
    char func[32], dtype[32];
    unsigned bucket;        /* log2 of the size bucket's upper bound */
    uint64_t bytes_sum;
    uint64_t ops;           /* rank-operations */
    uint64_t enqueue_only;  /* of which without a completion child */
    uint64_t colls;         /* distinct collectives (comm, function, seq) first seen here */
    /* ns, enqueue to completion (host), of the operations with a completion
     * child (KernelCh, ProxyOp) only: an enqueue-only operation's time ends
     * at the Coll's own stop, which is no latency and moves no data. */
    struct lat_hist done;
    /* GPU time: first KernelCh GPU start to last KernelCh GPU end, across
     * channels (one GPU clock: no mapping needed); queue time: enqueue to
     * the GPU start mapped to the host clock (gpu_clock.h). */
    struct lat_hist gpu, queue;
    uint64_t gpu_ops;       /* rank-operations with a GPU interval */
    uint64_t queue_ops;     /* of which with a mapped GPU clock */
    /* KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): rank-operations whose
     * enqueue asked for KernelCh, and those of a KernelCh session not asked
     * (no GPU time of their own: coll_track.h) */
    uint64_t sampled, unsampled;
    /* Wait (GPU start to the last rank's GPU start) and transfer (the last
     * rank's GPU start to this rank's GPU end), of the rank-operations of
     * collectives that every rank recorded a mapped GPU interval for and
     * whose kind moves no data before every rank arrived (split_kind). */
    struct lat_hist wait, xfer;
    uint64_t split_ops;
    struct row *merged;     /* -j: the whole's row this partial row went into */
    struct row *next;       /* every row, newest first */
    struct row *hnext;      /* its bucket of the aggregate's row index */
};

/* ---- stragglers: per (comm, seq), over all ranks ---- */

struct entry {
    uint64_t comm_id, seq;  /* key: comm ^ hash(func); seq + 1, 0 = free */
    uint64_t real_comm;
    uint64_t first_ns, last_ns;
    int32_t last_rank, first_rank;
    uint32_t ranks;
    char func[24];
    /* by GPU start (mapped to the host clock), over the ranks that have one */
    uint64_t gpu_first, gpu_last, gpu_last_enq;
    int32_t gpu_last_rank, gpu_first_rank;
    uint32_t gpu_ranks;
    int nranks;
    struct row *row;        /* the row that counted it (stats' count column) */
};

/* Per (comm, rank): how often its kernel started last in a collective and
 * how long the first rank waited for it then; split by where it was late. */
struct late_rank {
    uint64_t comm_id;
    int rank;
    uint64_t colls;         /* collectives with every rank's GPU start */
    uint64_t last, host_late, gpu_late;
    uint64_t wait_ns;
    struct late_rank *next;
};

/* A rank-operation's GPU interval on the host timeline, kept until every
 * file is read: only then is the collective's last GPU start known. */
struct sample {
    uint64_t key, seq;      /* its entry (entry_get's key and seq) */
    uint64_t gs, ge;
    struct row *row;
    void *caller;           /* --by-caller: its call site's row (NULL: none) */
};

#define ROW_INDEX 4096 /* buckets: a job of 20,000 comms makes 20,000 rows and more */

struct agg {
    struct nsc_stats_lost lost;
    struct row *rows;
    struct row **index;     /* ROW_INDEX buckets by (comm, bucket, p2p, func, dtype); lazily */
    struct entry *ent;
    size_t ent_cap, ent_n;
    uint64_t (*ekeys)[2];   /* a file's partial (-j): its entries' keys in insertion order */
    size_t nekeys, ekeys_cap;
    int keep_order;
    uint64_t ops;
    int damaged;
    const char *path;
    const struct nsc_stats_tags *tags; /* --by-caller's table (NULL: none) */
    const struct nsc_stats_hooks *hooks;
    const char *cmd;
    struct sample *samp;
    size_t nsamp, samp_cap;
    int oom;                /* a sample could not be kept: the split is left out */
    /* the filters (--skip-first, --time): rank-operations left out by each */
    uint64_t skip_first;
    int window;             /* --time given */
    double t_from, t_to;    /* seconds from t_origin */
    uint64_t t_origin;
    uint64_t skipped, outside;
    /* rank-operations of files that record KernelCh, and of them sampled */
    uint64_t kernel_ops, sampled_ops;
};

static unsigned bucket_of(uint64_t bytes) {
    unsigned b = 0;
    while (b < 63 && (1ull << b) < bytes)
        b++;
    return b;
}


/* The collectives whose data cannot move before every rank arrived: each
 * rank's result needs every rank's input (AllReduce, AllGather,
 * ReduceScatter) or each rank sends to every other (AlltoAll). A rank's
 * kernel waits there for the last one, so the last GPU start splits its GPU
 * time into wait and transfer. Broadcast and Reduce are left out: a rank
 * whose part is done (the root of a Broadcast, a leaf of a Reduce with its
 * data in the next rank's buffer) can finish before the last rank starts. */
static int split_kind(const char *func) {
    return !strcmp(func, "AllReduce") || !strcmp(func, "AllGather") ||
           !strcmp(func, "ReduceScatter") || !strcmp(func, "AlltoAll") ||
           !strcmp(func, "AllToAll");
}

static size_t entry_slot(size_t cap, uint64_t comm, uint64_t seq1) {
    return (size_t)(((comm ^ seq1) * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* The entry of (comm, seq), or NULL: adds none. */
static const struct entry *entry_find(const struct agg *a, uint64_t comm, uint64_t seq) {
    if (!a->ent_cap)
        return NULL;
    for (size_t s = entry_slot(a->ent_cap, comm, seq + 1); a->ent[s].seq;
         s = (s + 1) & (a->ent_cap - 1))
        if (a->ent[s].comm_id == comm && a->ent[s].seq == seq + 1)
            return &a->ent[s];
    return NULL;
}

static struct entry *entry_get(struct agg *a, uint64_t comm, uint64_t seq) {
    if ((a->ent_n + 1) * 2 > a->ent_cap) {
        size_t cap = a->ent_cap ? a->ent_cap * 2 : 4096;
        struct entry *n = calloc(cap, sizeof(*n));
        if (!n)
            return NULL;
        for (size_t i = 0; i < a->ent_cap; i++)
            if (a->ent[i].seq) {
                size_t s = entry_slot(cap, a->ent[i].comm_id, a->ent[i].seq);
                while (n[s].seq)
                    s = (s + 1) & (cap - 1);
                n[s] = a->ent[i];
            }
        free(a->ent);
        a->ent = n;
        a->ent_cap = cap;
    }
    size_t s = entry_slot(a->ent_cap, comm, seq + 1);
    while (a->ent[s].seq && !(a->ent[s].comm_id == comm && a->ent[s].seq == seq + 1))
        s = (s + 1) & (a->ent_cap - 1);
    if (!a->ent[s].seq) {
        if (a->keep_order && a->nekeys == a->ekeys_cap) {
            size_t cap = a->ekeys_cap ? a->ekeys_cap * 2 : 1024;
            uint64_t(*k)[2] = realloc(a->ekeys, cap * sizeof(*k));
            if (!k)
                return NULL;
            a->ekeys = k;
            a->ekeys_cap = cap;
        }
        if (a->keep_order) {
            a->ekeys[a->nekeys][0] = comm;
            a->ekeys[a->nekeys][1] = seq;
            a->nekeys++;
        }
        a->ent[s].comm_id = comm;
        a->ent[s].seq = seq + 1;
        a->ent_n++;
    }
    return &a->ent[s];
}

/* One file being read: the tracker is made at the first record, when the
 * SESSION block (always first) has told which event types were recorded. */
struct file_run {
    struct agg *a;
    int64_t shift;
    FILE *err;                 /* messages, when not straight to stderr (-j) */
    struct nsc_gpu_clock *gpu; /* per comm serial (NULL: no KernelCh recorded) */
    uint32_t ngpu;
    const char *path;
    int file;                  /* index in the command's file list */
    const struct nsc_decoder *d; /* while the file is read (NULL before its SESSION) */
    int done;                  /* the file was read to its end (on_done) */
    uint64_t *nseen;           /* --skip-first: per comm serial, its operations so far */
    uint32_t nseen_cap;
};

static int keep_sample(struct agg *a, const struct sample *x) {
    if (a->nsamp == a->samp_cap) {
        size_t cap = a->samp_cap ? a->samp_cap * 2 : 4096;
        struct sample *n = realloc(a->samp, cap * sizeof(*n));
        if (!n) {
            a->oom = 1;
            return -1;
        }
        a->samp = n;
        a->samp_cap = cap;
    }
    a->samp[a->nsamp++] = *x;
    return 0;
}

/* --skip-first and --time: 1 when the operation is left out (counted). The
 * first N operations of each rank of a comm (collectives and point-to-point
 * alike, in the order the rank completed them) are its warm-up: NCCL sets
 * up connections there. The window keeps what overlaps it, as convert's. */
static int filtered(struct file_run *fr, const struct nsc_op_done *op) {
    struct agg *a = fr->a;
    if (a->skip_first) {
        uint32_t s = op->comm_serial;
        if (s >= fr->nseen_cap && s < NSC_COMM_SERIAL_MAX) {
            uint32_t cap = s + 64;
            uint64_t *n = realloc(fr->nseen, cap * sizeof(*n));
            if (n) {
                memset(n + fr->nseen_cap, 0, (cap - fr->nseen_cap) * sizeof(*n));
                fr->nseen = n;
                fr->nseen_cap = cap;
            }
        }
        if (s < fr->nseen_cap && fr->nseen[s]++ < a->skip_first) {
            a->skipped++;
            return 1;
        }
    }
    if (a->window) {
        uint64_t end = op->end_ns ? op->end_ns : op->stop_ns > op->start_ns ? op->stop_ns
                                                                            : op->start_ns;
        double x = ((double)op->start_ns - (double)a->t_origin) / 1e9;
        double y = ((double)end - (double)a->t_origin) / 1e9;
        if (y < a->t_from || x > a->t_to) {
            a->outside++;
            return 1;
        }
    }
    return 0;
}

/* The row of (comm, size bucket, p2p, function, datatype), made when new
 * (NULL: out of memory). Found through a hash index: a job's rows number
 * its comms times their functions and sizes, and a list search per
 * operation made stats quadratic in them (19,384 comms: 13 s of CPU). */
static struct row *row_get(struct agg *a, uint64_t comm_id, unsigned bucket, int is_p2p,
                           const char *func, const char *dtype) {
    if (!a->index && !(a->index = calloc(ROW_INDEX, sizeof(*a->index))))
        return NULL;
    uint64_t h = nsc_fnv1a(NSC_FNV_SEED, &comm_id, sizeof(comm_id));
    h = nsc_fnv1a_str(nsc_fnv1a_str(nsc_mix64(h ^ bucket ^ ((uint64_t)is_p2p << 40)), func), dtype);
    struct row **slot = &a->index[h & (ROW_INDEX - 1)], *r;
    for (r = *slot; r; r = r->hnext)
        if (r->comm_id == comm_id && r->bucket == bucket && r->is_p2p == is_p2p &&
            !strcmp(r->func, func) && !strcmp(r->dtype, dtype))
            return r;
    if (!(r = calloc(1, sizeof(*r))))
        return NULL;
    r->comm_id = comm_id;
    r->is_p2p = is_p2p;
    r->bucket = bucket;
    snprintf(r->func, sizeof(r->func), "%s", func);
    snprintf(r->dtype, sizeof(r->dtype), "%s", dtype);
    r->next = a->rows;
    a->rows = r;
    r->hnext = *slot;
    *slot = r;
    return r;
}

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct file_run *fr = ud;
    struct agg *a = fr->a;
    if (filtered(fr, op))
        return;
    a->ops++;
    uint64_t bytes = nsc_op_bytes(op); /* nccl-tests' size */
    void *caller = a->tags && a->tags->op ? a->tags->op(a->tags->ud, op, bytes) : NULL;
    unsigned b = bucket_of(bytes);
    const char *func = op->func ? op->func : "?", *dtype = op->dtype ? op->dtype : "?";
    struct row *r = row_get(a, op->comm_id, b, op->is_p2p, func, dtype);
    if (!r)
        return;
    if (op->nranks > r->nranks)
        r->nranks = op->nranks;
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    if (!op->end_ns)
        r->enqueue_only++;
    /* enqueue to the Coll's own stop is no latency: only a completion counts */
    if (op->end_ns && end >= op->start_ns)
        lat_hist_add(&r->done, end - op->start_ns);
    r->ops++;
    r->sampled += op->kernel && op->sampled;
    r->unsampled += nsc_op_unsampled(op) != 0;
    a->kernel_ops += op->kernel != 0;
    a->sampled_ops += op->kernel && op->sampled;
    r->bytes_sum += bytes;
    /* GPU start and end on the host clock (0: unknown) */
    uint64_t gs = 0, ge = 0;
    if (op->gpu_start && op->gpu_end > op->gpu_start) {
        lat_hist_add(&r->gpu, op->gpu_end - op->gpu_start);
        r->gpu_ops++;
        const struct nsc_gpu_clock *g =
            op->comm_serial < fr->ngpu && fr->gpu[op->comm_serial].have ? &fr->gpu[op->comm_serial]
                                                                       : NULL;
        if (g) {
            gs = nsc_shift_ns(op->gpu_start, g->offset_ns);
            ge = nsc_shift_ns(op->gpu_end, g->offset_ns);
            /* A start mapped before its enqueue (a replayed trace, a bad
             * mapping) counts as no queueing rather than a huge one. */
            lat_hist_add(&r->queue, gs > op->start_ns ? gs - op->start_ns : 0);
            r->queue_ops++;
        }
    }
    if (a->hooks && a->hooks->op)
        a->hooks->op(a->hooks->ud, fr->file, fr->d, op, gs, ge);
    if (!op->is_p2p && gs && ge >= gs && split_kind(func) && !a->oom) {
        struct sample x = {op->comm_id ^ nsc_fnv1a_str(NSC_FNV_SEED, func), op->seq, gs, ge, r,
                           caller};
        keep_sample(a, &x);
    }
    if (!op->is_p2p) {
        /* NCCL numbers collectives per communicator and function. */
        struct entry *e = entry_get(a, op->comm_id ^ nsc_fnv1a_str(NSC_FNV_SEED, func), op->seq);
        if (e) {
            /* count collectives, not rank-operations / ranks: that is wrong
             * whenever not every rank's file is given */
            if (!e->ranks) {
                e->row = r;
                r->colls++;
            }
            if (!e->ranks || op->start_ns < e->first_ns) {
                e->first_ns = op->start_ns;
                e->first_rank = op->rank;
            }
            if (!e->ranks || op->start_ns > e->last_ns) {
                e->last_ns = op->start_ns;
                e->last_rank = op->rank;
            }
            e->ranks++;
            if (gs) {
                if (!e->gpu_ranks || gs < e->gpu_first) {
                    e->gpu_first = gs;
                    e->gpu_first_rank = op->rank;
                }
                if (!e->gpu_ranks || gs > e->gpu_last) {
                    e->gpu_last = gs;
                    e->gpu_last_rank = op->rank;
                    e->gpu_last_enq = op->start_ns;
                }
                e->gpu_ranks++;
            }
            e->real_comm = op->comm_id;
            if (op->nranks > e->nranks)
                e->nranks = op->nranks;
            snprintf(e->func, sizeof(e->func), "%s", func);
        }
    }
}

/* The GPU clock offsets, as convert maps them: a pre-pass over the file's
 * KernelCh, once the SESSION block said they exist. A replay re-timed the
 * host calls and kept the recorded GPU timers: GPU time stands, queue time
 * and GPU starts do not. */
static void on_session(void *ud, const struct nsc_decoder *d) {
    struct file_run *fr = ud;
    fr->d = d;
    const struct nsc_session *s = nsc_dec_session(d);
    if ((s->event_mask >> NSC_ET_KERNEL_CH) & 1 && !nsc_session_replayed(s) &&
        nsc_gpu_clock_scan(fr->path, fr->shift, &fr->gpu, &fr->ngpu) != 0) {
        fr->gpu = NULL;
        fr->ngpu = 0;
    }
}

/* before the tracker: an operation's API call is known when it completes */
static void on_record(void *ud, const struct nsc_decoder *d, uint32_t thread,
                      const struct nsc_rec *r) {
    struct file_run *fr = ud;
    fr->a->tags->record(fr->a->tags->ud, d, thread, r);
}

static void on_error(void *ud, const char *msg) {
    struct file_run *fr = ud;
    fr->a->damaged = 1;
    fprintf(fr->err ? fr->err : stderr, "ncclscope %s: %s\n", fr->a->cmd, msg);
}

static void add_losses(struct nsc_stats_lost *l, const struct nsc_decoder *d);

static void on_done(void *ud, const struct nsc_decoder *d) {
    struct file_run *fr = ud;
    add_losses(&fr->a->lost, d);
    fr->done = 1;
    if (fr->a->hooks && fr->a->hooks->file)
        fr->a->hooks->file(fr->a->hooks->ud, fr->file, d);
}

/* ---- the tables: rows in order, their numbers, stragglers ---- */

static int cmp_row(const void *x, const void *y) {
    const struct row *a = *(const struct row *const *)x, *b = *(const struct row *const *)y;
    if (a->comm_id != b->comm_id)
        return a->comm_id < b->comm_id ? -1 : 1;
    if (a->is_p2p != b->is_p2p)
        return a->is_p2p - b->is_p2p;
    int c = strcmp(a->func, b->func);
    if (c)
        return c;
    c = strcmp(a->dtype, b->dtype);
    if (c)
        return c;
    return (int)a->bucket - (int)b->bucket;
}

static int cmp_lag(const void *x, const void *y) {
    const struct entry *a = x, *b = y;
    uint64_t la = a->last_ns - a->first_ns, lb = b->last_ns - b->first_ns;
    return la < lb ? 1 : la > lb ? -1 : 0;
}


/* What every output format prints for a row. Each time says its clock:
 * GPU time (KernelCh %globaltimer, first GPU start to last GPU end across
 * channels), wait and transfer (GPU time split at the last rank's GPU
 * start, split_kind), queue time (enqueue to GPU start, on the host clock)
 * and host time (enqueue to completion, the last KernelCh/ProxyOp stop, of
 * the operations that have one). p50/p99/max are GPU time when the row has
 * any, else host time; an operation with neither is enqueue-only and shows
 * no latency: the Coll's own stop ends its enqueue, not its work (on NVLink
 * the default mask records no KernelCh and no ProxyOp). The bandwidths come
 * from transfer time when every rank-operation of the row has one (no wait
 * for peers in it: what nccl-tests, which starts all ranks together,
 * measures), else from GPU time, else from host time; none (< 0) for an
 * enqueue-only row. */
struct row_numbers {
    double p50, p99, max;    /* ns: of the clock `timing` names; < 0: none */
    double host_p50, host_p99, host_max; /* ns: enqueue to completion; < 0: none */
    double gpu_p50, gpu_p99, gpu_max, queue_p50, queue_p99; /* ns, < 0: none */
    double wait_p50, wait_p99, xfer_p50, xfer_p99; /* ns, < 0: none */
    double avg_bytes, algbw, busbw; /* bytes; GB/s (bytes per ns); < 0: none */
    double host_algbw, host_busbw;  /* from host_p50; < 0: none */
    uint64_t count;          /* distinct collectives, or p2p operations */
    int host_only;           /* no GPU time (host time, or nothing) */
    const char *timing;      /* "gpu", "gpu (sampled)", "gpu (partial)", "host-only", "enqueue-only" */
    const char *bw_from;     /* "transfer", "gpu", "host"; NULL: no bandwidth */
    const char *note;
};

/* The quantile q of h in ns, -1 when h is empty. */
static double q_or_none(const struct lat_hist *h, double q) {
    return h->count ? (double)lat_hist_quantile(h, q) : -1;
}

static struct row_numbers numbers(const struct row *r) {
    struct row_numbers n;
    n.host_p50 = q_or_none(&r->done, 0.5);
    n.host_p99 = q_or_none(&r->done, 0.99);
    n.host_max = r->done.count ? (double)r->done.max : -1;
    n.gpu_p50 = q_or_none(&r->gpu, 0.5);
    n.gpu_p99 = q_or_none(&r->gpu, 0.99);
    n.gpu_max = r->gpu.count ? (double)r->gpu.max : -1;
    n.queue_p50 = q_or_none(&r->queue, 0.5);
    n.queue_p99 = q_or_none(&r->queue, 0.99);
    n.wait_p50 = q_or_none(&r->wait, 0.5);
    n.wait_p99 = q_or_none(&r->wait, 0.99);
    n.xfer_p50 = q_or_none(&r->xfer, 0.5);
    n.xfer_p99 = q_or_none(&r->xfer, 0.99);
    n.host_only = r->gpu_ops == 0;
    int none = n.host_only && !r->done.count;
    n.timing = none ? "enqueue-only" : n.host_only ? "host-only"
               : r->unsampled ? "gpu (sampled)"
               : r->gpu_ops < r->ops ? "gpu (partial)" : "gpu";
    n.p50 = n.host_only ? n.host_p50 : n.gpu_p50;
    n.p99 = n.host_only ? n.host_p99 : n.gpu_p99;
    n.max = n.host_only ? n.host_max : n.gpu_max;
    n.avg_bytes = r->ops ? (double)r->bytes_sum / (double)r->ops : 0;
    double bf = nsc_op_bus_factor(r->func, r->is_p2p, r->nranks); /* nccl-tests' (op_rules.h) */
    /* bytes / 0 ns (a sub-ns sample) is no bandwidth either, as before */
    n.host_algbw = n.host_p50 < 0 ? -1 : n.host_p50 > 0 ? n.avg_bytes / n.host_p50 : 0;
    n.host_busbw = n.host_algbw < 0 ? -1 : n.host_algbw * bf;
    double t = -1;
    n.bw_from = NULL;
    /* KernelCh sampled: the sampled rank-operations stand for the row */
    if (r->split_ops && r->split_ops == (r->unsampled ? r->gpu_ops : r->ops)) {
        t = n.xfer_p50;
        n.bw_from = "transfer";
    } else if (!n.host_only) {
        t = n.gpu_p50;
        n.bw_from = "gpu";
    } else if (!none) {
        t = n.host_p50;
        n.bw_from = "host";
    }
    n.algbw = t < 0 ? -1 : t > 0 ? n.avg_bytes / t : 0;
    n.busbw = n.algbw < 0 ? -1 : n.algbw * bf;
    n.count = r->is_p2p ? r->ops : r->colls;
    n.note = none && r->unsampled ? "KernelCh not sampled for any of them (enqueue only)"
             : none ? "no completion recorded (enqueue only)"
             : r->unsampled ? "GPU times of the sampled operations only"
             : r->enqueue_only ? "some enqueue only" : "";
    return n;
}

/* Stragglers by GPU start, per (comm, rank), from every collective that has
 * all its ranks' GPU starts. The rank whose kernel started last made the
 * others wait (last - first GPU start); it was late on the host when most
 * of that came from its enqueue (its enqueue - the earliest enqueue >= half
 * the lag), else on the GPU (enqueued on time, its stream started it late).
 * Sorted by wait, largest first. */
static int cmp_late(const void *x, const void *y) {
    const struct late_rank *a = *(const struct late_rank *const *)x,
                           *b = *(const struct late_rank *const *)y;
    if (a->wait_ns != b->wait_ns)
        return a->wait_ns < b->wait_ns ? 1 : -1;
    if (a->comm_id != b->comm_id)
        return a->comm_id < b->comm_id ? -1 : 1;
    return a->rank - b->rank;
}

static struct late_rank *late_of(struct late_rank **list, size_t *n, uint64_t comm, int rank) {
    for (struct late_rank *l = *list; l; l = l->next)
        if (l->comm_id == comm && l->rank == rank)
            return l;
    struct late_rank *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->comm_id = comm;
    l->rank = rank;
    l->next = *list;
    *list = l;
    (*n)++;
    return l;
}

/* Returns the ranks as a sorted array (*n entries; free the array and the
 * list through it), NULL when there is none. */
static struct late_rank **late_ranks(const struct agg *a, size_t *n) {
    struct late_rank *list = NULL, *comms = NULL;
    size_t ncomms = 0;
    *n = 0;
    for (size_t i = 0; i < a->ent_cap; i++) {
        const struct entry *e = &a->ent[i];
        if (!e->seq || e->gpu_ranks < 2 || e->gpu_ranks != e->ranks)
            continue;
        uint64_t lag = e->gpu_last - e->gpu_first;
        uint64_t host = e->gpu_last_enq > e->first_ns ? e->gpu_last_enq - e->first_ns : 0;
        struct late_rank *l = late_of(&list, n, e->real_comm, e->gpu_last_rank);
        if (!l)
            continue;
        l->last++;
        l->wait_ns += lag;
        if (host * 2 >= lag)
            l->host_late++;
        else
            l->gpu_late++;
    }
    /* how many such collectives each comm had, for "how often" (a list per
     * comm: comms are few, collectives many) */
    for (size_t i = 0; i < a->ent_cap; i++) {
        const struct entry *e = &a->ent[i];
        if (!e->seq || e->gpu_ranks < 2 || e->gpu_ranks != e->ranks)
            continue;
        struct late_rank *c = late_of(&comms, &ncomms, e->real_comm, -1);
        if (c)
            c->colls++;
    }
    for (struct late_rank *l = list; l; l = l->next)
        for (struct late_rank *c = comms; c; c = c->next)
            if (c->comm_id == l->comm_id)
                l->colls = c->colls;
    for (struct late_rank *c = comms, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    if (!list)
        return NULL;
    struct late_rank **v = calloc(*n, sizeof(*v));
    size_t k = 0;
    for (struct late_rank *l = list, *nx; l; l = nx) {
        nx = l->next;
        if (v)
            v[k++] = l;
        else
            free(l);
    }
    if (!v) {
        *n = 0;
        return NULL;
    }
    qsort(v, *n, sizeof(*v), cmp_late);
    return v;
}

static void add_losses(struct nsc_stats_lost *l, const struct nsc_decoder *d) {
    const struct nsc_losses *dl = nsc_dec_losses(d);
    const struct nsc_stats_header *h = nsc_dec_stats(d);
    l->records += dl->total;
    l->dropped += dl->dropped;
    l->write += dl->write;
    l->exit += dl->exit;
    l->events += dl->events;
    l->failed_writes += h->write_errors;
    l->string_overflow += h->string_overflow;
    l->unnamed += nsc_dec_unnamed(d);
    l->comm_overflow += h->comm_overflow;
    if (h->write_errno)
        l->write_errno = h->write_errno;
    if (h->memory_peak > l->memory_peak) {
        l->memory_peak = h->memory_peak;
        l->memory_budget = h->memory_budget;
    }
}


/* The collectives seen on more than one rank, largest enqueue lag first
 * (NULL: out of memory; *ns = 0 then). */
static struct entry *by_enqueue_lag(const struct agg *a, size_t *ns) {
    *ns = 0;
    struct entry *st = calloc(a->ent_n + 1, sizeof(*st));
    for (size_t i = 0; st && i < a->ent_cap; i++)
        if (a->ent[i].seq && a->ent[i].ranks > 1)
            st[(*ns)++] = a->ent[i];
    if (st)
        qsort(st, *ns, sizeof(*st), cmp_lag);
    return st;
}

/* ---- several files at a time (-j): a partial aggregate per file, merged
 * in file order into the same tables a sequential read makes ---- */

static void agg_free(struct agg *a) {
    for (struct row *r = a->rows, *n; r; r = n) {
        n = r->next;
        free(r);
    }
    free(a->index);
    free(a->ent);
    free(a->ekeys);
    free(a->samp);
}

static void merge_losses(struct nsc_stats_lost *into, const struct nsc_stats_lost *l) {
    into->records += l->records;
    into->dropped += l->dropped;
    into->write += l->write;
    into->exit += l->exit;
    into->events += l->events;
    into->failed_writes += l->failed_writes;
    into->string_overflow += l->string_overflow;
    into->unnamed += l->unnamed;
    into->comm_overflow += l->comm_overflow;
    if (l->write_errno)
        into->write_errno = l->write_errno;
    if (l->memory_peak > into->memory_peak) {
        into->memory_peak = l->memory_peak;
        into->memory_budget = l->memory_budget;
    }
}

/* The partial of a later file into the whole: rows in the order the file
 * made them, entries in the order it met them, and ties decided as a
 * sequential read decides them (an earlier file's value stays unless a
 * later one is strictly smaller / larger). */
static int merge_agg(struct agg *into, struct agg *p) {
    into->ops += p->ops;
    into->damaged |= p->damaged;
    merge_losses(&into->lost, &p->lost);
    size_t nrows = 0;
    for (struct row *r = p->rows; r; r = r->next)
        nrows++;
    struct row **made = malloc((nrows + 1) * sizeof(*made));
    if (!made)
        return -1;
    size_t k = nrows;
    for (struct row *r = p->rows; r; r = r->next)
        made[--k] = r; /* the list is newest first */
    for (k = 0; k < nrows; k++) {
        struct row *r = made[k];
        struct row *g = row_get(into, r->comm_id, r->bucket, r->is_p2p, r->func, r->dtype);
        if (!g) {
            free(made);
            return -1;
        }
        if (r->nranks > g->nranks)
            g->nranks = r->nranks;
        r->merged = g;
        g->enqueue_only += r->enqueue_only;
        g->colls += r->colls; /* less the ones the whole has already (below) */
        lat_hist_merge(&g->done, &r->done);
        lat_hist_merge(&g->gpu, &r->gpu);
        lat_hist_merge(&g->queue, &r->queue);
        lat_hist_merge(&g->wait, &r->wait);
        lat_hist_merge(&g->xfer, &r->xfer);
        g->split_ops += r->split_ops;
        g->ops += r->ops;
        g->bytes_sum += r->bytes_sum;
        g->gpu_ops += r->gpu_ops;
        g->queue_ops += r->queue_ops;
        g->sampled += r->sampled;
        g->unsampled += r->unsampled;
    }
    free(made);
    for (size_t i = 0; i < p->nekeys; i++) {
        struct entry *e = entry_get(p, p->ekeys[i][0], p->ekeys[i][1]);
        struct entry *g = entry_get(into, p->ekeys[i][0], p->ekeys[i][1]);
        if (!e || !g)
            return -1;
        if (!g->ranks) {
            uint64_t c = g->comm_id, q = g->seq;
            *g = *e;
            g->comm_id = c;
            g->seq = q;
            g->row = e->row ? e->row->merged : NULL;
            continue;
        }
        /* an earlier file counted it already, as a sequential read does */
        if (e->ranks && e->row && e->row->merged && e->row->merged->colls)
            e->row->merged->colls--;
        if (e->ranks && e->first_ns < g->first_ns) {
            g->first_ns = e->first_ns;
            g->first_rank = e->first_rank;
        }
        if (e->ranks && e->last_ns > g->last_ns) {
            g->last_ns = e->last_ns;
            g->last_rank = e->last_rank;
        }
        g->ranks += e->ranks;
        if (e->gpu_ranks) {
            if (!g->gpu_ranks || e->gpu_first < g->gpu_first) {
                g->gpu_first = e->gpu_first;
                g->gpu_first_rank = e->gpu_first_rank;
            }
            if (!g->gpu_ranks || e->gpu_last > g->gpu_last) {
                g->gpu_last = e->gpu_last;
                g->gpu_last_rank = e->gpu_last_rank;
                g->gpu_last_enq = e->gpu_last_enq;
            }
            g->gpu_ranks += e->gpu_ranks;
        }
        if (e->nranks > g->nranks)
            g->nranks = e->nranks;
        if (e->ranks) {
            g->real_comm = e->real_comm;
            memcpy(g->func, e->func, sizeof(g->func));
        }
    }
    into->oom |= p->oom;
    for (size_t i = 0; i < p->nsamp && !into->oom; i++) {
        struct sample x = p->samp[i];
        x.row = x.row ? x.row->merged : NULL;
        if (x.row)
            keep_sample(into, &x);
    }
    into->skipped += p->skipped;
    into->outside += p->outside;
    into->kernel_ops += p->kernel_ops;
    into->sampled_ops += p->sampled_ops;
    return 0;
}

/* Once every file is read: each kept GPU interval against its collective's
 * last GPU start. Only collectives that every rank of the comm recorded a
 * mapped GPU start for (the last one is known) are split; wait is at most
 * the GPU time (a mapping off by a few microseconds must not make transfer
 * negative), so wait + transfer = GPU time for every one. */
static void split_samples(struct agg *a) {
    if (a->oom) {
        fprintf(stderr, "ncclscope %s: out of memory: wait and transfer times left out\n", a->cmd);
        return;
    }
    for (size_t i = 0; i < a->nsamp; i++) {
        const struct sample *x = &a->samp[i];
        const struct entry *e = entry_find(a, x->key, x->seq);
        if (!e || e->nranks < 1 || e->gpu_ranks != (uint32_t)e->nranks ||
            e->ranks != (uint32_t)e->nranks)
            continue;
        uint64_t gpu = x->ge - x->gs, wait = e->gpu_last > x->gs ? e->gpu_last - x->gs : 0;
        if (wait > gpu)
            wait = gpu;
        lat_hist_add(&x->row->wait, wait);
        lat_hist_add(&x->row->xfer, gpu - wait);
        x->row->split_ops++;
        if (x->caller && a->tags->split)
            a->tags->split(x->caller, wait, gpu - wait);
    }
}

struct par {
    const struct nsc_stats_input *o;
    struct agg *whole;
    struct agg *part;   /* per file */
    struct nsc_msgs msgs; /* per file: its messages */
    int *rc;
    int failed;
};

static void par_work(void *ud, int i) {
    struct par *p = ud;
    struct agg *a = &p->part[i];
    a->keep_order = 1;
    a->cmd = p->whole->cmd;
    a->skip_first = p->whole->skip_first;
    a->window = p->whole->window;
    a->t_from = p->whole->t_from;
    a->t_to = p->whole->t_to;
    a->t_origin = p->whole->t_origin;
    a->path = p->o->files[i];
    FILE *err = nsc_msgs_open(&p->msgs, i);
    struct file_run fr = {.a = a, .shift = p->o->shift_ns ? p->o->shift_ns[i] : 0, .err = err,
                          .path = p->o->files[i], .file = i};
    struct nsc_ops_hooks h = {.session = on_session, .op = on_op, .error = on_error, .done = on_done};
    p->rc[i] = nsc_ops_pass(p->o->files[i], fr.shift, &h, &fr);
    free(fr.gpu);
    free(fr.nseen);
    nsc_msgs_close(err);
}

static void par_in_order(void *ud, int i) {
    struct par *p = ud;
    nsc_msgs_flush(&p->msgs, i, stderr);
    if (p->rc[i] < 0 || merge_agg(p->whole, &p->part[i]) != 0)
        p->failed = 1;
    agg_free(&p->part[i]);
    memset(&p->part[i], 0, sizeof(p->part[i]));
}

static int stats_parallel(const struct nsc_stats_input *o, struct agg *a, int jobs) {
    struct par p = {o, a, calloc((size_t)o->nfiles, sizeof(struct agg)), {0},
                    calloc((size_t)o->nfiles, sizeof(int)), 0};
    int rc = -1;
    if (p.part && p.rc && nsc_msgs_init(&p.msgs, o->nfiles) == 0 &&
        nsc_parallel(o->nfiles, jobs, par_work, par_in_order, &p) == 0)
        rc = p.failed ? -1 : 0;
    free(p.part);
    nsc_msgs_free(&p.msgs);
    free(p.rc);
    return rc;
}

/* The job's start, as convert takes it: the earliest SESSION start over the
 * files, on the merged timeline (a file without one adds nothing). */
static uint64_t job_start(const struct nsc_stats_input *o) {
    uint64_t t0 = UINT64_MAX;
    for (int i = 0; i < o->nfiles; i++) {
        struct nsc_session s;
        if (nsc_dec_read_session(o->files[i], &s) != 0)
            continue;
        uint64_t t = nsc_shift_ns(s.start.mono_ns, o->shift_ns ? o->shift_ns[i] : 0);
        if (t < t0)
            t0 = t;
    }
    return t0 == UINT64_MAX ? 0 : t0;
}

/* One pass over the files into *a: in parallel (-j) unless something must
 * see the files in order (--by-caller follows API calls across a file's
 * records; the hooks' owner keeps no locks). Returns 0, 2 (damaged input) or
 * 3 (out of memory: *a freed). */
static int aggregate(const struct nsc_stats_input *o, struct agg *a) {
    memset(a, 0, sizeof(*a));
    a->hooks = o->hooks;
    a->tags = o->tags;
    a->cmd = o->cmd ? o->cmd : "stats";
    a->skip_first = o->skip_first;
    if (o->window) {
        a->window = 1;
        a->t_from = o->t_from;
        a->t_to = o->t_to;
        a->t_origin = job_start(o);
    }
    int jobs = o->jobs > 0 ? o->jobs : nsc_jobs_default();
    int sequential = a->tags || a->hooks || jobs <= 1 || o->nfiles <= 1;
    if (!sequential && stats_parallel(o, a, jobs) != 0) {
        fprintf(stderr, "ncclscope %s: out of memory\n", a->cmd);
        agg_free(a);
        return 3;
    }
    for (int i = 0; i < o->nfiles && sequential; i++) {
        if (a->tags && a->tags->file)
            a->tags->file(a->tags->ud);
        a->path = o->files[i];
        struct file_run fr = {.a = a, .shift = o->shift_ns ? o->shift_ns[i] : 0,
                              .path = o->files[i], .file = i};
        struct nsc_ops_hooks h = {.session = on_session,
                                  .record = a->tags && a->tags->record ? on_record : NULL,
                                  .op = on_op, .error = on_error, .done = on_done};
        int rc = nsc_ops_pass(o->files[i], fr.shift, &h, &fr);
        free(fr.gpu);
        free(fr.nseen);
        if (!fr.done && a->hooks && a->hooks->file) /* could not be opened */
            a->hooks->file(a->hooks->ud, i, NULL);
        if (rc < 0) {
            fprintf(stderr, "ncclscope %s: out of memory\n", a->cmd);
            agg_free(a);
            return 3;
        }
    }
    split_samples(a);
    return a->damaged ? 2 : 0;
}

static void coll_of(struct nsc_stats_coll *c, const struct entry *e) {
    c->comm_id = e->real_comm;
    c->seq = e->seq - 1;
    snprintf(c->func, sizeof(c->func), "%s", e->func);
    c->ranks = e->ranks;
}

/* The wait matrix of one comm (NULL: out of memory). */
static struct nsc_stats_waits *waits_of(struct nsc_stats_result *res, uint64_t comm, int nranks) {
    for (size_t i = 0; i < res->nwaits; i++)
        if (res->waits[i].comm_id == comm)
            return &res->waits[i];
    struct nsc_stats_waits *v = realloc(res->waits, (res->nwaits + 1) * sizeof(*v));
    if (!v)
        return NULL;
    res->waits = v;
    struct nsc_stats_waits *w = &v[res->nwaits];
    w->comm_id = comm;
    w->nranks = nranks;
    w->wait_ns = calloc((size_t)nranks * (size_t)nranks, sizeof(*w->wait_ns));
    w->count = calloc((size_t)nranks * (size_t)nranks, sizeof(*w->count));
    if (!w->wait_ns || !w->count) {
        free(w->wait_ns);
        free(w->count);
        return NULL;
    }
    res->nwaits++;
    return w;
}

/* Largest comm size in the result's matrices: ranks beyond it are not kept. */
#define WAITS_MAX_RANKS 512

/* Copies the aggregate into *res (sorted rows, per-rank stragglers, the
 * wait matrices, the top collectives by enqueue lag). Returns 0, or -1 out
 * of memory (*res holds what was filled; free it). */
static int fill_result(const struct nsc_stats_input *o, const struct agg *a,
                       struct nsc_stats_result *res) {
    memset(res, 0, sizeof(*res));
    res->ops = a->ops;
    res->skipped = a->skipped;
    res->outside = a->outside;
    res->kernel_ops = a->kernel_ops;
    res->sampled_ops = a->sampled_ops;
    res->lost = a->lost;
    size_t nrows = 0;
    for (struct row *r = a->rows; r; r = r->next)
        nrows++;
    struct row **v = calloc(nrows + 1, sizeof(*v));
    res->rows = calloc(nrows + 1, sizeof(*res->rows));
    if (!v || !res->rows) {
        free(v);
        return -1;
    }
    size_t k = 0;
    for (struct row *r = a->rows; r; r = r->next)
        v[k++] = r;
    qsort(v, nrows, sizeof(*v), cmp_row);
    for (size_t i = 0; i < nrows; i++) {
        const struct row *r = v[i];
        struct row_numbers n = numbers(r);
        struct nsc_stats_row *x = &res->rows[i];
        x->comm_id = r->comm_id;
        x->nranks = r->nranks;
        x->is_p2p = r->is_p2p;
        x->host_only = n.host_only;
        snprintf(x->func, sizeof(x->func), "%s", r->func);
        snprintf(x->dtype, sizeof(x->dtype), "%s", r->dtype);
        x->bucket = r->bucket;
        x->count = n.count;
        x->rank_ops = r->ops;
        x->gpu_ops = r->gpu_ops;
        x->sampled = r->sampled;
        x->unsampled = r->unsampled;
        x->enqueue_only = r->enqueue_only;
        x->p50 = n.p50;
        x->p99 = n.p99;
        x->max = n.max;
        x->gpu_p50 = n.gpu_p50;
        x->gpu_p99 = n.gpu_p99;
        x->queue_p50 = n.queue_p50;
        x->queue_p99 = n.queue_p99;
        x->host_p50 = n.host_p50;
        x->host_p99 = n.host_p99;
        x->host_max = n.host_max;
        x->gpu_max = n.gpu_max;
        x->host_algbw = n.host_algbw;
        x->host_busbw = n.host_busbw;
        x->wait_p50 = n.wait_p50;
        x->wait_p99 = n.wait_p99;
        x->xfer_p50 = n.xfer_p50;
        x->xfer_p99 = n.xfer_p99;
        x->split_ops = r->split_ops;
        x->avg_bytes = n.avg_bytes;
        x->algbw = n.algbw;
        x->busbw = n.busbw;
        x->timing = n.timing;
        x->note = n.note;
        x->bw_from = n.bw_from;
    }
    res->nrows = nrows;
    free(v);
    size_t nlate = 0;
    struct late_rank **late = late_ranks(a, &nlate);
    if (nlate && (res->late = calloc(nlate, sizeof(*res->late))) != NULL) {
        for (size_t i = 0; i < nlate; i++)
            res->late[i] = (struct nsc_stats_late){late[i]->comm_id, late[i]->rank,
                                                   late[i]->colls, late[i]->last,
                                                   late[i]->host_late, late[i]->gpu_late,
                                                   late[i]->wait_ns};
        res->nlate = nlate;
    }
    for (size_t i = 0; i < nlate; i++)
        free(late[i]);
    free(late);
    /* the matrices, from the collectives late_ranks counts */
    for (size_t i = 0; i < a->ent_cap; i++) {
        const struct entry *e = &a->ent[i];
        if (!e->seq || e->gpu_ranks < 2 || e->gpu_ranks != e->ranks)
            continue;
        uint64_t lag = e->gpu_last - e->gpu_first;
        if (!res->worst_gpu.ranks || lag > res->worst_gpu.last_ns - res->worst_gpu.first_ns) {
            coll_of(&res->worst_gpu, e);
            res->worst_gpu.last_rank = e->gpu_last_rank;
            res->worst_gpu.first_rank = e->gpu_first_rank;
            res->worst_gpu.first_ns = e->gpu_first;
            res->worst_gpu.last_ns = e->gpu_last;
        }
        if (!o->waits || e->nranks > WAITS_MAX_RANKS || e->gpu_last_rank < 0 || e->gpu_first_rank < 0 ||
            e->gpu_last_rank >= e->nranks || e->gpu_first_rank >= e->nranks)
            continue;
        struct nsc_stats_waits *w = waits_of(res, e->real_comm, e->nranks);
        if (!w || w->nranks != e->nranks)
            continue;
        size_t c = (size_t)e->gpu_last_rank * (size_t)w->nranks + (size_t)e->gpu_first_rank;
        w->wait_ns[c] += lag;
        w->count[c]++;
    }
    size_t ns = 0;
    struct entry *st = by_enqueue_lag(a, &ns);
    size_t top = ns < (size_t)o->top ? ns : (size_t)o->top;
    if (top && !(res->by_enqueue = calloc(top, sizeof(*res->by_enqueue))))
        top = 0;
    for (size_t i = 0; i < top; i++) {
        struct nsc_stats_coll *c = &res->by_enqueue[i];
        coll_of(c, &st[i]);
        c->last_rank = st[i].last_rank;
        c->first_rank = st[i].first_rank;
        c->first_ns = st[i].first_ns;
        c->last_ns = st[i].last_ns;
    }
    res->nby_enqueue = top;
    free(st);
    return 0;
}

int nsc_stats_model_run(const struct nsc_stats_input *in, struct nsc_stats_result *res) {
    struct agg a;
    if (res)
        memset(res, 0, sizeof(*res));
    int rc = aggregate(in, &a);
    if (rc == 3)
        return rc;
    if (res && fill_result(in, &a, res) != 0) {
        fprintf(stderr, "ncclscope %s: out of memory\n", a.cmd);
        nsc_stats_result_free(res);
        rc = 3;
    }
    agg_free(&a);
    return rc;
}

void nsc_stats_result_free(struct nsc_stats_result *res) {
    free(res->rows);
    free(res->late);
    for (size_t i = 0; i < res->nwaits; i++) {
        free(res->waits[i].wait_ns);
        free(res->waits[i].count);
    }
    free(res->waits);
    free(res->by_enqueue);
    memset(res, 0, sizeof(*res));
}
