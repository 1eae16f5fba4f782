// SPDX-License-Identifier: Apache-2.0
/* suspect.c - the hang suspect level's thread (suspect.h has the contract). */
#include "suspect.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bg_thread.h"
#include "block_payload.h"
#include "clock.h"
#include "comm_table.h"
#include "engine.h"
#include "event_types.h"
#include "hot_line.h"
#include "intern.h"
#include "log.h"
#include "op_state.h"
#include "progress.h"
#include "progress_file.h"
#include "thread_state.h"
#include "watchdog.h"

#define PERIOD_MS 1000
/* A peer whose file changed within this many seconds is alive: its
 * writer runs every PERIOD_MS, and a shared file system may show a new
 * version a few seconds late. */
#define FRESH_S 5
/* A ring holding records the drainer has not taken for this long: what
 * this process knows lags what it enqueued (a frozen disk blocks the
 * drainer), so its file says ok 0 and its own ranks are not compared. */
#define LAG_MS 1000
#define FILE_COMMS 1024   /* comms in this process's file (the first slots) */
#define STAGE_MAX 8192    /* lines of one progress file used */
#define MAX_CANDS 1024    /* this process's (rank, function) pairs checked per pass */
#define MAX_SUSPECTS 64   /* suspects held for the gauge and a block */
#define MAX_FIRED 1024    /* ranks whose last suspect is remembered (once per stall) */

struct peer {
    char name[200];
    uint64_t gen;
    uint64_t seen;          /* ticks of our last read (0: never read) */
    uint64_t changed_after; /* ticks of the last read that showed another gen (0: none) */
    int listed;
};

/* One of this process's (rank, function) pairs that may wait for others. */
struct cand {
    const struct nsc_prog_pair *p;
    const struct nsc_comm_info *info;
    char func[32];
    uint64_t min_seq;       /* the lowest seqNumber a rank is missing (UINT64_MAX: none) */
    uint32_t nmissing, nknown;
    int32_t missing[NSC_HANG_SUSPECT_RANKS];
    struct nsc_opst_comm st;
    int have_st;
};

struct fired_key {
    uint32_t serial;
    uint16_t func;
    uint64_t seq;
};

static struct {
    pthread_t thread;
    int running, left_behind;
    pthread_mutex_t mu;     /* stop_req, done, current[], counters */
    pthread_cond_t cv;      /* CLOCK_MONOTONIC */
    int stop_req, done;
    struct timespec stop_deadline; /* CLOCK_MONOTONIC, from the stop request */
    char dir[NSC_CONFIG_DIR_MAX + 1], name[200];
    uint32_t seconds, hang_seconds, exit_wait_ms, nrings;
    uint64_t tps;
    /* the thread's own memory, made at start */
    struct nsc_prog_pair *pairs;
    struct nsc_comm_info *infos;
    char *text, *rbuf;
    struct peer *peers;
    uint32_t npeers;
    struct nsc_pf_entry *stage;
    uint32_t nstage;
    struct cand *cands;
    uint32_t ncands;
    uint64_t *lag_tail, *lag_since;
    struct fired_key *fired_keys;
    uint32_t nfired_keys;
    /* certainty (see uncertain()) */
    uint64_t gen, uncertain, drops_seen, unfollowed_seen;
    int write_failing, ok;
    /* under mu: what the metrics show */
    struct nsc_hang_suspect current[MAX_SUSPECTS];
    uint32_t ncurrent;
    uint64_t write_failures, read_failures, left_out;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic uint64_t fired_total;

/* ---- what this process knows, and how sure it is ---- */

static uint64_t drops_now(void) {
    struct nsc_thread *s = nsc_thread_sentinel();
    uint64_t d = atomic_load_explicit(&s->drops_ring, memory_order_relaxed) +
                 atomic_load_explicit(&s->drops_events, memory_order_relaxed);
    uint32_t n = nsc_thread_count();
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        d += atomic_load_explicit(&t->drops_ring, memory_order_relaxed) +
             atomic_load_explicit(&t->drops_events, memory_order_relaxed);
    }
    return d;
}

/* Sets S.uncertain to now when this process may have missed a collective
 * since the last pass (a record dropped, Coll not recorded, a pair the
 * table could not follow): a pair counts only once a collective recorded
 * after that moment raised it, a comm is complete only when it began
 * after it. Sets S.ok to 0 while a ring waits for the drainer longer than
 * LAG_MS (what is known lags). */
static void check_certainty(uint64_t now) {
    uint64_t d = drops_now(), u = nsc_prog_unfollowed();
    int coll_on = (nsc_ctl_recording() >> NSC_ET_COLL) & 1;
    if (d != S.drops_seen || u != S.unfollowed_seen || !coll_on)
        S.uncertain = now;
    S.drops_seen = d;
    S.unfollowed_seen = u;
    S.ok = coll_on;
    uint32_t n = nsc_thread_count();
    if (n > S.nrings)
        n = S.nrings;
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_ring *r = &nsc_thread_at(i)->ring;
        /* RELAXED: a heuristic of the drainer's pace, no data read through it */
        uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (head == tail) {
            S.lag_since[i] = 0;
            continue;
        }
        if (!S.lag_since[i] || S.lag_tail[i] != tail) {
            S.lag_tail[i] = tail;
            S.lag_since[i] = now;
        } else if (now - S.lag_since[i] > S.tps * LAG_MS / 1000) {
            S.ok = 0;
        }
    }
}

static int by_serial(const void *a, const void *b) {
    const struct nsc_prog_pair *x = a, *y = b;
    return (x->serial > y->serial) - (x->serial < y->serial);
}

/* A function name a line can carry (no blanks, not cut). */
static const char *func_text(uint16_t id) {
    const char *t = nsc_intern_text(id);
    if (!t || !*t || strlen(t) > 31 || strpbrk(t, " \t\r\n"))
        return NULL;
    return t;
}

static int info_by_serial(const void *a, const void *b) {
    const struct nsc_comm_info *x = a, *y = b;
    return (x->serial > y->serial) - (x->serial < y->serial);
}

static uint32_t first_pair(uint32_t npairs, uint32_t serial) {
    uint32_t lo = 0, hi = npairs;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (S.pairs[mid].serial < serial)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* This process's file: every described comm with its rank, and the pairs
 * raised since the last uncertainty. */
static size_t build_text(uint32_t npairs, uint32_t ninfo) {
    size_t cap = NSC_PF_MAX - 16, n = 0; /* room for "end\n" */
    n += (size_t)snprintf(S.text + n, cap - n, "ncclscope-progress 1\ngen %" PRIu64 "\nok %d\n",
                          ++S.gen, S.ok);
    for (uint32_t i = 0; i < ninfo && S.ok; i++) {
        const struct nsc_comm_info *c = &S.infos[i];
        if (c->rank < 0 || c->nranks <= c->rank || !c->comm_id)
            continue;
        size_t mark = n;
        int w = snprintf(S.text + n, cap - n, "c %016" PRIx64 " %d %d %d\n", c->comm_id, c->rank,
                         c->nranks, c->init_ticks > S.uncertain);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
        int full = 0;
        for (uint32_t k = first_pair(npairs, c->serial); k < npairs && S.pairs[k].serial == c->serial; k++) {
            const struct nsc_prog_pair *p = &S.pairs[k];
            const char *f = func_text(p->func);
            if (!f || p->ticks <= S.uncertain)
                continue;
            w = snprintf(S.text + n, cap - n, "f %s %" PRIu64 "\n", f, p->seq);
            if (w < 0 || (size_t)w >= cap - n) {
                full = 1;
                break;
            }
            n += (size_t)w;
        }
        if (full) { /* a comm without all its lines would read as "never entered" */
            n = mark;
            break;
        }
    }
    n += (size_t)snprintf(S.text + n, NSC_PF_MAX - n, "end\n");
    return n;
}

/* ---- the others' files ---- */

static void stage_entry(void *ud, const struct nsc_pf_entry *e) {
    (void)ud;
    if (S.nstage < STAGE_MAX)
        S.stage[S.nstage++] = *e;
}

static void add_missing(struct cand *c, int32_t rank, uint64_t seq) {
    if (seq < c->min_seq) {
        c->min_seq = seq;
        c->nmissing = 0;
    }
    if (seq != c->min_seq)
        return; /* it entered the lower one some other rank is missing */
    /* the lowest ranks kept, ascending */
    uint32_t k = c->nmissing < NSC_HANG_SUSPECT_RANKS ? c->nmissing : NSC_HANG_SUSPECT_RANKS;
    uint32_t at = 0;
    while (at < k && c->missing[at] < rank)
        at++;
    if (at < NSC_HANG_SUSPECT_RANKS) {
        uint32_t last = k < NSC_HANG_SUSPECT_RANKS ? k : NSC_HANG_SUSPECT_RANKS - 1;
        memmove(&c->missing[at + 1], &c->missing[at], (last - at) * sizeof(c->missing[0]));
        c->missing[at] = rank;
    }
    c->nmissing++;
}

/* The staged lines of one process, whose state is as of `obs` (ticks) or
 * later: each candidate's comm members among them entered its seqNumbers,
 * or have not, SUSPECT_SECONDS after this rank did. */
static void compare(uint64_t obs) {
    uint64_t limit = (uint64_t)S.seconds * S.tps;
    for (uint32_t i = 0; i < S.nstage; i++) {
        const struct nsc_pf_entry *e = &S.stage[i];
        if (e->func[0])
            continue;
        for (uint32_t k = 0; k < S.ncands; k++) {
            struct cand *c = &S.cands[k];
            if (c->info->comm_id != e->comm_id || c->info->rank == e->rank ||
                c->info->nranks != e->nranks)
                continue;
            /* its line for this function, after the comm line */
            const struct nsc_pf_entry *f = NULL;
            for (uint32_t j = i + 1; j < S.nstage && S.stage[j].func[0]; j++)
                if (!strcmp(S.stage[j].func, c->func))
                    f = &S.stage[j];
            if (!f && !e->complete)
                continue; /* not known */
            c->nknown++;
            if (f && f->seq >= c->p->seq)
                continue; /* entered all this rank did */
            uint64_t m = f ? f->seq + 1 : c->p->first_seq;
            if (m < c->p->first_seq)
                m = c->p->first_seq;
            uint64_t t = nsc_prog_entered_by(c->p, m);
            if (t && t + limit <= obs)
                add_missing(c, e->rank, m);
        }
    }
}

static struct peer *peer_of(const char *name) {
    for (uint32_t i = 0; i < S.npeers; i++)
        if (!strcmp(S.peers[i].name, name))
            return &S.peers[i];
    if (S.npeers >= NSC_SUSPECT_PEERS)
        return NULL;
    struct peer *p = &S.peers[S.npeers++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    return p;
}

/* Lists the directory's progress files (the first NSC_SUSPECT_PEERS other
 * than ours; the rest counted as left out), forgetting peers gone. */
static void list_peers(uint64_t *left_out, uint64_t *failures) {
    for (uint32_t i = 0; i < S.npeers; i++)
        S.peers[i].listed = 0;
    DIR *d = opendir(S.dir);
    if (!d) {
        (*failures)++;
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!nsc_pf_is_name(de->d_name) || !strcmp(de->d_name, S.name) ||
            strlen(de->d_name) >= sizeof(S.peers[0].name))
            continue;
        struct peer *p = peer_of(de->d_name);
        if (p)
            p->listed = 1;
        else
            (*left_out)++;
    }
    closedir(d);
    uint32_t k = 0;
    for (uint32_t i = 0; i < S.npeers; i++)
        if (S.peers[i].listed)
            S.peers[k++] = S.peers[i];
    S.npeers = k;
}

static void read_peers(uint64_t *failures) {
    uint64_t fresh = (uint64_t)FRESH_S * S.tps;
    for (uint32_t i = 0; i < S.npeers; i++) {
        struct peer *p = &S.peers[i];
        ssize_t n = nsc_pf_read(S.dir, p->name, S.rbuf, NSC_PF_MAX);
        uint64_t now = nsc_clock_ticks();
        struct nsc_pf_head h;
        S.nstage = 0;
        if (n < 0 || nsc_pf_parse(S.rbuf, &h, stage_entry, NULL) != 0) {
            /* ENOENT: its process ended between the listing and the read */
            if (n >= 0 || errno != ENOENT)
                (*failures)++;
            continue;
        }
        if (p->seen && h.gen != p->gen)
            p->changed_after = p->seen; /* this version was written after that read */
        p->gen = h.gen;
        p->seen = now;
        if (h.ok && p->changed_after && now - p->changed_after <= fresh)
            compare(p->changed_after);
    }
}

/* ---- firing ---- */

static struct fired_key *fired_of(uint32_t serial) {
    for (uint32_t i = 0; i < S.nfired_keys; i++)
        if (S.fired_keys[i].serial == serial)
            return &S.fired_keys[i];
    if (S.nfired_keys >= MAX_FIRED)
        S.nfired_keys = 0; /* forget all: at worst a stall is logged twice */
    struct fired_key *k = &S.fired_keys[S.nfired_keys++];
    memset(k, 0, sizeof(*k));
    k->serial = serial;
    return k;
}

/* A name into a block's fixed field, cut to fit (NCCL's are shorter). */
static void copy_name(char *dst, size_t n, const char *src) {
    size_t l = strnlen(src, n - 1);
    memcpy(dst, src, l);
    dst[l] = '\0';
}

static void to_entry(const struct cand *c, uint64_t now, struct nsc_hang_suspect *s) {
    memset(s, 0, sizeof(*s));
    s->serial = c->info->serial;
    s->rank = c->info->rank;
    s->comm_id = c->info->comm_id;
    s->seq = c->min_seq;
    /* its own START when kept (progress.h), else unknown */
    s->enq_ticks = 0;
    for (uint32_t k = 0; k < c->p->nhist; k++)
        if (c->p->hseq[k] == c->min_seq)
            s->enq_ticks = c->p->hticks[k];
    uint64_t t = nsc_prog_entered_by(c->p, c->min_seq);
    s->waited_s = t && now > t ? (uint32_t)((now - t) / S.tps) : 0;
    s->nranks = (uint32_t)c->info->nranks;
    s->nmissing = c->nmissing;
    s->nknown = c->nknown;
    copy_name(s->func, sizeof(s->func), c->func);
    for (uint32_t k = 0; k < NSC_HANG_SUSPECT_RANKS; k++)
        s->missing[k] = k < c->nmissing ? c->missing[k] : -1;
}

static void ranks_text(const struct nsc_hang_suspect *s, char *out, size_t n) {
    size_t w = 0;
    out[0] = '\0';
    uint32_t k = s->nmissing < NSC_HANG_SUSPECT_RANKS ? s->nmissing : NSC_HANG_SUSPECT_RANKS;
    for (uint32_t i = 0; i < k && w < n; i++)
        w += (size_t)snprintf(out + w, n - w, "%s%d", i ? "," : "", s->missing[i]);
    if (s->nmissing > k && w < n)
        snprintf(out + w, n - w, ",+%u", s->nmissing - k);
}

/* The HANG block of the suspects new in this pass (docs/format.md). */
static void post_block(const struct nsc_hang_suspect *news, const struct cand *const *nc,
                       uint32_t n, uint64_t now, uint64_t left_out) {
    struct nsc_hang_comm hc[MAX_SUSPECTS];
    memset(hc, 0, sizeof(hc));
    for (uint32_t i = 0; i < n; i++) {
        const struct cand *c = nc[i];
        hc[i].serial = c->info->serial;
        hc[i].rank = c->info->rank;
        hc[i].comm_id = c->info->comm_id;
        hc[i].enq_seq = c->p->seq;
        hc[i].enq_etype = NSC_ET_COLL;
        hc[i].stuck = 1;
        copy_name(hc[i].enq_func, sizeof(hc[i].enq_func), c->func);
        if (c->have_st) {
            hc[i].done_seq = c->st.done_seq;
            hc[i].done_ticks = c->st.any_done ? c->st.done_ticks : 0;
            hc[i].started = c->st.started;
            hc[i].completed = c->st.completed;
            hc[i].done_etype = c->st.done_etype;
            const char *d = c->st.any_done ? nsc_intern_text(c->st.done_func) : NULL;
            snprintf(hc[i].done_func, sizeof(hc[i].done_func), "%s", d ? d : "");
        }
    }
    struct nsc_hang_header hh = {.hang_seconds = S.hang_seconds,
                                 .left_out = left_out > UINT32_MAX ? UINT32_MAX : (uint32_t)left_out,
                                 .ticks = now, .suspect_seconds = S.seconds};
    size_t len = nsc_hang_size(n, 0, 0);
    unsigned char *buf = malloc(len + nsc_hang_suspects_size(n));
    if (!buf)
        return;
    nsc_hang_encode(buf, &hh, hc, n, NULL, 0, NULL, 0);
    len = nsc_hang_encode_suspects(buf, len, news, n);
    nsc_watchdog_post_suspect(buf, len); /* takes buf */
}

static void pass(void) {
    uint64_t now = nsc_clock_ticks();
    uint64_t limit = (uint64_t)S.seconds * S.tps;
    check_certainty(now);
    uint32_t npairs = nsc_prog_snapshot(S.pairs, NSC_PROG_PAIRS);
    qsort(S.pairs, npairs, sizeof(*S.pairs), by_serial);
    uint32_t ninfo = nsc_comm_describe_open(S.infos, FILE_COMMS);
    size_t len = build_text(npairs, ninfo);
    uint64_t wfail = 0, rfail = 0, left = 0;
    if (nsc_pf_write(S.dir, S.name, S.text, len) != 0) {
        wfail = 1;
        if (!S.write_failing)
            nsc_log_warn("ncclscope: cannot write the progress file %s/%s: %s; no other rank "
                         "sees this one's progress (hang suspects)",
                         S.dir, S.name, strerror(errno));
        S.write_failing = 1;
    } else if (S.write_failing) {
        nsc_log_info("ncclscope: writing the progress file %s/%s works again", S.dir, S.name);
        S.write_failing = 0;
    }
    /* Candidates: pairs of this process's ranks entered SUSPECT_SECONDS ago
     * or more whose comm completed nothing since (where completion is seen). */
    S.ncands = 0;
    qsort(S.infos, ninfo, sizeof(*S.infos), info_by_serial);
    for (uint32_t k = 0; k < npairs && S.ok && S.ncands < MAX_CANDS; k++) {
        const struct nsc_prog_pair *p = &S.pairs[k];
        if (p->ticks <= S.uncertain || p->first_ticks + limit > now)
            continue;
        struct nsc_comm_info key = {.serial = p->serial};
        const struct nsc_comm_info *info =
            bsearch(&key, S.infos, ninfo, sizeof(*S.infos), info_by_serial);
        const char *f = func_text(p->func);
        if (!info || !f || info->rank < 0 || info->nranks < 2 || !info->comm_id)
            continue;
        struct cand *c = &S.cands[S.ncands++];
        memset(c, 0, sizeof(*c));
        c->p = p;
        c->info = info;
        snprintf(c->func, sizeof(c->func), "%s", f);
        c->min_seq = UINT64_MAX;
        c->nknown = 1;
    }
    if (S.ncands) { /* what completed: the watchdog's per-comm state, one pass over the slots */
        uint32_t slots = nsc_comm_slot_bound(), kept = 0;
        struct nsc_opst_comm st;
        for (uint32_t i = 0; i < slots; i++)
            if (nsc_opst_comm_read(i, &st)) { /* the candidates are in serial order */
                uint32_t lo = 0, hi = S.ncands;
                while (lo < hi) {
                    uint32_t mid = (lo + hi) / 2;
                    if (S.cands[mid].p->serial < st.serial)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (uint32_t k = lo; k < S.ncands && S.cands[k].p->serial == st.serial; k++) {
                    S.cands[k].st = st;
                    S.cands[k].have_st = 1;
                }
            }
        for (uint32_t k = 0; k < S.ncands; k++) {
            struct cand *c = &S.cands[k];
            if (c->have_st && c->st.any_done &&
                (now - c->st.done_ticks < limit ||
                 (c->st.done_etype == NSC_ET_COLL && c->st.done_func == c->p->func &&
                  c->st.done_seq >= c->p->seq)))
                continue; /* it completed lately, or completed all of this function */
            S.cands[kept++] = *c;
        }
        S.ncands = kept;
    }
    if (S.ncands) {
        /* This process's other ranks: its own file, as of a drain ago. */
        S.nstage = 0;
        struct nsc_pf_head h;
        memcpy(S.rbuf, S.text, len + 1);
        if (nsc_pf_parse(S.rbuf, &h, stage_entry, NULL) == 0 && now > S.tps * LAG_MS / 1000)
            compare(now - S.tps * LAG_MS / 1000);
        list_peers(&left, &rfail);
        read_peers(&rfail);
    }
    struct nsc_hang_suspect cur[MAX_SUSPECTS], news[MAX_SUSPECTS];
    const struct cand *nc[MAX_SUSPECTS];
    uint32_t ncur = 0, nnew = 0;
    /* One suspect per rank of a comm: of its functions with ranks missing,
     * the collective it entered first (NCCL numbers each function on its
     * own: AllReduce 9 and the AllGather 9 enqueued behind it coexist; the
     * earlier is the one the others wait for). Candidates are in serial
     * order. */
    for (uint32_t k = 0; k < S.ncands && ncur < MAX_SUSPECTS; k++) {
        struct cand *c = NULL;
        uint64_t first = UINT64_MAX;
        uint32_t g = k;
        for (; g < S.ncands && S.cands[g].p->serial == S.cands[k].p->serial; g++) {
            uint64_t t = S.cands[g].nmissing ? nsc_prog_entered_by(S.cands[g].p, S.cands[g].min_seq) : 0;
            if (t && t < first) {
                first = t;
                c = &S.cands[g];
            }
        }
        k = g - 1;
        if (!c)
            continue;
        to_entry(c, now, &cur[ncur]);
        struct fired_key *fk = fired_of(c->info->serial);
        if (fk->func != c->p->func || fk->seq != c->min_seq || !fk->func) {
            fk->func = c->p->func;
            fk->seq = c->min_seq;
            news[nnew] = cur[ncur];
            nc[nnew++] = c;
            char ranks[96];
            ranks_text(&cur[ncur], ranks, sizeof(ranks));
            nsc_log_warn("ncclscope: hang suspect: comm %016" PRIx64 " rank %d: %s seq %" PRIu64
                         " entered %u s ago, not entered by rank(s) %s (%u of %u ranks known), "
                         "nothing completed since; HANG block written (NCCLSCOPE_SUSPECT_SECONDS=%u)",
                         c->info->comm_id, c->info->rank, c->func, c->min_seq, cur[ncur].waited_s,
                         ranks, c->nknown, (unsigned)c->info->nranks, S.seconds);
        }
        ncur++;
    }
    if (nnew) {
        atomic_fetch_add_explicit(&fired_total, nnew, memory_order_relaxed);
        post_block(news, nc, nnew, now, left + rfail);
    }
    pthread_mutex_lock(&S.mu);
    memcpy(S.current, cur, ncur * sizeof(*cur));
    S.ncurrent = ncur;
    S.write_failures += wfail;
    S.read_failures += rfail;
    S.left_out += left;
    pthread_mutex_unlock(&S.mu);
}

static void deadline_after_ms(struct timespec *ts, uint64_t ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + ms * 1000000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *suspect_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&S.mu);
    while (!S.stop_req) {
        pthread_mutex_unlock(&S.mu);
        pass();
        pthread_mutex_lock(&S.mu);
        struct timespec dl;
        deadline_after_ms(&dl, PERIOD_MS);
        while (!S.stop_req && pthread_cond_timedwait(&S.cv, &S.mu, &dl) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&S.mu);
    /* The session's end: no file that would read as a live process. */
    char path[sizeof(S.dir) + sizeof(S.name) + 2];
    snprintf(path, sizeof(path), "%s/%s", S.dir, S.name);
    unlink(path);
    pthread_mutex_lock(&S.mu);
    S.done = 1;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.mu);
    return NULL;
}

static void free_mem(void) {
    free(S.pairs);
    free(S.infos);
    free(S.text);
    free(S.rbuf);
    free(S.peers);
    free(S.stage);
    free(S.cands);
    free(S.lag_tail);
    free(S.lag_since);
    free(S.fired_keys);
    S.pairs = NULL, S.infos = NULL, S.text = S.rbuf = NULL, S.peers = NULL, S.stage = NULL;
    S.cands = NULL, S.lag_tail = S.lag_since = NULL, S.fired_keys = NULL;
}

int nsc_suspect_start(const struct nsc_config *cfg, const char *stem) {
    if (!cfg->suspect_seconds || S.running)
        return 0;
    if (S.left_behind) { /* a thread still in the file system from an earlier session */
        nsc_log_warn("ncclscope: the progress file of an earlier session did not answer; "
                     "no hang suspects in this one");
        return -1;
    }
    snprintf(S.dir, sizeof(S.dir), "%s", cfg->dir);
    snprintf(S.name, sizeof(S.name), "%s%s", stem, NSC_PF_SUFFIX);
    S.seconds = cfg->suspect_seconds;
    S.hang_seconds = cfg->hang_seconds;
    S.exit_wait_ms = cfg->exit_wait_ms;
    S.tps = nsc_clock_ticks_per_sec();
    S.nrings = cfg->max_threads;
    S.pairs = malloc(NSC_PROG_PAIRS * sizeof(*S.pairs));
    S.infos = malloc(FILE_COMMS * sizeof(*S.infos));
    S.text = malloc(NSC_PF_MAX);
    S.rbuf = malloc(NSC_PF_MAX);
    S.peers = malloc(NSC_SUSPECT_PEERS * sizeof(*S.peers));
    S.stage = malloc(STAGE_MAX * sizeof(*S.stage));
    S.cands = malloc(MAX_CANDS * sizeof(*S.cands));
    S.lag_tail = calloc(S.nrings + 1, sizeof(*S.lag_tail));
    S.lag_since = calloc(S.nrings + 1, sizeof(*S.lag_since));
    S.fired_keys = malloc(MAX_FIRED * sizeof(*S.fired_keys));
    S.npeers = S.nfired_keys = 0;
    S.gen = 0;
    S.uncertain = 0;
    S.drops_seen = drops_now();
    S.unfollowed_seen = nsc_prog_unfollowed();
    S.write_failing = 0;
    S.stop_req = S.done = 0;
    S.ncurrent = 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&S.cv, &ca);
    pthread_condattr_destroy(&ca);
    static const struct nsc_engine_hooks hooks = {.progress = nsc_prog_record,
                                                  .hang_take = nsc_watchdog_take_block};
    int rc = -1;
    if (S.pairs && S.infos && S.text && S.rbuf && S.peers && S.stage && S.cands && S.lag_tail &&
        S.lag_since && S.fired_keys) {
        nsc_engine_observe(&hooks); /* records from now on (engine.h: RELEASE) */
        rc = nsc_bg_thread_start(&S.thread, cfg, suspect_main, NULL, "ncclscope-susp");
        if (rc != 0) {
            static const struct nsc_engine_hooks off = {.progress = nsc_prog_record};
            nsc_engine_unobserve(&off);
        }
    }
    if (rc != 0) {
        nsc_log_warn("ncclscope: cannot start the hang suspect thread; no hang suspects");
        free_mem();
        pthread_cond_destroy(&S.cv);
        return -1;
    }
    S.running = 1;
    return 0;
}

/* Keeps the library mapped for a thread left behind in a stalled file
 * system (a later dlclose would unmap the code it returns to). */
static void pin_library(void) {
    Dl_info info;
    if (dladdr((void *)&pin_library, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

void nsc_suspect_stop_request(void) {
    if (!S.running || S.stop_req)
        return;
    static const struct nsc_engine_hooks off = {.progress = nsc_prog_record};
    nsc_engine_unobserve(&off);
    deadline_after_ms(&S.stop_deadline, S.exit_wait_ms);
    pthread_mutex_lock(&S.mu);
    S.stop_req = 1;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.mu);
}

void nsc_suspect_stop(void) {
    if (!S.running)
        return;
    nsc_suspect_stop_request();
    pthread_mutex_lock(&S.mu);
    while (!S.done)
        if (pthread_cond_timedwait(&S.cv, &S.mu, &S.stop_deadline) == ETIMEDOUT)
            break;
    int done = S.done;
    S.ncurrent = 0;
    pthread_mutex_unlock(&S.mu);
    S.running = 0;
    if (!done) {
        pin_library();
        S.left_behind = 1; /* its memory stays: it still uses it */
        nsc_log_warn("ncclscope: the progress file in %s did not answer within "
                     "NCCLSCOPE_EXIT_WAIT_MS=%u ms; leaving the hang suspect thread behind",
                     S.dir, S.exit_wait_ms);
        return;
    }
    pthread_join(S.thread, NULL);
    pthread_cond_destroy(&S.cv);
    free_mem();
}

void nsc_suspect_metrics(FILE *f, int pid) {
    struct nsc_hang_suspect cur[MAX_SUSPECTS];
    pthread_mutex_lock(&S.mu);
    uint32_t n = S.ncurrent;
    memcpy(cur, S.current, n * sizeof(*cur));
    uint64_t wf = S.write_failures, rf = S.read_failures, lo = S.left_out;
    pthread_mutex_unlock(&S.mu);
    fprintf(f, "# HELP ncclscope_hang_suspect 1 while this rank waits in a collective that other "
               "ranks of its communicator had not entered NCCLSCOPE_SUSPECT_SECONDS after it did "
               "(missing: the lowest of them).\n"
               "# TYPE ncclscope_hang_suspect gauge\n");
    for (uint32_t i = 0; i < n; i++) {
        char ranks[96];
        ranks_text(&cur[i], ranks, sizeof(ranks));
        /* func is checked to hold no blank (func_text); quotes and
         * backslashes cannot occur in NCCL's names, but are left out. */
        char op[sizeof(cur[i].func)];
        size_t w = 0;
        for (const char *p = cur[i].func; *p; p++)
            if (*p != '"' && *p != '\\')
                op[w++] = *p;
        op[w] = '\0';
        fprintf(f,
                "ncclscope_hang_suspect{comm=\"%016" PRIx64 "\",rank=\"%d\",op=\"%s\",seq=\"%" PRIu64
                "\",missing=\"%s\"} 1\n",
                cur[i].comm_id, cur[i].rank, op, cur[i].seq, ranks);
    }
    fprintf(f,
            "# HELP ncclscope_hang_suspects_total Hang suspects logged (a rank's collective that "
            "others had not entered NCCLSCOPE_SUSPECT_SECONDS later).\n"
            "# TYPE ncclscope_hang_suspects_total counter\n"
            "ncclscope_hang_suspects_total{pid=\"%d\"} %" PRIu64 "\n"
            "# HELP ncclscope_progress_failures_total Progress files not written, not read "
            "(unreadable, malformed, a link, too large) or left out (more than %u).\n"
            "# TYPE ncclscope_progress_failures_total counter\n"
            "ncclscope_progress_failures_total{pid=\"%d\",kind=\"write\"} %" PRIu64 "\n"
            "ncclscope_progress_failures_total{pid=\"%d\",kind=\"read\"} %" PRIu64 "\n"
            "ncclscope_progress_failures_total{pid=\"%d\",kind=\"left_out\"} %" PRIu64 "\n",
            pid, atomic_load_explicit(&fired_total, memory_order_relaxed),
            (unsigned)NSC_SUSPECT_PEERS, pid, wf, pid, rf, pid, lo);
}

uint64_t nsc_suspect_fired(void) { return atomic_load_explicit(&fired_total, memory_order_relaxed); }
