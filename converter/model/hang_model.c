// SPDX-License-Identifier: Apache-2.0
/* hang_model.c - a job's stuck operations, joined by commHash, and the
 * rules that say where it hangs (hang_model.h). */
#include "hang_model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "block_payload.h"
#include "event_types.h"
#include "ops.h"
#include "parallel.h"

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

/* The ops the file's latest HANG block says were in flight; `stale` once
 * the records show one completed. */
#define RECENT 4096
struct file_run {
    struct nsc_hm_job *j;
    FILE *err;               /* its messages (stderr, or a buffer under -j) */
    const char *path;
    uint32_t mask;
    int done;                /* on_done ran: the file was opened and read */
    NSC_HM_VEC(struct nsc_hm_stuck) wd;
    unsigned char *wd_stale;
    uint64_t recent[RECENT]; /* ids of the latest completed operations (a ring) */
    uint64_t nrecent;
    uint64_t proc;           /* its process (nsc_hm_proc_id) */
    int wd_seen;             /* a HANG block was read; its counts: */
    uint64_t wd_full, wd_orphans;
};

static void free_stuck(struct nsc_hm_stuck *s) {
    free(s->open);
    free(s->proxies);
}

/* Keeps the enqueue time of the highest seqNumbers (ascending): a known
 * time replaces an unknown one (a HANG block's last enqueued has none). */
static void note_enq(struct nsc_hm_seqs *s, uint64_t seq, uint64_t ns) {
    unsigned k = 0;
    while (k < s->nrecent && s->recent[k].seq < seq)
        k++;
    if (k < s->nrecent && s->recent[k].seq == seq) {
        if (!s->recent[k].ns)
            s->recent[k].ns = ns;
        return;
    }
    if (s->nrecent == NSC_HM_RECENT_SEQS) {
        if (k == 0)
            return; /* below every one kept */
        memmove(s->recent, s->recent + 1, (k - 1) * sizeof(*s->recent));
        k--;
    } else {
        memmove(s->recent + k + 1, s->recent + k, (s->nrecent - k) * sizeof(*s->recent));
        s->nrecent++;
    }
    s->recent[k] = (struct nsc_hm_enq){seq, ns};
}

static struct nsc_hm_seqs *seqs_of(struct nsc_hm_job *j, uint64_t comm, int rank, const char *func) {
    for (size_t k = 0; k <= j->seqs.n; k++) {
        size_t i = k ? k - 1 : j->seqs_last;
        if (i < j->seqs.n && j->seqs.v[i].comm == comm && j->seqs.v[i].rank == rank &&
            !strcmp(j->seqs.v[i].func, func)) {
            j->seqs_last = i;
            return &j->seqs.v[i];
        }
    }
    struct nsc_hm_seqs s = {.comm = comm, .rank = rank};
    snprintf(s.func, sizeof(s.func), "%s", func);
    size_t n = j->seqs.n;
    PUSH(j->seqs, s);
    return j->seqs.n > n ? &j->seqs.v[n] : NULL;
}

static struct nsc_hm_pairs *pairs_of(struct nsc_hm_job *j, uint64_t comm, int rank, const char *func, int peer) {
    for (size_t k = 0; k <= j->pairs.n; k++) {
        size_t i = k ? k - 1 : j->pairs_last;
        struct nsc_hm_pairs *p = i < j->pairs.n ? &j->pairs.v[i] : NULL;
        if (p && p->comm == comm && p->rank == rank && p->peer == peer && !strcmp(p->func, func)) {
            j->pairs_last = i;
            return p;
        }
    }
    struct nsc_hm_pairs s = {.comm = comm, .rank = rank, .peer = peer};
    snprintf(s.func, sizeof(s.func), "%s", func);
    size_t n = j->pairs.n;
    PUSH(j->pairs, s);
    return j->pairs.n > n ? &j->pairs.v[n] : NULL;
}

static struct nsc_hm_launch *launch_of(struct nsc_hm_job *j, uint64_t comm, int rank) {
    for (size_t k = 0; k < j->launches.n; k++)
        if (j->launches.v[k].comm == comm && j->launches.v[k].rank == rank)
            return &j->launches.v[k];
    struct nsc_hm_launch l = {.comm = comm, .rank = rank};
    size_t n = j->launches.n;
    PUSH(j->launches, l);
    return j->launches.n > n ? &j->launches.v[n] : NULL;
}

static void note_launch(struct nsc_hm_job *j, uint64_t comm, int rank, uint64_t start_ns) {
    struct nsc_hm_launch *l = launch_of(j, comm, rank);
    if (!l)
        j->damaged = 1;
    else if (start_ns > l->done_start_ns)
        l->done_start_ns = start_ns;
}

/* Did this operation, still in flight at the file's end, never complete?
 * coll_track.h's rule (on 2 x H200, NCCL 2.28.9, counting channels made
 * alltoall's self Send/Recv and the last Recv of sendrecv read as stuck in
 * complete traces). */
static int is_stuck(const struct nsc_op_done *op) {
    return nsc_op_stuck(op);
}

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct file_run *fr = ud;
    struct nsc_hm_job *j = fr->j;
    j->ops++;
    j->kernel_ops += op->kernel != 0;
    j->sampled_ops += op->kernel && op->sampled;
    j->unknown_ops += op->at_end && nsc_op_completion_unknown(op);
    const char *func = op->func ? op->func : "?";
    if (op->is_p2p) {
        struct nsc_hm_pairs *p = pairs_of(j, op->comm_id, op->rank, func, op->peer);
        if (p)
            p->n++;
    } else {
        struct nsc_hm_seqs *s = seqs_of(j, op->comm_id, op->rank, func);
        if (s) {
            s->proc = fr->proc;
            note_enq(s, op->seq, op->start_ns);
            s->unrecorded |= !(fr->mask & (1u << NSC_ET_KERNEL_CH));
            if (op->at_end && nsc_op_completion_unknown(op) &&
                (!s->has_unknown || op->seq < s->unknown_min)) {
                s->unknown_min = op->seq;
                s->has_unknown = 1;
            }
            if (!s->n || op->seq < s->min)
                s->min = op->seq;
            if (!s->n || op->seq > s->max)
                s->max = op->seq;
            s->n++;
        }
    }
    /* Not sampled: may be stuck, when a later sampled collective of its
     * comm is; point-to-point operations have their own rule (the peers'
     * counts), on what is seen stuck. */
    int maybe = op->at_end && op->maybe_stuck && !op->is_p2p && !is_stuck(op);
    if (!maybe && (!op->at_end || !is_stuck(op))) {
        /* Completed: a HANG block's operation with this id was not stuck
         * after all (the watchdog fired, then it went on). Inferred: a
         * later one of its comm completed. */
        int gpu_done = op->sampled && op->nch && op->kernel_channels_done >= (uint32_t)op->nch;
        if (gpu_done)
            note_launch(j, op->comm_id, op->rank, op->start_ns);
        if (!op->is_p2p && (gpu_done || op->inferred)) {
            struct nsc_hm_seqs *s = seqs_of(j, op->comm_id, op->rank, func);
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
    struct nsc_hm_stuck s = {.comm = op->comm_id, .id = op->id, .proc = fr->proc, .rank = op->rank,
                      .is_p2p = op->is_p2p,
                      .peer = op->peer, .nch = op->nch, .seq = op->seq,
                      .start_ns = op->start_ns, .stop_ns = op->stop_ns,
                      .kch_done = op->kernel_channels_done,
                      .stopped = op->stop_ns != 0, .nopen = op->nopen, .maybe = maybe};
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
    if (ses) {
        char host[sizeof(ses->host) + 1];
        memcpy(host, ses->host, sizeof(ses->host));
        host[sizeof(ses->host)] = '\0';
        fr->proc = nsc_hm_proc_id(host, ses->pid);
    }
}

/* A suspect kept: a later one of the same rank replaces it. */
static void add_suspect(struct nsc_hm_job *j, const struct nsc_hm_suspect *s) {
    for (size_t i = 0; i < j->suspects.n; i++)
        if (j->suspects.v[i].comm == s->comm && j->suspects.v[i].rank == s->rank) {
            j->suspects.v[i] = *s;
            return;
        }
    size_t n = j->suspects.n;
    PUSH(j->suspects, *s);
    j->damaged |= j->suspects.n == n;
}

/* A block of the suspect level: its suspects, and the comms' last enqueued
 * collectives as entered; the watchdog's view (an earlier block's) stays. */
static void on_suspects(struct file_run *fr, const struct nsc_hang_view *v) {
    for (uint32_t k = 0; k < v->h.nsuspects; k++) {
        struct nsc_hang_suspect hs;
        nsc_hang_suspect_at(v, k, &hs);
        struct nsc_hm_suspect s = {.comm = hs.comm_id, .proc = fr->proc, .rank = hs.rank,
                                   .nranks = (int)hs.nranks, .seq = hs.seq,
                                   .waited_s = hs.waited_s, .suspect_seconds = v->h.suspect_seconds,
                                   .nmissing = hs.nmissing, .nknown = hs.nknown};
        snprintf(s.func, sizeof(s.func), "%s", hs.func[0] ? hs.func : "?");
        for (int r = 0; r < 8; r++)
            s.missing[r] = hs.missing[r];
        add_suspect(fr->j, &s);
    }
}

/* A HANG block: the in-process view of the operations in flight when the
 * watchdog fired. The latest block of a file replaces earlier ones (a
 * block of the suspect level adds its suspects instead). */
static void on_hang(void *ud, const struct nsc_decoder *d, const void *data, size_t len) {
    struct file_run *fr = ud;
    struct nsc_hang_view v;
    const char *why;
    if (nsc_hang_decode(data, len, &v, &why) != 0) {
        fr->j->damaged = 1;
        fprintf(fr->err, "ncclscope hang: %s: %s\n", nsc_decoder_path(d), why);
        return;
    }
    if (v.h.nsuspects) {
        on_suspects(fr, &v);
        goto comms;
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
        struct nsc_hm_stuck s;
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
        s.proc = fr->proc;
        s.is_p2p = o.etype == NSC_ET_P2P;
        s.peer = o.peer;
        s.nch = o.nch;
        snprintf(s.func, sizeof(s.func), "%s", o.func[0] ? o.func : "?");
        s.seq = o.seq;
        /* on the records' clock: the earliest stuck point-to-point
         * operation is chosen by it (comm_entry) */
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
                struct nsc_hm_proxy *w = &s.proxies[s.nproxies++];
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
comms:
    for (uint32_t c = 0; c < v.h.ncomms; c++) {
        struct nsc_hang_comm hc;
        nsc_hang_comm_at(&v, c, &hc);
        if (hc.enq_etype != NSC_ET_COLL || !hc.comm_id || !hc.enq_func[0])
            continue;
        struct nsc_hm_seqs *q = seqs_of(fr->j, hc.comm_id, hc.rank, hc.enq_func);
        if (q && (!q->n || hc.enq_seq > q->max)) {
            q->proc = fr->proc;
            note_enq(q, hc.enq_seq, 0);
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
    struct nsc_hm_job *j = fr->j;
    if (fr->wd_seen) {
        j->hang_files++;
        j->unwatched += fr->wd_full;
        j->orphans += fr->wd_orphans;
    }
    for (size_t k = 0; k < fr->wd.n; k++) {
        struct nsc_hm_stuck *w = &fr->wd.v[k];
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
    struct nsc_hm_job *j = fr->j;
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
        int nr = ci->nranks > 0 && ci->nranks <= NSC_HM_MAX_RANKS ? ci->nranks : 0;
        struct nsc_hm_member mb = {.comm = ci->comm_id, .proc = fr->proc, .rank = ci->rank, .nranks = nr};
        snprintf(mb.name, sizeof(mb.name), "%s", ci->name);
        PUSH(j->members, mb);
    }
}

int nsc_hm_entered(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func, uint64_t seq) {
    for (size_t i = 0; i < j->seqs.n; i++) {
        const struct nsc_hm_seqs *s = &j->seqs.v[i];
        /* Within the range a rank enqueued: seqNumbers follow each other,
         * so a gap there means lost records, not a skipped collective. */
        if (s->comm == comm && s->rank == rank && !strcmp(s->func, func))
            return s->n && seq >= s->min && seq <= s->max;
    }
    return 0;
}

/* The last seqNumber of func a rank entered, or -1. */
long long nsc_hm_last_entered(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func) {
    for (size_t i = 0; i < j->seqs.n; i++) {
        const struct nsc_hm_seqs *s = &j->seqs.v[i];
        if (s->comm == comm && s->rank == rank && !strcmp(s->func, func))
            return s->n ? (long long)s->max : -1;
    }
    return -1;
}

uint64_t nsc_hm_pair_count(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func, int peer) {
    for (size_t i = 0; i < j->pairs.n; i++) {
        const struct nsc_hm_pairs *p = &j->pairs.v[i];
        if (p->comm == comm && p->rank == rank && p->peer == peer && !strcmp(p->func, func))
            return p->n;
    }
    return 0;
}

int nsc_hm_traced(const struct nsc_hm_job *j, uint64_t comm, int rank) {
    for (size_t i = 0; i < j->members.n; i++)
        if (j->members.v[i].comm == comm && j->members.v[i].rank == rank)
            return 1;
    return 0;
}


/* By (comm, function, rank): the divergences' groups. */
static int cmp_seqs_ptr(const void *a, const void *b) {
    const struct nsc_hm_seqs *x = *(const struct nsc_hm_seqs *const *)a, *y = *(const struct nsc_hm_seqs *const *)b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    int c = strcmp(x->func, y->func);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_member(const void *a, const void *b) {
    const struct nsc_hm_member *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}


/* Several files of one process (flight dumps a moment apart: the job's
 * dump-all, then the rank's own watchdog) report the same operation. A
 * rank's operation has one event id, so keep one entry per (comm, rank,
 * id): the watchdog's view when there is one, else the later file's. */
static void dedupe_stuck(struct nsc_hm_job *j) {
    size_t n = 0;
    for (size_t i = 0; i < j->stuck.n; i++) {
        struct nsc_hm_stuck *s = &j->stuck.v[i];
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
        struct nsc_hm_stuck *t = &j->stuck.v[k];
        /* The records' enqueue time stays: the rows that only records give
         * (collectives not sampled, which may be stuck) have it, and the
         * root is chosen by enqueue order among all of a process's rows; a
         * HANG block has no stop time: the records' stays too. */
        uint64_t rec_start = !t->watchdog ? t->start_ns : !s->watchdog ? s->start_ns : 0;
        uint64_t stop = s->stop_ns > t->stop_ns ? s->stop_ns : t->stop_ns;
        if (s->watchdog || !t->watchdog) {
            free_stuck(t);
            *t = *s;
        } else {
            free_stuck(s);
        }
        if (rec_start)
            t->start_ns = rec_start;
        t->stop_ns = stop;
    }
    j->stuck.n = n;
}

/* A collective left open below a seqNumber its rank was seen to complete
 * (same comm and function) completed too, and so did a Send or Recv that
 * stopped before a later launch of its comm that its rank was seen to
 * complete (op_rules.h, nsc_op_p2p_overtaken): what it lacks is a lost child
 * record (a flight window that began inside it, a KernelCh stop never
 * delivered), not a hang. The watchdog retires such operations in the
 * process (op_state.c, overtaken()); this is the same rule on the records,
 * after every file is read (the completion may be in another file of the
 * process). */
static void drop_overtaken(struct nsc_hm_job *j) {
    const struct nsc_hm_seqs **S = malloc((j->seqs.n ? j->seqs.n : 1) * sizeof(*S));
    if (!S)
        return; /* the rule unapplied: more is reported stuck, nothing is hidden */
    for (size_t i = 0; i < j->seqs.n; i++)
        S[i] = &j->seqs.v[i];
    qsort(S, j->seqs.n, sizeof(*S), cmp_seqs_ptr);
    size_t n = 0;
    for (size_t i = 0; i < j->stuck.n; i++) {
        struct nsc_hm_stuck *s = &j->stuck.v[i];
        struct nsc_hm_seqs key = {.comm = s->comm, .rank = s->rank};
        memcpy(key.func, s->func, sizeof(key.func));
        const struct nsc_hm_seqs *pk = &key, **q =
            s->is_p2p ? NULL : bsearch(&pk, S, j->seqs.n, sizeof(*S), cmp_seqs_ptr);
        const struct nsc_hm_launch *l = NULL;
        for (size_t k = 0; s->is_p2p && k < j->launches.n && !l; k++)
            if (j->launches.v[k].comm == s->comm && j->launches.v[k].rank == s->rank)
                l = &j->launches.v[k];
        if ((q && (*q)->has_done && (*q)->done_max > s->seq) ||
            (l && nsc_op_p2p_overtaken(s->stop_ns, l->done_start_ns))) {
            free_stuck(s);
            j->overtaken++;
            continue;
        }
        j->stuck.v[n++] = *s;
    }
    j->stuck.n = n;
    free(S);
}

/* A collective that may be stuck (not sampled) is kept only while a
 * stuck operation of its comm on its rank is (the sampled one that made it
 * "maybe" may have been set aside by drop_overtaken). The stuck ones'
 * (comm, process, rank) sorted once: a big job has many of both. */
struct hold_key {
    uint64_t comm, proc;
    int rank;
};

static int cmp_hold_key(const void *a, const void *b) {
    const struct hold_key *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static void drop_lone_maybe(struct nsc_hm_job *j) {
    size_t nk = 0, nmaybe = 0;
    for (size_t i = 0; i < j->stuck.n; i++)
        nmaybe += j->stuck.v[i].maybe != 0;
    if (!nmaybe)
        return;
    struct hold_key *k = malloc((j->stuck.n - nmaybe + 1) * sizeof(*k));
    if (!k)
        return; /* the rule unapplied: more may be stuck, nothing is hidden */
    for (size_t i = 0; i < j->stuck.n; i++)
        if (!j->stuck.v[i].maybe)
            k[nk++] = (struct hold_key){j->stuck.v[i].comm, j->stuck.v[i].proc, j->stuck.v[i].rank};
    qsort(k, nk, sizeof(*k), cmp_hold_key);
    size_t n = 0;
    for (size_t i = 0; i < j->stuck.n; i++) {
        struct nsc_hm_stuck *s = &j->stuck.v[i];
        struct hold_key key = {s->comm, s->proc, s->rank};
        if (s->maybe && !bsearch(&key, k, nk, sizeof(*k), cmp_hold_key)) {
            free_stuck(s);
            continue;
        }
        j->stuck.v[n++] = *s;
    }
    j->stuck.n = n;
    free(k);
}

/* One file into job *j (a file's own job under -j): its records, its HANG
 * blocks, its members. Messages go to err. */
static void read_file(struct nsc_hm_job *j, const char *path, FILE *err) {
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
static void merge_job(struct nsc_hm_job *w, struct nsc_hm_job *p) {
    for (size_t i = 0; i < p->members.n; i++) {
        size_t n = w->members.n;
        PUSH(w->members, p->members.v[i]);
        w->damaged |= w->members.n == n;
    }
    for (size_t i = 0; i < p->seqs.n; i++) {
        const struct nsc_hm_seqs *s = &p->seqs.v[i];
        struct nsc_hm_seqs *q = seqs_of(w, s->comm, s->rank, s->func);
        if (!q) {
            w->damaged = 1;
            continue;
        }
        if (!q->n || s->min < q->min)
            q->min = s->min;
        if (!q->n || s->max > q->max)
            q->max = s->max;
        q->n += s->n;
        q->proc = s->proc;
        for (unsigned r = 0; r < s->nrecent; r++)
            note_enq(q, s->recent[r].seq, s->recent[r].ns);
        q->unrecorded |= s->unrecorded;
        if (s->has_unknown && (!q->has_unknown || s->unknown_min < q->unknown_min)) {
            q->unknown_min = s->unknown_min;
            q->has_unknown = 1;
        }
        if (s->has_done && (!q->has_done || s->done_max > q->done_max)) {
            q->done_max = s->done_max;
            q->has_done = 1;
        }
    }
    for (size_t i = 0; i < p->pairs.n; i++) {
        const struct nsc_hm_pairs *s = &p->pairs.v[i];
        struct nsc_hm_pairs *q = pairs_of(w, s->comm, s->rank, s->func, s->peer);
        if (q)
            q->n += s->n;
        else
            w->damaged = 1;
    }
    for (size_t i = 0; i < p->launches.n; i++)
        note_launch(w, p->launches.v[i].comm, p->launches.v[i].rank, p->launches.v[i].done_start_ns);
    for (size_t i = 0; i < p->stuck.n; i++) {
        size_t n = w->stuck.n;
        PUSH(w->stuck, p->stuck.v[i]);
        if (w->stuck.n == n)
            free_stuck(&p->stuck.v[i]);
    }
    for (size_t i = 0; i < p->suspects.n; i++)
        add_suspect(w, &p->suspects.v[i]);
    free(p->suspects.v);
    w->damaged |= p->damaged;
    w->ops += p->ops;
    w->overtaken += p->overtaken;
    w->hang_files += p->hang_files;
    w->unwatched += p->unwatched;
    w->orphans += p->orphans;
    w->unrecorded_files += p->unrecorded_files;
    w->kernel_ops += p->kernel_ops;
    w->sampled_ops += p->sampled_ops;
    w->unknown_ops += p->unknown_ops;
    free(p->members.v);
    free(p->seqs.v);
    free(p->pairs.v);
    free(p->launches.v);
    free(p->stuck.v);
    memset(p, 0, sizeof(*p));
}

struct par {
    const char *const *files;
    struct nsc_hm_job *whole, *part; /* part: one job per file */
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


void nsc_hm_read(struct nsc_hm_job *j, const char *const *files, int nfiles, int jobs, FILE *err) {
    memset(j, 0, sizeof(*j));
    if (jobs <= 0)
        jobs = nsc_jobs_default();
    int done = 0;
    if (jobs > 1 && nfiles > 1) {
        struct par p = {files, j, calloc((size_t)nfiles, sizeof(struct nsc_hm_job)), {0}, err};
        done = p.part && nsc_msgs_init(&p.msgs, nfiles) == 0 &&
               nsc_parallel(nfiles, jobs, par_work, par_in_order, &p) == 0;
        free(p.part);
        nsc_msgs_free(&p.msgs);
    }
    for (int i = 0; i < nfiles && !done; i++) /* -j 1, or no thread could start */
        read_file(j, files[i], err);
    dedupe_stuck(j);
    drop_overtaken(j);
    drop_lone_maybe(j);
}

void nsc_hm_free(struct nsc_hm_job *j) {
    for (size_t i = 0; i < j->stuck.n; i++)
        free_stuck(&j->stuck.v[i]);
    free(j->stuck.v);
    free(j->seqs.v);
    free(j->pairs.v);
    free(j->launches.v);
    free(j->members.v);
    free(j->suspects.v);
    memset(j, 0, sizeof(*j));
}

uint64_t nsc_hm_proc_id(const char *host, uint32_t pid) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)host; c && *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    for (int k = 0; k < 4; k++)
        h = (h ^ ((pid >> (8 * k)) & 0xff)) * 1099511628211ull;
    return h;
}

/* ---- the rules ---- */

struct pick_row {
    size_t i;
    const struct nsc_hm_cand *c;
    int held;
};

static int same_op(const struct nsc_hm_cand *a, const struct nsc_hm_cand *b) {
    return a->seq == b->seq && !strcmp(a->func ? a->func : "", b->func ? b->func : "");
}

static int cmp_pick_proc(const void *a, const void *b) {
    const struct pick_row *x = a, *y = b;
    if (x->c->proc != y->c->proc)
        return x->c->proc < y->c->proc ? -1 : 1;
    if (x->c->enq_ns != y->c->enq_ns)
        return x->c->enq_ns < y->c->enq_ns ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int cmp_pick_op(const void *a, const void *b) {
    const struct pick_row *x = a, *y = b;
    if (x->c->seq != y->c->seq)
        return x->c->seq < y->c->seq ? -1 : 1;
    int k = strcmp(x->c->func ? x->c->func : "", y->c->func ? y->c->func : "");
    return k ? k : (x->i > y->i) - (x->i < y->i);
}

size_t nsc_hm_pick(const struct nsc_hm_cand *c, size_t n) {
    struct pick_row *r = malloc((n ? n : 1) * sizeof(*r));
    if (!r) { /* the lowest seqNumber, as before the rule: still a stuck one */
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (c[i].seq < c[best].seq)
                best = i;
        return best;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = (struct pick_row){i, &c[i], 0};
    /* Held back: its process enqueued another of the comm's stuck
     * collectives before it (rows of one process by enqueue). */
    qsort(r, n, sizeof(*r), cmp_pick_proc);
    for (size_t g = 0, ge; g < n; g = ge) {
        for (ge = g + 1; ge < n && r[ge].c->proc == r[g].c->proc; ge++)
            ;
        for (size_t k = g; k < ge; k++)
            for (size_t q = g; q < k && !r[k].held; q++)
                r[k].held = r[q].c->enq_ns < r[k].c->enq_ns && !same_op(r[q].c, r[k].c);
    }
    /* Per operation (seqNumber, function): how many rows, how many held. */
    qsort(r, n, sizeof(*r), cmp_pick_op);
    size_t best = 0, bheld = 0, bcount = 0;
    int have = 0;
    for (size_t g = 0, ge; g < n; g = ge) {
        size_t held = 0;
        for (ge = g; ge < n && same_op(r[ge].c, r[g].c); ge++)
            held += (size_t)r[ge].held;
        size_t count = ge - g;
        /* groups come by (seqNumber, function): the first of equals wins */
        if (!have || held < bheld || (held == bheld && count > bcount)) {
            best = r[g].i;
            bheld = held;
            bcount = count;
            have = 1;
        }
    }
    free(r);
    return best;
}

struct cause_row {
    size_t k; /* index into the caller's rows */
    const struct nsc_hm_inst *in;
};

static int cmp_cause(const void *a, const void *b) {
    const struct cause_row *x = a, *y = b;
    if (x->in->proc != y->in->proc)
        return x->in->proc < y->in->proc ? -1 : 1;
    if (x->in->enq_ns != y->in->enq_ns)
        return x->in->enq_ns < y->in->enq_ns ? -1 : 1;
    if (x->in->entry != y->in->entry)
        return x->in->entry < y->in->entry ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

int nsc_hm_causes(size_t ne, const struct nsc_hm_inst *in, size_t ni, long *root_of) {
    long *pred = malloc((ne ? ne : 1) * sizeof(*pred));
    unsigned char *cyc = calloc(ne ? ne : 1, 1);
    struct cause_row *r = malloc((ni ? ni : 1) * sizeof(*r));
    size_t *pos = malloc((ni ? ni : 1) * sizeof(*pos)), *gstart = malloc((ni ? ni : 1) * sizeof(*gstart));
    int rc = -1;
    if (!pred || !cyc || !r || !pos || !gstart)
        goto out;
    for (size_t e = 0; e < ne; e++)
        pred[e] = root_of[e] = -1;
    size_t nr = 0;
    for (size_t k = 0; k < ni; k++)
        if (in[k].enq_ns && in[k].entry < ne)
            r[nr++] = (struct cause_row){k, &in[k]};
    qsort(r, nr, sizeof(*r), cmp_cause);
    for (size_t q = 0; q < nr; q++) {
        pos[r[q].k] = q;
        gstart[q] = q && r[q - 1].in->proc == r[q].in->proc ? gstart[q - 1] : q;
    }
    /* In the caller's order: an entry's first row with an earlier
     * operation of another entry on its process decides (the earliest of
     * them there). */
    for (size_t k = 0; k < ni; k++) {
        if (!in[k].enq_ns || in[k].entry >= ne || pred[in[k].entry] >= 0)
            continue;
        size_t q = pos[k];
        for (size_t b = gstart[q]; b < q; b++)
            if (r[b].in->entry != in[k].entry && r[b].in->enq_ns < in[k].enq_ns) {
                pred[in[k].entry] = (long)r[b].in->entry;
                break;
            }
    }
    /* Entries on a cycle wait on each other: each is a root. */
    for (size_t e = 0; e < ne; e++) {
        long cur = pred[e];
        for (size_t steps = 0; cur >= 0 && steps < ne && (size_t)cur != e; steps++)
            cur = pred[cur];
        cyc[e] = cur >= 0 && (size_t)cur == e;
    }
    for (size_t e = 0; e < ne; e++) {
        if (pred[e] < 0 || cyc[e])
            continue;
        long cur = pred[e];
        while (pred[cur] >= 0 && !cyc[cur])
            cur = pred[cur];
        root_of[e] = cur;
    }
    rc = 0;
out:
    free(pred);
    free(cyc);
    free(r);
    free(pos);
    free(gstart);
    return rc;
}

static int cmp_int(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The root's ranks on the processes that hold e's rows (ascending, once);
 * rows without a time count nowhere (nsc_hm_causes). Sorted, then
 * searched: a job of thousands of ranks has as many rows per entry. */
static int cause_ranks(struct nsc_hm_cause *c, size_t e, size_t root, const struct nsc_hm_inst *in,
                       const int *rank, size_t ni) {
    uint64_t *procs = malloc((ni ? ni : 1) * sizeof(*procs));
    c->ranks = malloc((ni ? ni : 1) * sizeof(int));
    c->nranks = 0;
    if (!procs || !c->ranks) {
        free(procs);
        return -1;
    }
    size_t np = 0;
    for (size_t k = 0; k < ni; k++)
        if (in[k].entry == e && in[k].enq_ns)
            procs[np++] = in[k].proc;
    qsort(procs, np, sizeof(*procs), cmp_u64);
    for (size_t k = 0; k < ni; k++)
        if (in[k].entry == root && in[k].enq_ns &&
            bsearch(&in[k].proc, procs, np, sizeof(*procs), cmp_u64))
            c->ranks[c->nranks++] = rank[k];
    qsort(c->ranks, (size_t)c->nranks, sizeof(int), cmp_int);
    int n = 0;
    for (int q = 0; q < c->nranks; q++)
        if (!n || c->ranks[n - 1] != c->ranks[q])
            c->ranks[n++] = c->ranks[q];
    c->nranks = n;
    free(procs);
    return 0;
}

int nsc_hm_order(size_t n, const struct nsc_hm_inst *in, const int *rank, size_t ni,
                          struct nsc_hm_cause *causes, size_t *order) {
    long *root = malloc((n ? n : 1) * sizeof(*root));
    size_t *shown = malloc((n ? n : 1) * sizeof(*shown));
    int rc = -1;
    if (!root || !shown || nsc_hm_causes(n, in, ni, root) != 0)
        goto out;
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t e = 0; e < n; e++)
            if ((root[e] < 0) == (pass == 0)) {
                shown[e] = k;
                order[k++] = e;
            }
    rc = 0;
    for (size_t e = 0; e < n; e++) {
        causes[e].behind = root[e] < 0 ? -1 : (long)shown[root[e]];
        causes[e].ranks = NULL;
        causes[e].nranks = 0;
        if (root[e] >= 0 && cause_ranks(&causes[e], e, (size_t)root[e], in, rank, ni) != 0)
            rc = -1;
    }
out:
    free(root);
    free(shown);
    return rc;
}

/* ---- the entries ---- */

static void entry_free(struct nsc_hm_entry *e) {
    free(e->unknown);
    free(e->missing);
    free(e->done);
    free(e->untraced);
    free(e->cause.ranks);
}

void nsc_hm_entries_free(struct nsc_hm_entry *e, size_t n) {
    for (size_t i = 0; e && i < n; i++)
        entry_free(&e[i]);
    free(e);
}

static const char *matching(const char *func) {
    return !strcmp(func, "Send") ? "Recv" : !strcmp(func, "Recv") ? "Send" : func;
}

/* KernelCh sampled: the rank entered (func, seq) and its completion is not
 * known (not sampled, no later operation of its comm completed). */
static int completion_unknown(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func,
                              uint64_t seq) {
    for (size_t i = 0; i < j->seqs.n; i++) {
        const struct nsc_hm_seqs *s = &j->seqs.v[i];
        if (s->comm == comm && s->rank == rank && !strcmp(s->func, func))
            return s->has_unknown && s->unknown_min <= seq;
    }
    return 0;
}

/* holds_others per collective (function, seqNumber) of one comm, computed
 * once: a comm's stuck rows repeat the same few collectives on every rank.
 * Built at the first question: the comm's seqs entries by (function, rank)
 * and its traced ranks, so that a job of thousands of ranks and comms asks
 * each collective in span log n, not span x (members + seqs). */
struct fact_cache {
    struct fact {
        const char *func;
        uint64_t seq;
        int holds;
    } *v;
    size_t n, cap;
    int built, failed;
    const struct nsc_hm_seqs **cs; /* the comm's, by (function, rank) */
    size_t ncs;
    int *tr, ntr;                  /* its traced ranks in [0, span), ascending */
};

static int cmp_seqs_func_rank(const void *a, const void *b) {
    const struct nsc_hm_seqs *x = *(const struct nsc_hm_seqs *const *)a,
                             *y = *(const struct nsc_hm_seqs *const *)b;
    int c = strcmp(x->func, y->func);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static void fact_cache_build(struct fact_cache *c, const struct nsc_hm_job *j, uint64_t comm,
                             int span) {
    c->built = 1;
    size_t ns = 0, nm = 0;
    for (size_t i = 0; i < j->seqs.n; i++)
        ns += j->seqs.v[i].comm == comm;
    for (size_t i = 0; i < j->members.n; i++)
        nm += j->members.v[i].comm == comm;
    c->cs = malloc((ns ? ns : 1) * sizeof(*c->cs));
    c->tr = malloc((nm ? nm : 1) * sizeof(*c->tr));
    if (!c->cs || !c->tr) {
        c->failed = 1;
        return;
    }
    for (size_t i = 0; i < j->seqs.n; i++)
        if (j->seqs.v[i].comm == comm)
            c->cs[c->ncs++] = &j->seqs.v[i];
    qsort(c->cs, c->ncs, sizeof(*c->cs), cmp_seqs_func_rank);
    for (size_t i = 0; i < j->members.n; i++)
        if (j->members.v[i].comm == comm && j->members.v[i].rank >= 0 && j->members.v[i].rank < span)
            c->tr[c->ntr++] = j->members.v[i].rank;
    qsort(c->tr, (size_t)c->ntr, sizeof(int), cmp_int);
    int n = 0;
    for (int q = 0; q < c->ntr; q++)
        if (!n || c->tr[n - 1] != c->tr[q])
            c->tr[n++] = c->tr[q];
    c->ntr = n;
}

/* The first of the comm's seqs entries of func at or after rank (ncs: none). */
static size_t fact_lower(const struct fact_cache *c, const char *func, int rank) {
    size_t lo = 0, hi = c->ncs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int k = strcmp(c->cs[mid]->func, func);
        if (k < 0 || (k == 0 && c->cs[mid]->rank < rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* s's collective may hold the comm: no rank was seen to complete it or a
 * later one of its function (then every rank took part in it: what
 * drop_overtaken says of one rank, across ranks), and some traced rank
 * never entered it (nsc_hm_entered's rule). Without memory: no (the rows
 * that may be stuck count as without sampling). */
static int holds_others(struct fact_cache *c, const struct nsc_hm_job *j, uint64_t comm, int span,
                        const struct nsc_hm_stuck *s) {
    for (size_t k = 0; k < c->n; k++)
        if (c->v[k].seq == s->seq && !strcmp(c->v[k].func, s->func))
            return c->v[k].holds;
    if (!c->built)
        fact_cache_build(c, j, comm, span);
    if (c->failed)
        return 0;
    int done = 0, never = 0;
    for (size_t i = fact_lower(c, s->func, INT32_MIN); i < c->ncs && !strcmp(c->cs[i]->func, s->func); i++)
        done |= c->cs[i]->has_done && c->cs[i]->done_max >= s->seq;
    for (int q = 0; q < c->ntr && !done && !never; q++) {
        if (c->tr[q] == s->rank)
            continue;
        size_t i = fact_lower(c, s->func, c->tr[q]);
        const struct nsc_hm_seqs *e = i < c->ncs && !strcmp(c->cs[i]->func, s->func) &&
                                              c->cs[i]->rank == c->tr[q] ? c->cs[i] : NULL;
        never = !(e && e->n && s->seq >= e->min && s->seq <= e->max);
    }
    int holds = !done && never;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct fact *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return holds; /* not kept: computed again next time */
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = (struct fact){s->func, s->seq, holds};
    return holds;
}

/* One stuck communicator's entry, less its cause. 0, or -1 without memory. */
static int comm_entry(const struct nsc_hm_job *j, uint64_t comm, struct nsc_hm_entry *e) {
    memset(e, 0, sizeof(*e));
    e->comm = comm;
    const struct nsc_hm_member *m = NULL;
    int nranks = 0, span = 0;
    for (size_t i = 0; i < j->members.n; i++)
        if (j->members.v[i].comm == comm) {
            m = &j->members.v[i];
            if (m->nranks > nranks)
                nranks = m->nranks;
            if (m->rank >= span && m->rank < NSC_HM_MAX_RANKS)
                span = m->rank + 1;
        }
    /* API v1-v3 (NCCL 2.23-2.26) do not tell a comm's size: the ranks are
     * then those traced, and who left no trace cannot be known. */
    if (nranks > 0)
        span = nranks;
    e->nranks = nranks;
    e->name = m ? m->name : "";
    /* The stuck collective its ranks enqueued first (nsc_hm_pick). */
    size_t nc = 0;
    for (size_t i = 0; i < j->stuck.n; i++)
        nc += j->stuck.v[i].comm == comm && !j->stuck.v[i].is_p2p;
    struct nsc_hm_cand *cand = malloc((nc ? nc : 1) * sizeof(*cand));
    const struct nsc_hm_stuck **of = malloc((nc ? nc : 1) * sizeof(*of));
    if (!cand || !of) {
        free(cand);
        free(of);
        return -1;
    }
    /* With KernelCh sampled, the comm's collectives that were not sampled
     * and may be stuck (behind its last completed one, before a stuck
     * sampled one) count where a traced rank never entered them: that is
     * what holds the others (the stuck sampled one waits behind it on the
     * same stream). Without such a fact they tell nothing, and the stuck
     * sampled ones are the candidates, as without sampling. */
    int maybe_root = 0;
    struct fact_cache fc = {0};
    for (int pass = 0; pass < 2; pass++) {
        nc = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct nsc_hm_stuck *s = &j->stuck.v[i];
            if (s->comm != comm || s->is_p2p)
                continue;
            if (pass == 0) {
                e->nmaybe += s->maybe != 0;
                if (s->maybe && !maybe_root && holds_others(&fc, j, comm, span, s))
                    maybe_root = 1;
                continue;
            }
            if (maybe_root ? !holds_others(&fc, j, comm, span, s) : s->maybe)
                continue;
            cand[nc] = (struct nsc_hm_cand){s->proc, s->start_ns, s->seq, s->func};
            of[nc++] = s;
        }
    }
    e->target = nc ? of[nsc_hm_pick(cand, nc)] : NULL;
    e->inferred = e->target && e->target->maybe;
    free(fc.v);
    free(fc.cs);
    free(fc.tr);
    free(cand);
    free(of);
    int cap = span > 0 ? span : 1;
    for (size_t i = 0; i < j->stuck.n; i++)
        if (j->stuck.v[i].rank >= cap)
            cap = j->stuck.v[i].rank + 1;
    e->missing = calloc((size_t)cap, sizeof(int));
    e->done = calloc((size_t)cap, sizeof(int));
    e->untraced = calloc((size_t)cap, sizeof(int));
    e->unknown = calloc((size_t)cap, sizeof(int));
    if (!e->missing || !e->done || !e->untraced || !e->unknown)
        return -1;
    for (int r = 0; r < nranks; r++)
        if (!nsc_hm_traced(j, comm, r))
            e->untraced[e->nuntraced++] = r;
    const struct nsc_hm_stuck *t = e->target;
    if (t) {
        for (int r = 0; r < span; r++) {
            if (!nsc_hm_traced(j, comm, r))
                continue;
            int in = 0;
            for (size_t i = 0; i < j->stuck.n && !in; i++) {
                const struct nsc_hm_stuck *s = &j->stuck.v[i];
                in = s->comm == comm && s->rank == r && !s->is_p2p && s->seq == t->seq &&
                     !strcmp(s->func, t->func);
            }
            if (in)
                continue;
            if (!nsc_hm_entered(j, comm, r, t->func, t->seq))
                e->missing[e->nmissing++] = r;
            else if (completion_unknown(j, comm, r, t->func, t->seq))
                e->unknown[e->nunknown++] = r;
            else
                e->done[e->ndone++] = r;
        }
        return 0;
    }
    /* Point-to-point only: the earliest stuck operation; the peers that
     * never posted: fewer matching operations toward the rank than it has
     * toward them. */
    for (size_t i = 0; i < j->stuck.n; i++) {
        const struct nsc_hm_stuck *s = &j->stuck.v[i];
        if (s->comm != comm || s->maybe) /* a collective not sampled: no p2p fact */
            continue;
        if (!e->first || s->start_ns < e->first->start_ns)
            e->first = s;
        if (nsc_hm_traced(j, comm, s->peer) &&
            nsc_hm_pair_count(j, comm, s->peer, matching(s->func), s->rank) <
                nsc_hm_pair_count(j, comm, s->rank, s->func, s->peer)) {
            int seen = 0;
            for (int q = 0; q < e->nmissing; q++)
                seen |= e->missing[q] == s->peer;
            if (!seen && e->nmissing < cap)
                e->missing[e->nmissing++] = s->peer;
        }
    }
    qsort(e->missing, (size_t)e->nmissing, sizeof(int), cmp_int);
    return 0;
}

/* An entry's rows for the causes: its stuck collective's, or (point-to-
 * point) every stuck operation of its comm. */
static int entry_rows(const struct nsc_hm_stuck *s, const struct nsc_hm_entry *e) {
    if (s->comm != e->comm)
        return 0;
    if (!e->target)
        return !s->maybe;
    return !s->is_p2p && s->seq == e->target->seq && !strcmp(s->func, e->target->func);
}

int nsc_hm_entries(const struct nsc_hm_job *j, struct nsc_hm_entry **out, size_t *n) {
    *out = NULL;
    *n = 0;
    /* Stuck communicators, in the order of their first stuck operation. */
    uint64_t *comms = calloc(j->stuck.n + 1, sizeof(*comms));
    if (!comms)
        return -1;
    size_t nc = 0;
    for (size_t i = 0; i < j->stuck.n; i++) {
        size_t k = 0;
        while (k < nc && comms[k] != j->stuck.v[i].comm)
            k++;
        if (k == nc)
            comms[nc++] = j->stuck.v[i].comm;
    }
    struct nsc_hm_entry *e = calloc(nc + 1, sizeof(*e)), *sorted = calloc(nc + 1, sizeof(*e));
    struct nsc_hm_inst *in = calloc(j->stuck.n + 1, sizeof(*in));
    int *rank = calloc(j->stuck.n + 1, sizeof(*rank));
    struct nsc_hm_cause *causes = calloc(nc + 1, sizeof(*causes));
    size_t *order = calloc(nc + 1, sizeof(*order));
    int rc = -1;
    size_t built = 0;
    if (!e || !sorted || !in || !rank || !causes || !order)
        goto out;
    for (; built < nc; built++)
        if (comm_entry(j, comms[built], &e[built]) != 0) {
            entry_free(&e[built]);
            goto out;
        }
    size_t ni = 0;
    for (size_t k = 0; k < nc; k++)
        for (size_t i = 0; i < j->stuck.n; i++)
            if (entry_rows(&j->stuck.v[i], &e[k])) {
                in[ni] = (struct nsc_hm_inst){k, j->stuck.v[i].proc, j->stuck.v[i].start_ns};
                rank[ni++] = j->stuck.v[i].rank;
            }
    if (nsc_hm_order(nc, in, rank, ni, causes, order) != 0) {
        for (size_t k = 0; k < nc; k++)
            free(causes[k].ranks);
        goto out;
    }
    for (size_t k = 0; k < nc; k++) {
        sorted[k] = e[order[k]];
        sorted[k].cause = causes[order[k]];
    }
    *out = sorted;
    *n = nc;
    sorted = NULL;
    rc = 0;
out:
    if (rc != 0)
        for (size_t k = 0; e && k < built; k++)
            entry_free(&e[k]);
    free(e);
    free(sorted);
    free(in);
    free(rank);
    free(causes);
    free(order);
    free(comms);
    return rc;
}

/* ---- the divergences ---- */

void nsc_hm_divergences_free(struct nsc_hm_div *d, size_t n) {
    for (size_t i = 0; d && i < n; i++) {
        free(d[i].in);
        free(d[i].out);
        free(d[i].out_last);
        free(d[i].cause.ranks);
    }
    free(d);
}

struct div_rank {
    int rank;
    long long last, min; /* -1: none of the function */
    int unrecorded;
    const struct nsc_hm_seqs *e;
};

/* When the rank enqueued that seqNumber (0: not among those kept). */
static uint64_t enq_of(const struct nsc_hm_seqs *s, long long seq) {
    for (unsigned k = 0; s && k < s->nrecent; k++)
        if ((long long)s->recent[k].seq == seq)
            return s->recent[k].ns;
    return 0;
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
 * ranks and comms) stay n log n. */
int nsc_hm_divergences(const struct nsc_hm_job *j, struct nsc_hm_div **outp, size_t *np) {
    *outp = NULL;
    *np = 0;
    size_t ns = j->seqs.n, nm = j->members.n;
    const struct nsc_hm_seqs **S = malloc((ns ? ns : 1) * sizeof(*S));
    struct nsc_hm_member *M = malloc((nm ? nm : 1) * sizeof(*M));
    struct div_rank *R = malloc((nm ? nm : 1) * sizeof(*R));
    NSC_HM_VEC(struct nsc_hm_div) dv = {0};
    NSC_HM_VEC(struct nsc_hm_inst) iv = {0};
    NSC_HM_VEC(int) rv = {0};
    struct nsc_hm_cause *causes = NULL;
    size_t *order = NULL;
    int rc = -1;
    if (!S || !M || !R)
        goto done;
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
            if (M[m1].rank >= span && M[m1].rank < NSC_HM_MAX_RANKS)
                span = M[m1].rank + 1;
            if (!*name)
                name = M[m1].name;
        }
        if (nranks > 0) /* else API v1-v3: the traced ranks (comm_entry) */
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
            const struct nsc_hm_seqs *e = k < gend && S[k]->rank == r && S[k]->n ? S[k] : NULL;
            R[nr] = (struct div_rank){.rank = r, .last = e ? (long long)e->max : -1,
                                      .min = e ? (long long)e->min : -1,
                                      .unrecorded = e ? e->unrecorded : 0, .e = e};
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
                /* completion not seen: no KernelCh, or (KernelCh sampled)
                 * not known from where it would be decided on */
                blind &= R[q].unrecorded ||
                         (R[q].e && R[q].e->has_unknown &&
                          (long long)R[q].e->unknown_min <= (point < 0 ? top : point));
            }
        if (point < 0 && whole && top >= 0)
            point = 0; /* only ranks with none of it are behind */
        if (point < 0 || !blind)
            continue;
        for (size_t q = 0; q < nr; q++) {
            if (R[q].last >= point)
                nin++;
            else if (R[q].last >= 0 || whole)
                nout++;
        }
        if (!nin || !nout)
            continue;
        struct nsc_hm_div d = {.comm = comm, .func = S[g]->func, .nranks = nranks, .seq = point,
                               .cause = {.behind = -1}};
        snprintf(d.name, sizeof(d.name), "%s", name);
        d.in = malloc((size_t)nin * sizeof(int));
        d.out = malloc((size_t)nout * sizeof(int));
        d.out_last = malloc((size_t)nout * sizeof(long long));
        size_t had = dv.n;
        if (d.in && d.out && d.out_last)
            PUSH(dv, d);
        if (dv.n == had) {
            free(d.in);
            free(d.out);
            free(d.out_last);
            goto done;
        }
        struct nsc_hm_div *dp = &dv.v[dv.n - 1];
        for (size_t q = 0; q < nr; q++) {
            if (R[q].last >= point) {
                dp->in[dp->nin++] = R[q].rank;
                /* its row for the causes: when this rank enqueued it */
                size_t hi = iv.n, hr = rv.n;
                PUSH(iv, ((struct nsc_hm_inst){dv.n - 1, R[q].e ? R[q].e->proc : 0,
                                               enq_of(R[q].e, point)}));
                PUSH(rv, R[q].rank);
                if (iv.n == hi || rv.n == hr)
                    goto done;
            } else if (R[q].last >= 0 || whole) {
                dp->out_last[dp->nout] = R[q].last;
                dp->out[dp->nout++] = R[q].rank;
            }
        }
    }
    causes = calloc(dv.n + 1, sizeof(*causes));
    order = calloc(dv.n + 1, sizeof(*order));
    if (!causes || !order || nsc_hm_order(dv.n, iv.v, rv.v, iv.n, causes, order) != 0) {
        for (size_t k = 0; causes && k < dv.n; k++)
            free(causes[k].ranks);
        goto done;
    }
    struct nsc_hm_div *out = calloc(dv.n + 1, sizeof(*out));
    if (!out) {
        for (size_t k = 0; k < dv.n; k++)
            free(causes[k].ranks);
        goto done;
    }
    for (size_t k = 0; k < dv.n; k++) {
        out[k] = dv.v[order[k]];
        out[k].cause = causes[order[k]];
    }
    free(dv.v);
    dv.v = NULL;
    *outp = out;
    *np = dv.n;
    dv.n = 0;
    rc = 0;
done:
    nsc_hm_divergences_free(dv.v, dv.n);
    free(iv.v);
    free(rv.v);
    free(causes);
    free(order);
    free(S);
    free(M);
    free(R);
    return rc;
}
