// SPDX-License-Identifier: Apache-2.0
/* hang.c - stuck operations of every rank, joined by commHash (hang.h). */
#include "hang.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "block_payload.h"
#include "json_writer.h"
#include "coll_track.h"
#include "ops.h"
#include "parallel.h"
#include "event_types.h"

#define HANG_MAX_RANKS (1 << 20)

/* A rank of a communicator, as one file described it. */
struct member {
    uint64_t comm;
    int rank, nranks;
    char name[96];
};

/* Collectives a rank enqueued, per (comm, rank, function). */
struct seqs {
    uint64_t comm;
    int rank;
    char func[32];
    uint64_t min, max, n;
    int unrecorded; /* a file of this rank records no KernelCh: completion unseen */
    /* The highest seqNumber whose every channel's kernel was seen to stop:
     * the ones before it completed too (a comm's collectives run in order
     * on one stream), whatever their own records lack. */
    uint64_t done_max;
    int has_done;
};

/* Point-to-point operations a rank enqueued, per (comm, rank, function, peer). */
struct pairs {
    uint64_t comm;
    int rank, peer;
    char func[32];
    uint64_t n;
};

/* A ProxyOp of a stuck operation as the watchdog saw it in the process
 * (a HANG block). */
struct wd_proxy {
    int peer, nsteps;
    unsigned ch, is_send, done;
    uint32_t steps_open;
    int lowest_open;
    uint16_t waiting[5];
};

struct stuck {
    uint64_t comm, id;
    int rank, is_p2p, peer, nch;
    char func[32];
    uint64_t seq, start_ns;
    uint32_t kch_done, stopped;
    struct nsc_track_child *open;
    uint32_t nopen;
    /* From a HANG block (watchdog = 1): channels by bitmask, ProxyOps with
     * their steps by what they wait for, instead of `open`. */
    int watchdog;
    uint64_t ch_started, ch_done;
    int kernel_tracked;
    struct wd_proxy *proxies;
    uint32_t nproxies;
};

#define VEC(T) struct { T *v; size_t n, cap; }
#define PUSH(vec, x)                                                                            \
    do {                                                                                        \
        if ((vec).n == (vec).cap) {                                                             \
            size_t c_ = (vec).cap ? (vec).cap * 2 : 16;                                         \
            void *p_ = realloc((vec).v, c_ * sizeof(*(vec).v));                                 \
            if (!p_)                                                                            \
                break;                                                                          \
            (vec).v = p_;                                                                       \
            (vec).cap = c_;                                                                     \
        }                                                                                       \
        (vec).v[(vec).n++] = (x);                                                               \
    } while (0)

struct job {
    size_t seqs_last, pairs_last; /* the last entries found: ops of one comm come in runs */
    VEC(struct member) members;
    VEC(struct seqs) seqs;
    VEC(struct pairs) pairs;
    VEC(struct stuck) stuck;
    int damaged;
    uint64_t ops;
    uint64_t overtaken; /* left open below a completed seqNumber: not stuck */
    /* From the files' latest HANG blocks: how many had one, and what their
     * watchdogs could not watch (a full slab) or attach (orphans). */
    int hang_files;
    uint64_t unwatched, orphans;
    /* Files whose session records no KernelCh: there an operation without
     * an open ProxyOp counts as completed once enqueued. */
    int unrecorded_files;
};

/* The ops the file's latest HANG block says were in flight; `stale` once
 * the records show one completed. */
#define RECENT 4096
struct file_run {
    struct job *j;
    FILE *err;               /* its messages (stderr, or a buffer under -j) */
    const char *path;
    uint32_t mask;
    int done;                /* on_done ran: the file was opened and read */
    VEC(struct stuck) wd;
    unsigned char *wd_stale;
    uint64_t recent[RECENT]; /* ids of the latest completed operations (a ring) */
    uint64_t nrecent;
    int wd_seen;             /* a HANG block was read; its counts: */
    uint64_t wd_full, wd_orphans;
};

static void free_stuck(struct stuck *s) {
    free(s->open);
    free(s->proxies);
}

static struct seqs *seqs_of(struct job *j, uint64_t comm, int rank, const char *func) {
    for (size_t k = 0; k <= j->seqs.n; k++) {
        size_t i = k ? k - 1 : j->seqs_last;
        if (i < j->seqs.n && j->seqs.v[i].comm == comm && j->seqs.v[i].rank == rank &&
            !strcmp(j->seqs.v[i].func, func)) {
            j->seqs_last = i;
            return &j->seqs.v[i];
        }
    }
    struct seqs s = {.comm = comm, .rank = rank};
    snprintf(s.func, sizeof(s.func), "%s", func);
    size_t n = j->seqs.n;
    PUSH(j->seqs, s);
    return j->seqs.n > n ? &j->seqs.v[n] : NULL;
}

static struct pairs *pairs_of(struct job *j, uint64_t comm, int rank, const char *func, int peer) {
    for (size_t k = 0; k <= j->pairs.n; k++) {
        size_t i = k ? k - 1 : j->pairs_last;
        struct pairs *p = i < j->pairs.n ? &j->pairs.v[i] : NULL;
        if (p && p->comm == comm && p->rank == rank && p->peer == peer && !strcmp(p->func, func)) {
            j->pairs_last = i;
            return p;
        }
    }
    struct pairs s = {.comm = comm, .rank = rank, .peer = peer};
    snprintf(s.func, sizeof(s.func), "%s", func);
    size_t n = j->pairs.n;
    PUSH(j->pairs, s);
    return j->pairs.n > n ? &j->pairs.v[n] : NULL;
}

/* Did this operation, still in flight at the file's end, never complete?
 * coll_track.h's rule (on 2 x H200, NCCL 2.28.9, counting channels made
 * alltoall's self Send/Recv and the last Recv of sendrecv read as stuck in
 * complete traces). */
static int is_stuck(const struct nsc_op_done *op, uint32_t mask) {
    return nsc_op_stuck(op, (mask >> NSC_ET_KERNEL_CH) & 1);
}

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct file_run *fr = ud;
    struct job *j = fr->j;
    j->ops++;
    const char *func = op->func ? op->func : "?";
    if (op->is_p2p) {
        struct pairs *p = pairs_of(j, op->comm_id, op->rank, func, op->peer);
        if (p)
            p->n++;
    } else {
        struct seqs *s = seqs_of(j, op->comm_id, op->rank, func);
        if (s) {
            s->unrecorded |= !(fr->mask & (1u << NSC_ET_KERNEL_CH));
            if (!s->n || op->seq < s->min)
                s->min = op->seq;
            if (!s->n || op->seq > s->max)
                s->max = op->seq;
            s->n++;
        }
    }
    if (!op->at_end || !is_stuck(op, fr->mask)) {
        /* Completed: a HANG block's operation with this id was not stuck
         * after all (the watchdog fired, then it went on). */
        if (!op->is_p2p && (fr->mask & (1u << NSC_ET_KERNEL_CH)) && op->nch &&
            op->kernel_channels_done >= (uint32_t)op->nch) {
            struct seqs *s = seqs_of(j, op->comm_id, op->rank, func);
            if (s && (!s->has_done || op->seq > s->done_max)) {
                s->done_max = op->seq;
                s->has_done = 1;
            }
        }
        /* Only a completion the records saw (the tracker reported it
         * before the end) outdates the watchdog's view: one in flight at the
         * end and not judged stuck (no child open, no KernelCh at all in a
         * cleanly closed file) proves nothing against a HANG block. */
        if (op->at_end)
            return;
        fr->recent[fr->nrecent++ % RECENT] = op->id;
        for (size_t i = 0; i < fr->wd.n; i++)
            if (fr->wd.v[i].id == op->id)
                fr->wd_stale[i] = 1;
        return;
    }
    struct stuck s = {.comm = op->comm_id, .id = op->id, .rank = op->rank, .is_p2p = op->is_p2p,
                      .peer = op->peer, .nch = op->nch, .seq = op->seq,
                      .start_ns = op->start_ns, .kch_done = op->kernel_channels_done,
                      .stopped = op->stop_ns != 0, .nopen = op->nopen};
    snprintf(s.func, sizeof(s.func), "%s", func);
    if (op->nopen && (s.open = malloc(op->nopen * sizeof(*s.open))))
        memcpy(s.open, op->open, op->nopen * sizeof(*s.open));
    else
        s.nopen = 0;
    size_t n = j->stuck.n;
    PUSH(j->stuck, s);
    if (j->stuck.n == n)
        free(s.open);
}

/* The SESSION block came first: what was recorded decides what "stuck" means. */
static void on_session(void *ud, const struct nsc_decoder *d) {
    struct file_run *fr = ud;
    const struct nsc_session *ses = nsc_decoder_session(d);
    fr->mask = ses ? ses->event_mask : 0;
}

/* A HANG block: the in-process view of the operations in flight when the
 * watchdog fired. The latest block of a file replaces earlier ones. */
static void on_hang(void *ud, const struct nsc_decoder *d, const void *data, size_t len) {
    struct file_run *fr = ud;
    struct nsc_hang_view v;
    const char *why;
    if (nsc_hang_decode(data, len, &v, &why) != 0) {
        fr->j->damaged = 1;
        fprintf(fr->err, "ncclscope hang: %s: %s\n", nsc_decoder_path(d), why);
        return;
    }
    fr->wd_seen = 1;
    fr->wd_full = v.h.slab_full;
    fr->wd_orphans = v.h.slab_orphans;
    for (size_t i = 0; i < fr->wd.n; i++)
        free_stuck(&fr->wd.v[i]);
    fr->wd.n = 0;
    free(fr->wd_stale);
    fr->wd_stale = calloc(v.h.nops + 1, 1);
    if (!fr->wd_stale)
        return;
    for (uint32_t k = 0; k < v.h.nops; k++) {
        struct nsc_hang_op o;
        nsc_hang_op_at(&v, k, &o);
        struct stuck s;
        memset(&s, 0, sizeof(s));
        s.rank = -1;
        for (uint32_t c = 0; c < v.h.ncomms; c++) {
            struct nsc_hang_comm hc;
            nsc_hang_comm_at(&v, c, &hc);
            if (hc.serial == o.serial) {
                s.comm = hc.comm_id;
                s.rank = hc.rank;
            }
        }
        if (!s.comm)
            continue; /* a comm the block does not describe: damage */
        s.id = o.id;
        s.is_p2p = o.etype == NSC_ET_P2P;
        s.peer = o.peer;
        s.nch = o.nch;
        snprintf(s.func, sizeof(s.func), "%s", o.func[0] ? o.func : "?");
        s.seq = o.seq;
        /* on the records' clock: the earliest stuck point-to-point
         * operation is chosen by it (report_comm) */
        s.start_ns = nsc_decoder_mono_ns(d, o.start_ticks);
        s.kch_done = (uint32_t)__builtin_popcountll(o.ch_done);
        s.stopped = o.stopped;
        s.watchdog = 1;
        s.ch_started = o.ch_started;
        s.ch_done = o.ch_done;
        s.kernel_tracked = o.kernel_tracked;
        uint32_t np = 0;
        for (uint32_t q = 0; q < v.h.nproxies; q++) {
            struct nsc_hang_proxy hp;
            nsc_hang_proxy_at(&v, q, &hp);
            np += hp.op_id == o.id;
        }
        if (np && (s.proxies = calloc(np, sizeof(*s.proxies)))) {
            for (uint32_t q = 0; q < v.h.nproxies; q++) {
                struct nsc_hang_proxy hp;
                nsc_hang_proxy_at(&v, q, &hp);
                if (hp.op_id != o.id)
                    continue;
                struct wd_proxy *w = &s.proxies[s.nproxies++];
                w->peer = hp.peer;
                w->nsteps = hp.nsteps;
                w->ch = hp.ch;
                w->is_send = hp.is_send;
                w->done = hp.done;
                w->steps_open = hp.steps_open;
                w->lowest_open = hp.lowest_open_step;
                memcpy(w->waiting, hp.waiting, sizeof(w->waiting));
            }
        }
        int stale = 0;
        for (uint64_t r = 0; r < fr->nrecent && r < RECENT; r++)
            stale |= fr->recent[r] == o.id;
        size_t n = fr->wd.n;
        PUSH(fr->wd, s);
        if (fr->wd.n == n)
            free_stuck(&s);
        else
            fr->wd_stale[n] = (unsigned char)stale;
    }
    /* The comms' last enqueued collective counts as entered (a flight dump
     * may hold only the end of the run). */
    for (uint32_t c = 0; c < v.h.ncomms; c++) {
        struct nsc_hang_comm hc;
        nsc_hang_comm_at(&v, c, &hc);
        if (hc.enq_etype != NSC_ET_COLL || !hc.comm_id || !hc.enq_func[0])
            continue;
        struct seqs *q = seqs_of(fr->j, hc.comm_id, hc.rank, hc.enq_func);
        if (q && (!q->n || hc.enq_seq > q->max)) {
            if (!q->n)
                q->min = hc.enq_seq;
            q->max = hc.enq_seq;
            q->n++;
        }
    }
}

/* After a file: its HANG block's operations still in flight join the job's
 * stuck list; dedupe_stuck lets them replace what the records (of this or
 * another file of the process) say about the same operations: the
 * in-process view has the channels and steps even when the window lost the
 * operation's records. */
static void merge_watchdog(struct file_run *fr) {
    struct job *j = fr->j;
    if (fr->wd_seen) {
        j->hang_files++;
        j->unwatched += fr->wd_full;
        j->orphans += fr->wd_orphans;
    }
    for (size_t k = 0; k < fr->wd.n; k++) {
        struct stuck *w = &fr->wd.v[k];
        if (fr->wd_stale[k]) {
            free_stuck(w);
            continue;
        }
        size_t n = j->stuck.n;
        PUSH(j->stuck, *w);
        if (j->stuck.n == n)
            free_stuck(w);
    }
    free(fr->wd.v);
    free(fr->wd_stale);
}

static void on_error(void *ud, const char *msg) {
    struct file_run *fr = ud;
    fr->j->damaged = 1;
    fprintf(fr->err, "ncclscope hang: %s\n", msg);
}

/* The file was read (its operations still in flight reported at its end):
 * its HANG block's view replaces what the records say, and its comms join
 * the job's members. */
static void on_done(void *ud, const struct nsc_decoder *d) {
    struct file_run *fr = ud;
    struct job *j = fr->j;
    fr->done = 1;
    merge_watchdog(fr);
    j->unrecorded_files += !(fr->mask & (1u << NSC_ET_KERNEL_CH));
    if (!nsc_decoder_ended(d))
        fprintf(fr->err, "ncclscope hang: %s: no END block (a killed or running job)\n", fr->path);
    struct nsc_decode_counts dc;
    nsc_decoder_counts(d, &dc);
    for (uint32_t c = 0; c < dc.comm_slots; c++) {
        const struct nsc_comm_info *ci = nsc_decoder_comm(d, c);
        if (!ci || !ci->comm_id)
            continue;
        /* A damaged count must not make the analysis walk billions of ranks. */
        int nr = ci->nranks > 0 && ci->nranks <= HANG_MAX_RANKS ? ci->nranks : 0;
        struct member mb = {.comm = ci->comm_id, .rank = ci->rank, .nranks = nr};
        snprintf(mb.name, sizeof(mb.name), "%s", ci->name);
        PUSH(j->members, mb);
    }
}

/* ---- the analysis ---- */

/* What a ProxyOp/ProxyStep state says the proxy waits for. */
static const char *waiting_for(int state) {
    switch (state) {
    case 0: case 4: return "posted";
    case 1: case 20: return "waiting for the peer's receive";
    case 8: case 12: case 5: case 6: return "waiting for GPU";
    case 2: case 9: case 10: case 11: return "waiting for the network";
    case 3: case 7: return "done";
    case 19: return "in progress";
    default: return "no state recorded";
    }
}

static int entered(const struct job *j, uint64_t comm, int rank, const char *func, uint64_t seq) {
    for (size_t i = 0; i < j->seqs.n; i++) {
        const struct seqs *s = &j->seqs.v[i];
        /* Within the range a rank enqueued: seqNumbers follow each other,
         * so a gap there means lost records, not a skipped collective. */
        if (s->comm == comm && s->rank == rank && !strcmp(s->func, func))
            return s->n && seq >= s->min && seq <= s->max;
    }
    return 0;
}

/* The last seqNumber of func a rank entered, or -1. */
static long long last_entered(const struct job *j, uint64_t comm, int rank, const char *func) {
    for (size_t i = 0; i < j->seqs.n; i++) {
        const struct seqs *s = &j->seqs.v[i];
        if (s->comm == comm && s->rank == rank && !strcmp(s->func, func))
            return s->n ? (long long)s->max : -1;
    }
    return -1;
}

static uint64_t pair_count(const struct job *j, uint64_t comm, int rank, const char *func, int peer) {
    for (size_t i = 0; i < j->pairs.n; i++) {
        const struct pairs *p = &j->pairs.v[i];
        if (p->comm == comm && p->rank == rank && p->peer == peer && !strcmp(p->func, func))
            return p->n;
    }
    return 0;
}

static int traced(const struct job *j, uint64_t comm, int rank) {
    for (size_t i = 0; i < j->members.n; i++)
        if (j->members.v[i].comm == comm && j->members.v[i].rank == rank)
            return 1;
    return 0;
}


static void print_ranks(FILE *f, const int *v, int n, int json) {
    if (json)
        fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, i ? (json ? ",%d" : ", %d") : "%d", v[i]);
    if (json)
        fputc(']', f);
}

static int cmp_int(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

static const char *const wait_names[5] = {"posted", "waiting for GPU", "waiting for the peer's receive",
                                          "waiting for the network", "flushing"};
static const char *const wait_keys[5] = {"posted", "gpu", "peer", "network", "flush"};

/* What most of a ProxyOp's open steps wait for ("done" when none is open). */
static const char *wd_waiting(const struct wd_proxy *p) {
    int best = -1;
    for (int k = 0; k < 5; k++)
        if (p->waiting[k] && (best < 0 || p->waiting[k] > p->waiting[best]))
            best = k;
    if (best >= 0)
        return wait_names[best];
    return p->done ? "done" : p->steps_open ? "posted" : "no step open";
}

/* The same, from a HANG block: the watchdog's in-process view. */
/* A stuck rank's first text line: where it is, its open channels and the
 * peers it waits on (source: " (watchdog)" for a HANG block's view). */
static void print_rank_line(FILE *f, const struct stuck *s, const char *source, int show_channels,
                            const int *ch, int nch, const int *peers, int npeers) {
    fprintf(f, "    rank %d%s: %s", s->rank, source,
            s->stopped ? "enqueued" : "still enqueuing (Coll/P2p never stopped)");
    if (show_channels) {
        fprintf(f, ", %u of %d channel(s) done", s->kch_done, s->nch);
        if (nch) {
            fputs(", open: ", f);
            print_ranks(f, ch, nch, 0);
        }
    }
    if (npeers) {
        fputs("; peers ", f);
        print_ranks(f, peers, npeers, 0);
    }
    fputc('\n', f);
}

static void print_watchdog_rank(FILE *f, const struct stuck *s, int json) {
    int ch[64], nch = 0, peers[256], npeers = 0;
    for (int c = 0; c < 64 && c < (s->nch ? s->nch : 64); c++)
        if (!((s->ch_done >> c) & 1) && (s->nch || ((s->ch_started >> c) & 1)))
            ch[nch++] = c;
    for (uint32_t i = 0; i < s->nproxies; i++) {
        if (s->proxies[i].done)
            continue;
        int seen = 0;
        for (int k = 0; k < npeers; k++)
            seen |= peers[k] == s->proxies[i].peer;
        if (!seen && npeers < 256)
            peers[npeers++] = s->proxies[i].peer;
    }
    qsort(peers, (size_t)npeers, sizeof(int), cmp_int);
    if (json) {
        fprintf(f, "{\"rank\":%d,\"source\":\"watchdog\",\"enqueued\":%s,\"nch\":%d,"
                   "\"channels_done\":%u,\"channels\":",
                s->rank, s->stopped ? "true" : "false", s->nch, s->kch_done);
        print_ranks(f, ch, nch, 1);
        fputs(",\"peers\":", f);
        print_ranks(f, peers, npeers, 1);
        fputs(",\"proxy_ops\":[", f);
        for (uint32_t i = 0; i < s->nproxies; i++) {
            const struct wd_proxy *p = &s->proxies[i];
            fprintf(f, "%s{\"channel\":%u,\"peer\":%d,\"send\":%s,\"done\":%s,\"nsteps\":%d,"
                       "\"steps_open\":%u,\"lowest_open_step\":%d,\"steps_waiting\":{",
                    i ? "," : "", p->ch, p->peer, p->is_send ? "true" : "false",
                    p->done ? "true" : "false", p->nsteps, p->steps_open, p->lowest_open);
            for (int k = 0; k < 5; k++)
                fprintf(f, "%s\"%s\":%u", k ? "," : "", wait_keys[k], p->waiting[k]);
            fputs("},\"waiting\":", f);
            jw_print_string(f, wd_waiting(p));
            fputc('}', f);
        }
        fputs("]}", f);
        return;
    }
    print_rank_line(f, s, " (watchdog)", s->nch && s->kernel_tracked, ch, nch, peers, npeers);
    for (uint32_t i = 0; i < s->nproxies; i++) {
        const struct wd_proxy *p = &s->proxies[i];
        if (p->done)
            continue;
        fprintf(f, "      proxy ch %u %s peer %d: %s (%u step(s) open", p->ch,
                p->is_send ? "send to" : "recv from", p->peer, wd_waiting(p), p->steps_open);
        if (p->lowest_open >= 0)
            fprintf(f, ", lowest step %d", p->lowest_open);
        fprintf(f, " of %d)\n", p->nsteps);
    }
}

/* One stuck rank inside a collective: its channels, peers and proxy. */
static void print_stuck_rank(FILE *f, const struct stuck *s, int json) {
    if (s->watchdog) {
        print_watchdog_rank(f, s, json);
        return;
    }
    int ch[256], nch = 0, peers[256], npeers = 0;
    for (uint32_t i = 0; i < s->nopen; i++) {
        const struct nsc_track_child *c = &s->open[i];
        if (c->etype == NSC_ET_KERNEL_CH && nch < 256)
            ch[nch++] = c->ch;
        if (c->etype == NSC_ET_PROXY_OP) {
            int seen = 0;
            for (int k = 0; k < npeers; k++)
                seen |= peers[k] == c->peer;
            if (!seen && npeers < 256)
                peers[npeers++] = c->peer;
        }
    }
    qsort(ch, (size_t)nch, sizeof(int), cmp_int);
    qsort(peers, (size_t)npeers, sizeof(int), cmp_int);
    if (json) {
        fprintf(f, "{\"rank\":%d,\"enqueued\":%s,\"nch\":%d,\"channels_done\":%u,\"channels\":",
                s->rank, s->stopped ? "true" : "false", s->nch, s->kch_done);
        print_ranks(f, ch, nch, 1);
        fputs(",\"peers\":", f);
        print_ranks(f, peers, npeers, 1);
        fputs(",\"proxy_ops\":[", f);
        int first = 1;
        for (uint32_t i = 0; i < s->nopen; i++) {
            const struct nsc_track_child *c = &s->open[i];
            if (c->etype != NSC_ET_PROXY_OP)
                continue;
            const char *st = c->state >= 0 ? nsc_state_name((unsigned)c->state) : NULL;
            const char *sst = c->step_state >= 0 ? nsc_state_name((unsigned)c->step_state) : NULL;
            fprintf(f, "%s{\"channel\":%u,\"peer\":%d,\"send\":%s,\"state\":", first ? "" : ",",
                    c->ch, c->peer, c->is_send ? "true" : "false");
            if (st)
                jw_print_string(f, st);
            else
                fputs("null", f);
            fprintf(f, ",\"step\":%d,\"steps_open\":%u,\"step_state\":", c->step, c->steps_open);
            if (sst)
                jw_print_string(f, sst);
            else
                fputs("null", f);
            fputs(",\"waiting\":", f);
            jw_print_string(f, waiting_for(c->step_state >= 0 ? c->step_state : c->state));
            fputc('}', f);
            first = 0;
        }
        fputs("]}", f);
        return;
    }
    print_rank_line(f, s, "", s->nch != 0, ch, nch, peers, npeers);
    for (uint32_t i = 0; i < s->nopen; i++) {
        const struct nsc_track_child *c = &s->open[i];
        if (c->etype != NSC_ET_PROXY_OP)
            continue;
        const char *sst = c->step_state >= 0 ? nsc_state_name((unsigned)c->step_state) : NULL;
        const char *st = c->state >= 0 ? nsc_state_name((unsigned)c->state) : NULL;
        fprintf(f, "      proxy ch %u %s peer %d: %s (%s", c->ch, c->is_send ? "send to" : "recv from",
                c->peer, waiting_for(c->step_state >= 0 ? c->step_state : c->state),
                sst ? sst : st ? st : "no state");
        if (c->step >= 0)
            fprintf(f, ", step %d", c->step);
        fputs(")\n", f);
    }
}

static const char *matching(const char *func) {
    return !strcmp(func, "Send") ? "Recv" : !strcmp(func, "Recv") ? "Send" : func;
}

/* One stuck communicator: a JSON object (after a comma unless first) or text. */
static void report_comm(FILE *f, const struct job *j, uint64_t comm, int json, int first) {
    const struct member *m = NULL;
    int nranks = 0, span = 0;
    for (size_t i = 0; i < j->members.n; i++)
        if (j->members.v[i].comm == comm) {
            m = &j->members.v[i];
            if (m->nranks > nranks)
                nranks = m->nranks;
            if (m->rank >= span && m->rank < HANG_MAX_RANKS)
                span = m->rank + 1;
        }
    /* API v1-v3 (NCCL 2.23-2.26) do not tell a comm's size: the ranks are
     * then those traced, and who left no trace cannot be known. */
    if (nranks > 0)
        span = nranks;
    /* The divergence: the stuck collective with the lowest seqNumber. */
    const struct stuck *target = NULL;
    for (size_t i = 0; i < j->stuck.n; i++) {
        const struct stuck *s = &j->stuck.v[i];
        if (s->comm == comm && !s->is_p2p &&
            (!target || s->seq < target->seq ||
             (s->seq == target->seq && strcmp(s->func, target->func) < 0)))
            target = s;
    }
    int cap = span > 0 ? span : 1;
    for (size_t i = 0; i < j->stuck.n; i++)
        if (j->stuck.v[i].rank >= cap)
            cap = j->stuck.v[i].rank + 1;
    int *missing = calloc((size_t)cap, sizeof(int)), nmissing = 0;
    int *done = calloc((size_t)cap, sizeof(int)), ndone = 0;
    int *untraced = calloc((size_t)cap, sizeof(int)), nuntraced = 0;
    if (!missing || !done || !untraced)
        goto out;
    for (int r = 0; r < nranks; r++)
        if (!traced(j, comm, r))
            untraced[nuntraced++] = r;
    const char *name = m ? m->name : "";
    if (json)
        fprintf(f, "%s{\"comm\":\"0x%016llx\",\"name\":", first ? "" : ",", (unsigned long long)comm);
    else if (nranks > 0)
        fprintf(f, "comm 0x%016llx \"%s\" (%d ranks): ", (unsigned long long)comm, name, nranks);
    else
        fprintf(f, "comm 0x%016llx \"%s\" (size not recorded): ", (unsigned long long)comm, name);
    if (json)
        jw_print_string(f, name);
    if (target) {
        for (int r = 0; r < span; r++) {
            if (!traced(j, comm, r))
                continue;
            int in = 0;
            for (size_t i = 0; i < j->stuck.n; i++) {
                const struct stuck *s = &j->stuck.v[i];
                in |= s->comm == comm && s->rank == r && !s->is_p2p && s->seq == target->seq &&
                      !strcmp(s->func, target->func);
            }
            if (in)
                continue;
            if (entered(j, comm, r, target->func, target->seq))
                done[ndone++] = r;
            else
                missing[nmissing++] = r;
        }
        if (json) {
            fprintf(f, ",\"nranks\":%d,\"op\":", nranks);
            jw_print_string(f, target->func);
            fprintf(f, ",\"seq\":%llu,\"missing_ranks\":", (unsigned long long)target->seq);
            print_ranks(f, missing, nmissing, 1);
            fputs(",\"missing_last_seq\":[", f);
            for (int q = 0; q < nmissing; q++) {
                long long l = last_entered(j, comm, missing[q], target->func);
                fprintf(f, l < 0 ? "%snull" : "%s%lld", q ? "," : "", l);
            }
            fprintf(f, "],\"all_inside\":%s,\"stuck_ranks\":[", nmissing || ndone ? "false" : "true");
        } else {
            fprintf(f, "hang at %s seqNumber %llu\n", target->func, (unsigned long long)target->seq);
            fputs("  never entered it: ", f);
            for (int q = 0; q < nmissing; q++) {
                long long l = last_entered(j, comm, missing[q], target->func);
                if (l < 0)
                    fprintf(f, "%srank %d (no %s at all)", q ? ", " : "", missing[q], target->func);
                else
                    fprintf(f, "%srank %d (last entered seqNumber %lld)", q ? ", " : "", missing[q], l);
            }
            if (!nmissing && ndone)
                fputs("none", f);
            else if (!nmissing)
                fputs("none (every traced rank is inside it: a transport that stopped moving, or a "
                      "job killed in the middle of it)", f);
            fputs("\n  stuck inside it:\n", f);
        }
        int k = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct stuck *s = &j->stuck.v[i];
            if (s->comm != comm || s->is_p2p || s->seq != target->seq || strcmp(s->func, target->func))
                continue;
            if (json && k++)
                fputc(',', f);
            print_stuck_rank(f, s, json);
        }
    } else {
        /* Point-to-point only: who waits for whom. */
        if (json)
            fprintf(f, ",\"nranks\":%d,\"op\":", nranks);
        const struct stuck *p0 = NULL;
        for (size_t i = 0; i < j->stuck.n; i++)
            if (j->stuck.v[i].comm == comm && (!p0 || j->stuck.v[i].start_ns < p0->start_ns))
                p0 = &j->stuck.v[i];
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct stuck *s = &j->stuck.v[i];
            if (s->comm != comm)
                continue;
            /* Never posted: the peer has fewer matching operations toward
             * this rank than this rank has toward it. */
            if (traced(j, comm, s->peer) &&
                pair_count(j, comm, s->peer, matching(s->func), s->rank) <
                    pair_count(j, comm, s->rank, s->func, s->peer)) {
                int seen2 = 0;
                for (int q = 0; q < nmissing; q++)
                    seen2 |= missing[q] == s->peer;
                if (!seen2 && nmissing < cap)
                    missing[nmissing++] = s->peer;
            }
        }
        qsort(missing, (size_t)nmissing, sizeof(int), cmp_int);
        if (json) {
            jw_print_string(f, p0 ? p0->func : "?");
            fputs(",\"seq\":null,\"missing_ranks\":", f);
            print_ranks(f, missing, nmissing, 1);
            fputs(",\"stuck_ranks\":[", f);
        } else
            fprintf(f, "point-to-point hang\n");
        int k = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct stuck *s = &j->stuck.v[i];
            if (s->comm != comm)
                continue;
            if (json && k++)
                fputc(',', f);
            print_stuck_rank(f, s, json);
        }
        if (json)
            fputs("],\"waits\":[", f);
        k = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct stuck *s = &j->stuck.v[i];
            if (s->comm != comm || !s->is_p2p)
                continue;
            int posted = pair_count(j, comm, s->peer, matching(s->func), s->rank) >=
                         pair_count(j, comm, s->rank, s->func, s->peer);
            const char *why = !traced(j, comm, s->peer) ? "the peer left no trace"
                              : posted ? "the peer posted the matching operation (both in flight)"
                                       : "the peer never posted the matching operation";
            if (json) {
                fprintf(f, "%s{\"rank\":%d,\"op\":", k++ ? "," : "", s->rank);
                jw_print_string(f, s->func);
                fprintf(f, ",\"peer\":%d,\"waits_for\":%d,\"peer_posted\":%s,\"why\":", s->peer,
                        s->peer, posted ? "true" : "false");
                jw_print_string(f, why);
                fputc('}', f);
            } else
                fprintf(f, "  rank %d %s %s %d waits for rank %d: %s %s\n", s->rank, s->func,
                        !strcmp(s->func, "Send") ? "to" : "from", s->peer, s->peer, why,
                        posted ? "" : matching(s->func));
        }
        if (!json) {
            fputs("  never posted: ", f);
            if (nmissing)
                print_ranks(f, missing, nmissing, 0);
            else
                fputs("none", f);
            fputc('\n', f);
        }
    }
    if (json) {
        fputs("],\"completed_ranks\":", f);
        print_ranks(f, done, ndone, 1);
        fputs(",\"untraced_ranks\":", f);
        print_ranks(f, untraced, nuntraced, 1);
        fputc('}', f);
    } else {
        if (ndone) {
            fputs("  completed it: ", f);
            print_ranks(f, done, ndone, 0);
            fputc('\n', f);
        }
        if (nuntraced) {
            fputs("  ranks without a trace: ", f);
            print_ranks(f, untraced, nuntraced, 0);
            fputc('\n', f);
        }
    }
out:
    free(missing);
    free(done);
    free(untraced);
}

/* Where no operation is seen stuck but completion was not recorded (no
 * KernelCh: an intra-node collective counts as completed once enqueued),
 * the ranks' last collectives still say where a hang would be: per
 * (comm, function), the first seqNumber some traced rank of the comm never
 * entered while another did (the lowest "last entered + 1" of the ranks
 * behind), when every rank that entered it recorded no completion. A rank
 * that recorded KernelCh and completed it would prove every rank took part,
 * so such a collective is not a divergence (the others' records were lost).
 * A rank with none of the function at all counts as behind only when the
 * ranks that entered it hold the function from its seqNumber 0 (a whole
 * history; a flight window or deleted segments may have lost its first
 * ones). Sorted once, then one pass per (comm, function): big jobs (many
 * ranks and comms) stay n log n. Returns how many it printed (text, or
 * JSON array members), -1 without memory. */
static int cmp_seqs_ptr(const void *a, const void *b) {
    const struct seqs *x = *(const struct seqs *const *)a, *y = *(const struct seqs *const *)b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    int c = strcmp(x->func, y->func);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_member(const void *a, const void *b) {
    const struct member *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

struct div_rank {
    int rank;
    long long last, min; /* -1: none of the function */
    int unrecorded;
};

static int report_divergences(FILE *f, const struct job *j, int json) {
    int found = 0;
    size_t ns = j->seqs.n, nm = j->members.n;
    const struct seqs **S = malloc((ns ? ns : 1) * sizeof(*S));
    struct member *M = malloc((nm ? nm : 1) * sizeof(*M));
    struct div_rank *R = malloc((nm ? nm : 1) * sizeof(*R));
    int *in = malloc((nm ? nm : 1) * sizeof(int)), *out = malloc((nm ? nm : 1) * sizeof(int));
    if (!S || !M || !R || !in || !out) {
        found = -1; /* the caller says so: not "no divergence" */
        goto done;
    }
    for (size_t i = 0; i < ns; i++)
        S[i] = &j->seqs.v[i];
    qsort(S, ns, sizeof(*S), cmp_seqs_ptr);
    if (nm)
        memcpy(M, j->members.v, nm * sizeof(*M));
    qsort(M, nm, sizeof(*M), cmp_member);
    size_t m0 = 0;
    for (size_t g = 0, gend; g < ns; g = gend) {
        uint64_t comm = S[g]->comm;
        for (gend = g + 1; gend < ns && S[gend]->comm == comm && !strcmp(S[gend]->func, S[g]->func);
             gend++)
            ;
        while (m0 < nm && M[m0].comm < comm)
            m0++;
        size_t m1 = m0;
        int nranks = 0, span = 0;
        const char *name = "";
        for (; m1 < nm && M[m1].comm == comm; m1++) {
            if (M[m1].nranks > nranks)
                nranks = M[m1].nranks;
            if (M[m1].rank >= span && M[m1].rank < HANG_MAX_RANKS)
                span = M[m1].rank + 1;
            if (!*name)
                name = M[m1].name;
        }
        if (nranks > 0) /* else API v1-v3: the traced ranks (report_comm) */
            span = nranks;
        /* The traced ranks of the comm (members sorted by rank, each once),
         * joined with the group's entries (sorted by rank too). */
        size_t nr = 0, k = g;
        long long top = -1;
        for (size_t m = m0; m < m1; m++) {
            int r = M[m].rank;
            if (r < 0 || r >= span || (nr && R[nr - 1].rank == r))
                continue;
            while (k < gend && S[k]->rank < r)
                k++;
            const struct seqs *e = k < gend && S[k]->rank == r && S[k]->n ? S[k] : NULL;
            R[nr] = (struct div_rank){.rank = r, .last = e ? (long long)e->max : -1,
                                      .min = e ? (long long)e->min : -1,
                                      .unrecorded = e ? e->unrecorded : 0};
            if (R[nr].last > top)
                top = R[nr].last;
            nr++;
        }
        long long point = -1;
        for (size_t q = 0; q < nr; q++)
            if (R[q].last >= 0 && R[q].last < top && (point < 0 || R[q].last + 1 < point))
                point = R[q].last + 1;
        int whole = 1, blind = 1, nin = 0, nout = 0;
        for (size_t q = 0; q < nr; q++)
            if (R[q].last >= 0 && R[q].last >= (point < 0 ? top : point)) {
                whole &= R[q].min == 0;
                blind &= R[q].unrecorded;
            }
        if (point < 0 && whole && top >= 0)
            point = 0; /* only ranks with none of it are behind */
        if (point < 0 || !blind)
            continue;
        for (size_t q = 0; q < nr; q++) {
            if (R[q].last >= point)
                in[nin++] = R[q].rank;
            else if (R[q].last >= 0 || whole)
                out[nout++] = R[q].rank;
        }
        if (!nin || !nout)
            continue;
        const char *func = S[g]->func;
        if (json) {
            fprintf(f, "%s{\"comm\":\"0x%016llx\",\"name\":", found ? "," : "",
                    (unsigned long long)comm);
            jw_print_string(f, name);
            fprintf(f, ",\"nranks\":%d,\"op\":", nranks);
            jw_print_string(f, func);
            fprintf(f, ",\"seq\":%lld,\"entered_ranks\":", point);
            print_ranks(f, in, nin, 1);
            fputs(",\"missing_ranks\":", f);
            print_ranks(f, out, nout, 1);
            fputs(",\"missing_last_seq\":[", f);
            for (int q = 0, x = 0; q < nout; q++) {
                while (R[x].rank != out[q])
                    x++;
                fprintf(f, R[x].last < 0 ? "%snull" : "%s%lld", q ? "," : "", R[x].last);
            }
            fputs("]}", f);
        } else {
            char size[32];
            snprintf(size, sizeof(size), nranks > 0 ? "%d ranks" : "size not recorded", nranks);
            fprintf(f, "  comm 0x%016llx \"%s\" (%s): %s seqNumber %lld entered by %s",
                    (unsigned long long)comm, name, size, func, point, nin > 1 ? "ranks " : "rank ");
            print_ranks(f, in, nin, 0);
            fputs("; never entered by ", f);
            for (int q = 0, x = 0; q < nout; q++) {
                while (R[x].rank != out[q])
                    x++;
                if (R[x].last < 0)
                    fprintf(f, "%srank %d (no %s at all)", q ? ", " : "", out[q], func);
                else
                    fprintf(f, "%srank %d (last entered seqNumber %lld)", q ? ", " : "", out[q],
                            R[x].last);
            }
            fputc('\n', f);
        }
        found++;
    }
done:
    free(S);
    free(M);
    free(R);
    free(in);
    free(out);
    return found;
}

/* Several files of one process (flight dumps a moment apart: the job's
 * dump-all, then the rank's own watchdog) report the same operation. A
 * rank's operation has one event id, so keep one entry per (comm, rank,
 * id): the watchdog's view when there is one, else the later file's. */
static void dedupe_stuck(struct job *j) {
    size_t n = 0;
    for (size_t i = 0; i < j->stuck.n; i++) {
        struct stuck *s = &j->stuck.v[i];
        size_t k = 0;
        while (k < n && !(j->stuck.v[k].comm == s->comm && j->stuck.v[k].rank == s->rank &&
                          j->stuck.v[k].id == s->id))
            k++;
        if (k == n) {
            if (n != i)
                j->stuck.v[n] = *s; /* moved: its buffers go with it */
            n++;
            continue;
        }
        struct stuck *t = &j->stuck.v[k];
        if (s->watchdog || !t->watchdog) {
            free_stuck(t);
            *t = *s;
        } else {
            free_stuck(s);
        }
    }
    j->stuck.n = n;
}

/* A collective left open below a seqNumber its rank was seen to complete
 * (same comm and function) completed too: what it lacks is a lost child
 * record (a flight window that began inside it, a KernelCh stop never
 * delivered), not a hang. The watchdog retires such operations in the
 * process (op_state.c, overtaken()); this is the same rule on the records,
 * after every file is read (the completion may be in another file of the
 * process). */
static void drop_overtaken(struct job *j) {
    const struct seqs **S = malloc((j->seqs.n ? j->seqs.n : 1) * sizeof(*S));
    if (!S)
        return; /* the rule unapplied: more is reported stuck, nothing is hidden */
    for (size_t i = 0; i < j->seqs.n; i++)
        S[i] = &j->seqs.v[i];
    qsort(S, j->seqs.n, sizeof(*S), cmp_seqs_ptr);
    size_t n = 0;
    for (size_t i = 0; i < j->stuck.n; i++) {
        struct stuck *s = &j->stuck.v[i];
        struct seqs key = {.comm = s->comm, .rank = s->rank};
        memcpy(key.func, s->func, sizeof(key.func));
        const struct seqs *pk = &key, **q =
            s->is_p2p ? NULL : bsearch(&pk, S, j->seqs.n, sizeof(*S), cmp_seqs_ptr);
        if (q && (*q)->has_done && (*q)->done_max > s->seq) {
            free_stuck(s);
            j->overtaken++;
            continue;
        }
        j->stuck.v[n++] = *s;
    }
    j->stuck.n = n;
    free(S);
}

/* One file into job *j (a file's own job under -j): its records, its HANG
 * blocks, its members. Messages go to err. */
static void read_file(struct job *j, const char *path, FILE *err) {
    struct file_run *fr = calloc(1, sizeof(*fr));
    if (!fr) {
        j->damaged = 1;
        return;
    }
    fr->j = j;
    fr->err = err;
    fr->path = path;
    struct nsc_ops_hooks h = {.session = on_session, .op = on_op, .hang = on_hang,
                              .error = on_error, .done = on_done};
    if (nsc_ops_pass(path, 0, &h, fr) < 0) {
        fprintf(err, "ncclscope hang: %s: out of memory\n", path);
        j->damaged = 1;
    }
    if (!fr->done) /* not opened: nothing of it was kept */
        merge_watchdog(fr);
    free(fr);
}

/* A file's job into the whole, in file order, so the whole is what reading
 * the files one after the other makes: entries in order of first
 * appearance, ranges and counts combined. (One rule of on_hang looks at
 * what came before, "a block's last enqueued extends a range upward": as
 * seqNumbers of one rank only grow, it extends the combined range the same
 * way.) Takes the part's stuck operations; frees the part's vectors. */
static void merge_job(struct job *w, struct job *p) {
    for (size_t i = 0; i < p->members.n; i++) {
        size_t n = w->members.n;
        PUSH(w->members, p->members.v[i]);
        w->damaged |= w->members.n == n;
    }
    for (size_t i = 0; i < p->seqs.n; i++) {
        const struct seqs *s = &p->seqs.v[i];
        struct seqs *q = seqs_of(w, s->comm, s->rank, s->func);
        if (!q) {
            w->damaged = 1;
            continue;
        }
        if (!q->n || s->min < q->min)
            q->min = s->min;
        if (!q->n || s->max > q->max)
            q->max = s->max;
        q->n += s->n;
        q->unrecorded |= s->unrecorded;
        if (s->has_done && (!q->has_done || s->done_max > q->done_max)) {
            q->done_max = s->done_max;
            q->has_done = 1;
        }
    }
    for (size_t i = 0; i < p->pairs.n; i++) {
        const struct pairs *s = &p->pairs.v[i];
        struct pairs *q = pairs_of(w, s->comm, s->rank, s->func, s->peer);
        if (q)
            q->n += s->n;
        else
            w->damaged = 1;
    }
    for (size_t i = 0; i < p->stuck.n; i++) {
        size_t n = w->stuck.n;
        PUSH(w->stuck, p->stuck.v[i]);
        if (w->stuck.n == n)
            free_stuck(&p->stuck.v[i]);
    }
    w->damaged |= p->damaged;
    w->ops += p->ops;
    w->overtaken += p->overtaken;
    w->hang_files += p->hang_files;
    w->unwatched += p->unwatched;
    w->orphans += p->orphans;
    w->unrecorded_files += p->unrecorded_files;
    free(p->members.v);
    free(p->seqs.v);
    free(p->pairs.v);
    free(p->stuck.v);
    memset(p, 0, sizeof(*p));
}

struct par {
    const char *const *files;
    struct job *whole, *part; /* part: one job per file */
    struct nsc_msgs msgs;
    FILE *err;                /* where the files' messages go, in file order */
};

static void par_work(void *ud, int i) {
    struct par *p = ud;
    FILE *err = nsc_msgs_open(&p->msgs, i);
    read_file(&p->part[i], p->files[i], err);
    nsc_msgs_close(err);
}

static void par_in_order(void *ud, int i) {
    struct par *p = ud;
    nsc_msgs_flush(&p->msgs, i, p->err);
    merge_job(p->whole, &p->part[i]);
}

int nsc_hang(const char *const *files, int nfiles, int json, int jobs, FILE *out, FILE *err) {
    struct job j;
    memset(&j, 0, sizeof(j));
    if (jobs <= 0)
        jobs = nsc_jobs_default();
    int done = 0;
    if (jobs > 1 && nfiles > 1) {
        struct par p = {files, &j, calloc((size_t)nfiles, sizeof(struct job)), {0}, err};
        done = p.part && nsc_msgs_init(&p.msgs, nfiles) == 0 &&
               nsc_parallel(nfiles, jobs, par_work, par_in_order, &p) == 0;
        free(p.part);
        nsc_msgs_free(&p.msgs);
    }
    for (int i = 0; i < nfiles && !done; i++) /* -j 1, or no thread could start */
        read_file(&j, files[i], err);
    dedupe_stuck(&j);
    drop_overtaken(&j);
    /* Stuck communicators, in the order of their first stuck operation. */
    uint64_t *comms = calloc(j.stuck.n + 1, sizeof(*comms));
    size_t ncomms = 0;
    if (!comms) { /* not "no hang": said, and the input counts as not read whole */
        fprintf(err, "ncclscope hang: out of memory: stuck operations not reported\n");
        j.damaged = 1;
    }
    for (size_t i = 0; i < j.stuck.n && comms; i++) {
        size_t k = 0;
        while (k < ncomms && comms[k] != j.stuck.v[i].comm)
            k++;
        if (k == ncomms)
            comms[ncomms++] = j.stuck.v[i].comm;
    }
    if (json)
        fputs("{\"hangs\":[", out);
    for (size_t k = 0; k < ncomms; k++)
        report_comm(out, &j, comms[k], json, k == 0);
    /* Nothing seen stuck: where completion was not recorded, the ranks'
     * last collectives may still diverge (report_divergences). */
    int ndiv = 0;
    if (json) {
        fputs("],\"divergences\":[", out);
        if (!ncomms)
            ndiv = report_divergences(out, &j, 1);
        if (ndiv < 0) {
            fprintf(err, "ncclscope hang: out of memory: divergences not looked for\n");
            j.damaged = 1;
            ndiv = 0;
        }
        fprintf(out, "],\"completion_unrecorded_files\":%d", j.unrecorded_files);
    } else if (!ncomms && j.unrecorded_files) {
        /* Printed into a buffer first: the heading comes only with a divergence. */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (m) {
            ndiv = report_divergences(m, &j, 0);
            fclose(m);
        } else
            ndiv = -1;
        if (ndiv < 0) {
            fprintf(err, "ncclscope hang: out of memory: divergences not looked for\n");
            j.damaged = 1;
            ndiv = 0;
        } else if (ndiv) {
            fprintf(out,
                    "possible hang: no operation is seen stuck, but the ranks diverge where "
                    "completion is not recorded (%d of %d file(s) record no KernelCh: there an "
                    "operation counts as completed once enqueued, unless a ProxyOp of it is "
                    "still open)\n%s"
                    "if the job hung, it hung at one of these (per communicator, the first "
                    "collective some ranks never entered); record KernelCh "
                    "(NCCLSCOPE_EVENTS=default,kernelch) to see whether the ranks that entered "
                    "it are stuck inside it\n",
                    j.unrecorded_files, nfiles, buf ? buf : "");
        } else {
            fprintf(out,
                    "no hang found: no operation of %d file(s) is seen stuck (%llu operations) "
                    "and the traced ranks' collectives do not diverge; %d file(s) record no "
                    "KernelCh, where an operation counts as completed once enqueued unless a "
                    "ProxyOp of it is still open\n",
                    nfiles, (unsigned long long)j.ops, j.unrecorded_files);
        }
        free(buf);
    }
    if (json) {
        if (j.hang_files)
            fprintf(out, ",\"watchdog\":{\"files\":%d,\"unwatched_events\":%llu,\"orphan_events\":%llu}",
                    j.hang_files, (unsigned long long)j.unwatched, (unsigned long long)j.orphans);
        fprintf(out, ",\"files\":%d,\"operations\":%llu,\"overtaken\":%llu,\"damaged\":%s}\n",
                nfiles, (unsigned long long)j.ops, (unsigned long long)j.overtaken,
                j.damaged ? "true" : "false");
    } else if (!ncomms && !j.unrecorded_files) {
        fprintf(out, "no hang found: every operation of %d file(s) completed (%llu operations)\n",
                nfiles, (unsigned long long)j.ops);
    }
    /* What the watchdogs could not see: operations that found the slab full
     * are in the records but not in the HANG blocks (hang_files: files with
     * one). */
    if (!json && j.hang_files && (j.unwatched || j.orphans))
        fprintf(out,
                "watchdog: %llu event(s) recorded but not watched (its slab was full) and %llu "
                "orphan(s) (children of operations it had retired), in the HANG blocks of %d "
                "file(s); what they did comes from the records\n",
                (unsigned long long)j.unwatched, (unsigned long long)j.orphans, j.hang_files);
    if (!json && j.overtaken)
        fprintf(out,
                "%llu collective(s) left open below a later one their rank completed (same "
                "communicator and function) are not counted as stuck: a lost child record (a "
                "flight window that began inside it, a KernelCh stop never delivered)\n",
                (unsigned long long)j.overtaken);
    free(comms);
    for (size_t i = 0; i < j.stuck.n; i++)
        free_stuck(&j.stuck.v[i]);
    free(j.stuck.v);
    free(j.seqs.v);
    free(j.pairs.v);
    free(j.members.v);
    return ncomms ? 4 : ndiv ? 5 : j.damaged ? 2 : 0;
}
