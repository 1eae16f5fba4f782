// SPDX-License-Identifier: Apache-2.0
/* suspect.c - the hang suspect level's thread: what this process knows, its
 * file, its candidates, the firing (suspect.h has the contract; the
 * others' files are suspect_peers.c's). */
#include "suspect.h"

#include <dirent.h>
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
#include "lib_pin.h"
#include "log.h"
#include "op_state.h"
#include "progress.h"
#include "progress_file.h"
#include "thread_state.h"
#include "watchdog.h"

#include "suspect_int.h"

struct suspect_state nsc_sus = {.mu = PTHREAD_MUTEX_INITIALIZER, .aux = -1};
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

/* Sets nsc_sus.uncertain to now when this process may have missed a collective
 * since the last pass (a record dropped, Coll not recorded, a pair the
 * table could not follow): a pair counts only once a collective recorded
 * after that moment raised it, a comm is complete only when it began
 * after it. Sets nsc_sus.ok to 0 while a ring waits for the drainer longer than
 * the lag bound (what is known lags). */
static void check_certainty(uint64_t now) {
    uint64_t d = drops_now(), u = nsc_prog_unfollowed();
    int coll_on = (nsc_ctl_recording() >> NSC_ET_COLL) & 1;
    if (d != nsc_sus.drops_seen || u != nsc_sus.unfollowed_seen || !coll_on)
        nsc_sus.uncertain = now;
    nsc_sus.drops_seen = d;
    nsc_sus.unfollowed_seen = u;
    nsc_sus.ok = coll_on;
    uint32_t n = nsc_thread_count();
    if (n > nsc_sus.nrings)
        n = nsc_sus.nrings;
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_ring *r = &nsc_thread_at(i)->ring;
        /* RELAXED: a heuristic of the drainer's pace, no data read through it */
        uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (head == tail) {
            nsc_sus.lag_since[i] = 0;
            continue;
        }
        if (!nsc_sus.lag_since[i] || nsc_sus.lag_tail[i] != tail) {
            nsc_sus.lag_tail[i] = tail;
            nsc_sus.lag_since[i] = now;
        } else if (now - nsc_sus.lag_since[i] > nsc_sus.lag_ticks) {
            nsc_sus.ok = 0;
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
        if (nsc_sus.pairs[mid].serial < serial)
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
    n += (size_t)snprintf(nsc_sus.text + n, cap - n, "ncclscope-progress 1\ngen %" PRIu64 "\nok %d\n",
                          ++nsc_sus.gen, nsc_sus.ok);
    for (uint32_t i = 0; i < ninfo && nsc_sus.ok; i++) {
        const struct nsc_comm_info *c = &nsc_sus.infos[i];
        if (c->rank < 0 || c->nranks <= c->rank || !c->comm_id)
            continue;
        size_t mark = n;
        int w = snprintf(nsc_sus.text + n, cap - n, "c %016" PRIx64 " %d %d %d\n", c->comm_id, c->rank,
                         c->nranks, c->init_ticks > nsc_sus.uncertain);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
        int full = 0;
        for (uint32_t k = first_pair(npairs, c->serial);
             k < npairs && nsc_sus.pairs[k].serial == c->serial; k++) {
            const struct nsc_prog_pair *p = &nsc_sus.pairs[k];
            const char *f = func_text(p->func);
            if (!f || p->ticks <= nsc_sus.uncertain)
                continue;
            w = snprintf(nsc_sus.text + n, cap - n, "f %s %" PRIu64 "\n", f, p->seq);
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
    n += (size_t)snprintf(nsc_sus.text + n, NSC_PF_MAX - n, "end\n");
    return n;
}

/* ---- firing ---- */

static struct fired_key *fired_of(uint32_t serial) {
    for (uint32_t i = 0; i < nsc_sus.nfired_keys; i++)
        if (nsc_sus.fired_keys[i].serial == serial)
            return &nsc_sus.fired_keys[i];
    if (nsc_sus.nfired_keys >= MAX_FIRED)
        nsc_sus.nfired_keys = 0; /* forget all: at worst a stall is logged twice */
    struct fired_key *k = &nsc_sus.fired_keys[nsc_sus.nfired_keys++];
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
    s->waited_s = t && now > t ? (uint32_t)((now - t) / nsc_sus.tps) : 0;
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
    struct nsc_hang_header hh = {.hang_seconds = nsc_sus.hang_seconds,
                                 .left_out = left_out > UINT32_MAX ? UINT32_MAX : (uint32_t)left_out,
                                 .ticks = now, .suspect_seconds = nsc_sus.seconds};
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
    uint64_t limit = (uint64_t)nsc_sus.seconds * nsc_sus.tps;
    check_certainty(now);
    uint32_t npairs = nsc_prog_snapshot(nsc_sus.pairs, NSC_PROG_PAIRS);
    qsort(nsc_sus.pairs, npairs, sizeof(*nsc_sus.pairs), by_serial);
    uint32_t ninfo = nsc_comm_describe_open(nsc_sus.infos, FILE_COMMS);
    size_t len = build_text(npairs, ninfo);
    uint64_t wfail = 0, rfail = 0, left = 0;
    if (sus_io_write(nsc_sus.name, nsc_sus.text, len) != 0) {
        wfail = 1;
        if (!nsc_sus.write_failing)
            nsc_log_warn("ncclscope: cannot write the progress file %s/%s: %s; no other rank "
                         "sees this one's progress (hang suspects)",
                         nsc_sus.dir, nsc_sus.name, strerror(errno));
        nsc_sus.write_failing = 1;
    } else if (nsc_sus.write_failing) {
        nsc_log_info("ncclscope: writing the progress file %s/%s works again", nsc_sus.dir,
                     nsc_sus.name);
        nsc_sus.write_failing = 0;
    }
    /* Candidates: pairs of this process's ranks entered SUSPECT_SECONDS ago
     * or more whose comm completed nothing since (where completion is seen). */
    nsc_sus.ncands = 0;
    qsort(nsc_sus.infos, ninfo, sizeof(*nsc_sus.infos), info_by_serial);
    for (uint32_t k = 0; k < npairs && nsc_sus.ok && nsc_sus.ncands < MAX_CANDS; k++) {
        const struct nsc_prog_pair *p = &nsc_sus.pairs[k];
        if (p->ticks <= nsc_sus.uncertain || p->first_ticks + limit > now)
            continue;
        struct nsc_comm_info key = {.serial = p->serial};
        const struct nsc_comm_info *info =
            bsearch(&key, nsc_sus.infos, ninfo, sizeof(*nsc_sus.infos), info_by_serial);
        const char *f = func_text(p->func);
        if (!info || !f || info->rank < 0 || info->nranks < 2 || !info->comm_id)
            continue;
        struct cand *c = &nsc_sus.cands[nsc_sus.ncands++];
        memset(c, 0, sizeof(*c));
        c->p = p;
        c->info = info;
        snprintf(c->func, sizeof(c->func), "%s", f);
        c->min_seq = UINT64_MAX;
        c->nknown = 1;
    }
    if (nsc_sus.ncands) { /* what completed: the watchdog's per-comm state, one pass over the slots */
        uint32_t slots = nsc_comm_slot_bound(), kept = 0;
        struct nsc_opst_comm st;
        for (uint32_t i = 0; i < slots; i++)
            if (nsc_opst_comm_read(i, &st)) { /* the candidates are in serial order */
                uint32_t lo = 0, hi = nsc_sus.ncands;
                while (lo < hi) {
                    uint32_t mid = (lo + hi) / 2;
                    if (nsc_sus.cands[mid].p->serial < st.serial)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (uint32_t k = lo; k < nsc_sus.ncands && nsc_sus.cands[k].p->serial == st.serial;
                     k++) {
                    nsc_sus.cands[k].st = st;
                    nsc_sus.cands[k].have_st = 1;
                }
            }
        for (uint32_t k = 0; k < nsc_sus.ncands; k++) {
            struct cand *c = &nsc_sus.cands[k];
            if (c->have_st && c->st.any_done &&
                (c->st.done_ticks > now || now - c->st.done_ticks < limit ||
                 (c->st.done_etype == NSC_ET_COLL && c->st.done_func == c->p->func &&
                  c->st.done_seq >= c->p->seq)))
                continue; /* it completed lately, or completed all of this function */
            nsc_sus.cands[kept++] = *c;
        }
        nsc_sus.ncands = kept;
    }
    if (nsc_sus.ncands) {
        /* This process's other ranks: its own file, as of a drain ago. */
        nsc_sus.nstage = 0;
        nsc_sus.stage_full = 0;
        struct nsc_pf_head h;
        memcpy(nsc_sus.rbuf, nsc_sus.text, len + 1);
        int parsed = nsc_pf_parse(nsc_sus.rbuf, &h, sus_stage_entry, NULL) == 0;
        sus_stage_trim();
        if (parsed && now > nsc_sus.lag_ticks)
            sus_compare(now - nsc_sus.lag_ticks);
        sus_list_peers(&left, &rfail);
        sus_read_peers(&rfail);
    }
    struct nsc_hang_suspect cur[MAX_SUSPECTS], news[MAX_SUSPECTS];
    const struct cand *nc[MAX_SUSPECTS];
    uint32_t ncur = 0, nnew = 0;
    /* One suspect per rank of a comm: of its functions with ranks missing,
     * the collective it entered first (NCCL numbers each function on its
     * own: AllReduce 9 and the AllGather 9 enqueued behind it coexist; the
     * earlier is the one the others wait for). Candidates are in serial
     * order. */
    for (uint32_t k = 0; k < nsc_sus.ncands && ncur < MAX_SUSPECTS; k++) {
        struct cand *c = NULL;
        uint64_t first = UINT64_MAX;
        uint32_t g = k;
        for (; g < nsc_sus.ncands && nsc_sus.cands[g].p->serial == nsc_sus.cands[k].p->serial; g++) {
            struct cand *x = &nsc_sus.cands[g];
            uint64_t t = x->nmissing ? nsc_prog_entered_by(x->p, x->min_seq) : 0;
            if (t && t < first) {
                first = t;
                c = x;
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
                         ranks, c->nknown, (unsigned)c->info->nranks, nsc_sus.seconds);
        }
        ncur++;
    }
    if (nnew) {
        atomic_fetch_add_explicit(&fired_total, nnew, memory_order_relaxed);
        post_block(news, nc, nnew, now, left + rfail);
    }
    pthread_mutex_lock(&nsc_sus.mu);
    memcpy(nsc_sus.current, cur, ncur * sizeof(*cur));
    nsc_sus.ncurrent = ncur;
    nsc_sus.write_failures += wfail;
    nsc_sus.read_failures += rfail;
    nsc_sus.left_out += left;
    pthread_mutex_unlock(&nsc_sus.mu);
}

static void deadline_after_ms(struct timespec *ts, uint64_t ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + ms * 1000000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *suspect_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&nsc_sus.mu);
    while (!nsc_sus.stop_req) {
        pthread_mutex_unlock(&nsc_sus.mu);
        pass();
        pthread_mutex_lock(&nsc_sus.mu);
        struct timespec dl;
        deadline_after_ms(&dl, PERIOD_MS);
        while (!nsc_sus.stop_req && pthread_cond_timedwait(&nsc_sus.cv, &nsc_sus.mu, &dl) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&nsc_sus.mu);
    /* The session's end: no file that would read as a live process; then
     * the writer's channel closes (the writer leaves once all are). */
    sus_io_unlink(nsc_sus.name);
    if (nsc_sus.aux >= 0)
        close(nsc_sus.aux);
    nsc_sus.aux = -1;
    pthread_mutex_lock(&nsc_sus.mu);
    nsc_sus.done = 1;
    pthread_cond_broadcast(&nsc_sus.cv);
    pthread_mutex_unlock(&nsc_sus.mu);
    return NULL;
}

static void free_mem(void) {
    free(nsc_sus.pairs);
    free(nsc_sus.infos);
    free(nsc_sus.text);
    free(nsc_sus.rbuf);
    free(nsc_sus.names);
    free(nsc_sus.peers);
    free(nsc_sus.stage);
    free(nsc_sus.cands);
    free(nsc_sus.lag_tail);
    free(nsc_sus.lag_since);
    free(nsc_sus.fired_keys);
    nsc_sus.pairs = NULL, nsc_sus.infos = NULL, nsc_sus.text = nsc_sus.rbuf = nsc_sus.names = NULL;
    nsc_sus.peers = NULL, nsc_sus.stage = NULL;
    nsc_sus.cands = NULL, nsc_sus.lag_tail = nsc_sus.lag_since = NULL, nsc_sus.fired_keys = NULL;
}

int nsc_suspect_start(const struct nsc_config *cfg, const char *stem) {
    if (!cfg->suspect_seconds || nsc_sus.running)
        return 0;
    if (nsc_sus.left_behind) { /* a thread still in the file system from an earlier session */
        nsc_log_warn("ncclscope: the progress file of an earlier session did not answer; "
                     "no hang suspects in this one");
        return -1;
    }
    snprintf(nsc_sus.dir, sizeof(nsc_sus.dir), "%s", cfg->dir);
    snprintf(nsc_sus.name, sizeof(nsc_sus.name), "%s%s", stem, NSC_PF_SUFFIX);
    nsc_sus.seconds = cfg->suspect_seconds;
    nsc_sus.hang_seconds = cfg->hang_seconds;
    nsc_sus.exit_wait_ms = cfg->exit_wait_ms;
    nsc_sus.tps = nsc_clock_ticks_per_sec();
    /* LAG_MS past the drainer's own sleeps (NCCLSCOPE_DRAIN_US, up to an
     * hour): a slow drain pace set on purpose is not a lag */
    nsc_sus.lag_ticks =
        nsc_sus.tps * LAG_MS / 1000 + nsc_sus.tps * 2 * (uint64_t)cfg->drain_us / 1000000;
    nsc_sus.nrings = cfg->max_threads;
    nsc_sus.pairs = malloc(NSC_PROG_PAIRS * sizeof(*nsc_sus.pairs));
    nsc_sus.infos = malloc(FILE_COMMS * sizeof(*nsc_sus.infos));
    nsc_sus.text = malloc(NSC_PF_MAX);
    nsc_sus.rbuf = malloc(NSC_PF_MAX);
    nsc_sus.names = malloc(NAMES_BYTES);
    nsc_sus.peers = malloc(NSC_SUSPECT_PEERS * sizeof(*nsc_sus.peers));
    nsc_sus.stage = malloc(STAGE_MAX * sizeof(*nsc_sus.stage));
    nsc_sus.cands = malloc(MAX_CANDS * sizeof(*nsc_sus.cands));
    nsc_sus.lag_tail = calloc(nsc_sus.nrings + 1, sizeof(*nsc_sus.lag_tail));
    nsc_sus.lag_since = calloc(nsc_sus.nrings + 1, sizeof(*nsc_sus.lag_since));
    nsc_sus.fired_keys = malloc(MAX_FIRED * sizeof(*nsc_sus.fired_keys));
    nsc_sus.npeers = nsc_sus.nfired_keys = 0;
    nsc_sus.gen = 0;
    nsc_sus.uncertain = 0;
    nsc_sus.drops_seen = drops_now();
    nsc_sus.unfollowed_seen = nsc_prog_unfollowed();
    nsc_sus.write_failing = 0;
    nsc_sus.stop_req = nsc_sus.done = 0;
    nsc_sus.ncurrent = 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&nsc_sus.cv, &ca);
    pthread_condattr_destroy(&ca);
    static const struct nsc_engine_hooks hooks = {.progress = nsc_prog_record,
                                                  .hang_take = nsc_watchdog_take_block};
    int rc = -1;
    if (nsc_sus.pairs && nsc_sus.infos && nsc_sus.text && nsc_sus.rbuf && nsc_sus.names && nsc_sus.peers &&
        nsc_sus.stage && nsc_sus.cands && nsc_sus.lag_tail && nsc_sus.lag_since &&
        nsc_sus.fired_keys) {
        nsc_engine_observe(&hooks); /* records from now on (engine.h: RELEASE) */
        /* the writer process's channel: the thread's file-system calls go
         * through it (engine.h), or, without a writer, are its own */
        nsc_sus.aux = nsc_engine_aux_take();
        rc = nsc_bg_thread_start(&nsc_sus.thread, cfg, suspect_main, NULL, "ncclscope-susp");
        if (rc != 0) {
            static const struct nsc_engine_hooks off = {.progress = nsc_prog_record};
            nsc_engine_unobserve(&off);
            if (nsc_sus.aux >= 0)
                close(nsc_sus.aux);
            nsc_sus.aux = -1;
        }
    }
    if (rc != 0) {
        nsc_log_warn("ncclscope: cannot start the hang suspect thread; no hang suspects");
        free_mem();
        pthread_cond_destroy(&nsc_sus.cv);
        return -1;
    }
    pthread_mutex_lock(&nsc_sus.mu);
    nsc_sus.running = 1;
    pthread_mutex_unlock(&nsc_sus.mu);
    return 0;
}

void nsc_suspect_stop_request(void) {
    if (!nsc_sus.running || nsc_sus.stop_req)
        return;
    static const struct nsc_engine_hooks off = {.progress = nsc_prog_record};
    nsc_engine_unobserve(&off);
    deadline_after_ms(&nsc_sus.stop_deadline, nsc_sus.exit_wait_ms);
    pthread_mutex_lock(&nsc_sus.mu);
    nsc_sus.stop_req = 1;
    pthread_cond_broadcast(&nsc_sus.cv);
    pthread_mutex_unlock(&nsc_sus.mu);
}

void nsc_suspect_stop(void) {
    if (!nsc_sus.running)
        return;
    nsc_suspect_stop_request();
    pthread_mutex_lock(&nsc_sus.mu);
    while (!nsc_sus.done)
        if (pthread_cond_timedwait(&nsc_sus.cv, &nsc_sus.mu, &nsc_sus.stop_deadline) == ETIMEDOUT)
            break;
    int done = nsc_sus.done;
    nsc_sus.ncurrent = 0;
    nsc_sus.running = 0;
    pthread_mutex_unlock(&nsc_sus.mu);
    if (!done) {
        nsc_pin_library(); /* the thread returns into our code */
        nsc_sus.left_behind = 1; /* its memory stays: it still uses it */
        nsc_log_warn("ncclscope: the progress file in %s did not answer within "
                     "NCCLSCOPE_EXIT_WAIT_MS=%u ms; leaving the hang suspect thread behind",
                     nsc_sus.dir, nsc_sus.exit_wait_ms);
        return;
    }
    pthread_join(nsc_sus.thread, NULL);
    pthread_cond_destroy(&nsc_sus.cv);
    free_mem();
}

void nsc_suspect_metrics(FILE *f, int pid) {
    struct nsc_hang_suspect cur[MAX_SUSPECTS];
    pthread_mutex_lock(&nsc_sus.mu);
    if (!nsc_sus.running) { /* off (NCCLSCOPE_SUSPECT_SECONDS=0): no series */
        pthread_mutex_unlock(&nsc_sus.mu);
        return;
    }
    uint32_t n = nsc_sus.ncurrent;
    memcpy(cur, nsc_sus.current, n * sizeof(*cur));
    uint64_t wf = nsc_sus.write_failures, rf = nsc_sus.read_failures, lo = nsc_sus.left_out;
    pthread_mutex_unlock(&nsc_sus.mu);
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
