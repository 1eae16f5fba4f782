// SPDX-License-Identifier: Apache-2.0
/* watchdog.c - the hang watchdog's thread (watchdog.h has the contract). */
#include "watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block_payload.h"
#include "bg_thread.h"
#include "clock.h"
#include "comm_table.h"
#include "engine.h"
#include "intern.h"
#include "kernel_sample.h"
#include "log.h"
#include "op_state.h"
#include "slab.h"

/* How often the slab is scanned, and how long an operation without
 * KernelCh stays tracked after its stop (and its last child's) before it
 * counts as complete: the window for its ProxyOps, which NCCL starts after
 * the operation's stop, to attach. An operation holds its slot that long,
 * so a process issuing more than ~80,000 operations a second (64 B
 * collectives, the default mask) fills the slab's 16,384 slots, and the
 * operations that then find it full are recorded but not watched: the
 * last one before a hang among them. So once an allocation is refused
 * the watchdog scans every PRESSED_SCAN_MS with a grace of PRESSED_GRACE_MS,
 * which holds a slot at most their sum (room for ~1,000,000 operations a
 * second), and goes back after a second without a refusal unless that
 * second's rate would fill half the slab at the normal pace (then it
 * stays: no cycle of refusals under a steady high rate). The scans in
 * between its SCAN_MS ones are light (op_state.h): they only complete. A
 * ProxyOp that starts later than the short grace finds its operation gone
 * and is counted as an orphan: on 4 x H200's socket path ProxyOps started
 * 0.25 ms (median) and 4.3 ms (the latest of 240) after their Coll's stop
 * (tests/data/recordings/net_allreduce_1MiB). */
#define SCAN_MS 100
#define PRESSED_SCAN_MS 5
#define PRESSED_GRACE_MS 10
/* What a scan collects: every slot of the slab, so no operation or ProxyOp
 * in flight is ever left out of the per-comm counts. A cap below the slab
 * (it was 4,096) let one comm with more in flight fill it, and a comm hung
 * beside it was never seen. Bounded by the slab: 16,384 x 80 + 16,384 x 56
 * bytes, made at start, their pages touched only as a scan fills them. */
#define OPS_CAP NSC_SLAB_SLOTS
#define PROXIES_CAP NSC_SLAB_SLOTS
/* What a HANG block holds: under the writer's 256 KiB for small blocks
 * (64 + 256 x 96 + 2048 x 80 + 1280 x 48 = 249,920 bytes); the oldest
 * operations first, the rest counted in left_out. */
#define BLOCK_COMMS 256u
#define BLOCK_OPS 2048u
#define BLOCK_PROXIES 1280u
/* Each comm's oldest operations go into the block before any comm's
 * others, stalled comms first: a comm with thousands in flight cannot
 * crowd out the one that hangs (BLOCK_COMMS x FAIR_OPS = BLOCK_OPS). */
#define FAIR_OPS 8u
_Static_assert(BLOCK_COMMS * FAIR_OPS <= BLOCK_OPS, "every comm's oldest fit the block");
_Static_assert(64 + BLOCK_COMMS * 96 + BLOCK_OPS * 80 + BLOCK_PROXIES * 48 <= (256u << 10),
               "a HANG block fits the writer's small-block buffer");

static pthread_t thread;
static int running, flight;
static uint32_t hang_seconds;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stop_req;

/* The blocks built, under mu: `pending` not written yet (streaming),
 * `latest` kept for every later flight dump; the suspect level's in
 * spending/slatest (nsc_watchdog_post_suspect). */
static unsigned char *pending, *latest, *spending, *slatest;
static size_t pending_len, latest_len, spending_len, slatest_len;
static _Atomic int dump_wanted;
static _Atomic uint64_t fired;

/* The watchdog thread's own memory (made at start, freed at stop). */
static struct nsc_opst_op *ops;
static struct nsc_opst_proxy *proxies;
static uint8_t *op_taken;                 /* OPS_CAP: fire()'s choice */
static struct nsc_opst_op block_ops[BLOCK_OPS];
static uint64_t block_ids[BLOCK_OPS];     /* their ids, sorted: a ProxyOp's is looked up */
static struct nsc_comm_info *infos;
/* Per comm slot: the serial and completion count at the last firing, so a
 * comm fires again only after it completed something. */
static uint32_t fired_serial[NSC_MAX_COMMS];
static uint64_t fired_completed[NSC_MAX_COMMS];

static void name_of(char *dst, size_t n, uint16_t id) {
    const char *t = id ? nsc_intern_text(id) : NULL;
    snprintf(dst, n, "%s", t ? t : "");
}

struct comm_agg {
    uint32_t inflight;
    uint64_t oldest_start;
    struct nsc_opst_op oldest; /* a copy: fire() sorts ops */
    int stuck;
    uint32_t taken; /* fire(): its operations seen so far, oldest first */
    struct nsc_opst_comm st;
    int have_st;
};
static struct comm_agg agg[NSC_MAX_COMMS];
static uint32_t nslots; /* agg's entries in use this check: nsc_comm_slot_bound() */

/* Builds the HANG payload for every comm with operations in flight and
 * publishes it; logs one line per stalled comm. */
static int by_start(const void *a, const void *b) {
    const struct nsc_opst_op *x = a, *y = b;
    return x->start_ticks < y->start_ticks ? -1 : x->start_ticks > y->start_ticks;
}

static int by_id(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The operations the block holds, into block_ops (oldest first): each
 * stalled comm's FAIR_OPS oldest, then every other comm's, then the rest
 * by age, up to BLOCK_OPS. Returns how many. */
static uint32_t choose_ops(uint32_t nops) {
    qsort(ops, nops, sizeof(*ops), by_start);
    memset(op_taken, 0, nops);
    for (uint32_t ci = 0; ci < nslots; ci++)
        agg[ci].taken = 0;
    uint32_t kept = 0;
    /* pass 0: stalled comms' oldest; 1: the other comms' oldest; 2: the rest */
    for (int pass = 0; pass < 3; pass++)
        for (uint32_t i = 0; i < nops && kept < BLOCK_OPS; i++) {
            if (op_taken[i])
                continue;
            uint32_t ci = ops[i].comm_index;
            struct comm_agg *a = ci < nslots ? &agg[ci] : NULL;
            if (pass < 2) {
                if (!a || (pass == 0) != (a->stuck != 0) || a->taken >= FAIR_OPS)
                    continue;
                a->taken++;
            }
            op_taken[i] = 1;
            block_ops[kept++] = ops[i];
        }
    qsort(block_ops, kept, sizeof(*block_ops), by_start);
    return kept;
}

static void fire(uint64_t now, uint32_t nops, uint32_t nprox, uint32_t left_out) {
    uint32_t ninfo = nsc_comm_describe_open(infos, NSC_MAX_COMMS);
    uint32_t nc = 0;
    for (uint32_t ci = 0; ci < nslots; ci++)
        nc += agg[ci].inflight && agg[ci].have_st;
    /* The operations kept, and the ProxyOps of those. (The per-comm
     * aggregates hold copies: ops may be reordered.) */
    uint32_t kept = choose_ops(nops);
    left_out += nops - kept;
    nops = kept;
    for (uint32_t k = 0; k < nops; k++)
        block_ids[k] = block_ops[k].id;
    qsort(block_ids, nops, sizeof(*block_ids), by_id);
    uint32_t kp = 0;
    for (uint32_t i = 0; i < nprox; i++) {
        int keep = nops && bsearch(&proxies[i].op_id, block_ids, nops, sizeof(*block_ids), by_id);
        if (keep && kp < BLOCK_PROXIES)
            proxies[kp++] = proxies[i];
        else
            left_out++;
    }
    nprox = kp;
    if (nc > BLOCK_COMMS) {
        left_out += nc - BLOCK_COMMS;
        nc = BLOCK_COMMS;
    }
    struct nsc_hang_comm *hc = calloc(nc ? nc : 1, sizeof(*hc));
    struct nsc_hang_op *ho = calloc(nops ? nops : 1, sizeof(*ho));
    struct nsc_hang_proxy *hp = calloc(nprox ? nprox : 1, sizeof(*hp));
    if (!hc || !ho || !hp)
        goto out;
    uint32_t k = 0;
    /* Stalled comms first, then the others, up to the block's room. */
    for (uint32_t pass = 0; pass < 2 * nslots && k < nc; pass++) {
        uint32_t ci = pass % nslots;
        struct comm_agg *a = &agg[ci];
        if (!a->inflight || !a->have_st || (pass < nslots) != (a->stuck != 0))
            continue;
        struct nsc_hang_comm *c = &hc[k++];
        c->serial = a->st.serial;
        c->rank = -1;
        for (uint32_t i = 0; i < ninfo; i++)
            if (infos[i].serial == a->st.serial) {
                c->rank = infos[i].rank;
                c->comm_id = infos[i].comm_id;
            }
        c->enq_seq = a->st.enq_seq;
        c->done_seq = a->st.done_seq;
        c->done_ticks = a->st.any_done ? a->st.done_ticks : 0;
        c->started = a->st.started;
        c->completed = a->st.completed;
        c->in_flight = a->inflight;
        c->enq_etype = a->st.enq_etype;
        c->done_etype = a->st.done_etype;
        c->stuck = (uint8_t)(a->stuck != 0);
        name_of(c->enq_func, sizeof(c->enq_func), a->st.enq_func);
        name_of(c->done_func, sizeof(c->done_func), a->st.done_func);
    }
    for (uint32_t i = 0; i < nops; i++) {
        const struct nsc_opst_op *o = &block_ops[i];
        struct nsc_hang_op *h = &ho[i];
        h->id = o->id;
        h->seq = o->seq;
        h->start_ticks = o->start_ticks;
        h->ch_started = o->ch_started;
        h->ch_done = o->ch_done;
        h->serial = o->serial;
        h->peer = o->peer;
        h->proxies = o->proxies;
        h->proxies_done = o->proxies_done;
        h->etype = o->etype;
        h->nch = o->nch;
        h->stopped = o->stopped;
        h->kernel_tracked = o->kernel_tracked;
        name_of(h->func, sizeof(h->func), o->func);
    }
    for (uint32_t i = 0; i < nprox; i++) {
        const struct nsc_opst_proxy *p = &proxies[i];
        struct nsc_hang_proxy *h = &hp[i];
        h->op_id = p->op_id;
        h->peer = p->peer;
        h->nsteps = p->nsteps;
        h->steps_open = p->steps_open;
        h->lowest_open_step = p->lowest_open;
        h->ch = p->ch;
        h->is_send = p->is_send;
        h->done = p->done;
        for (int w = 0; w < NSC_WAIT_COUNT; w++)
            h->waiting[w] = (uint16_t)(p->waiting[w] > 65535 ? 65535 : p->waiting[w]);
    }
    struct nsc_slab_counts sc;
    nsc_slab_counts(&sc);
    struct nsc_hang_header hh = {.hang_seconds = hang_seconds, .left_out = left_out,
                                 .ticks = now, .slab_full = sc.full,
                                 .slab_orphans = sc.orphans};
    size_t len = nsc_hang_size(k, nops, nprox);
    unsigned char *buf = malloc(len);
    unsigned char *copy = malloc(len);
    if (!buf || !copy) {
        free(buf);
        free(copy);
        goto out;
    }
    nsc_hang_encode(buf, &hh, hc, k, ho, nops, hp, nprox);
    memcpy(copy, buf, len);
    pthread_mutex_lock(&mu);
    free(pending);
    free(latest);
    pending = buf;
    pending_len = len;
    latest = copy;
    latest_len = len;
    pthread_mutex_unlock(&mu);
out:
    /* The log line, once per firing, per stalled comm (NCCL_DEBUG=WARN shows it). */
    for (uint32_t ci = 0; ci < nslots; ci++) {
        struct comm_agg *a = &agg[ci];
        if (a->stuck != 2)
            continue;
        uint64_t id = 0;
        int rank = -1;
        for (uint32_t i = 0; i < ninfo; i++)
            if (infos[i].serial == a->st.serial) {
                rank = infos[i].rank;
                id = infos[i].comm_id;
            }
        char fn[16] = "", peer[32] = "";
        const struct nsc_opst_op *o = &a->oldest;
        if (o)
            name_of(fn, sizeof(fn), o->func);
        if (o && o->etype == 2) /* P2p */
            snprintf(peer, sizeof(peer), " peer %d", o->peer);
        /* With KernelCh sampled, the oldest operation the watchdog sees is
         * the oldest sampled one: if its kernel never started, an earlier
         * one of the comm that was not sampled holds the stream. */
        const char *held = nsc_ksample_on() && o && o->kernel_tracked && !o->ch_started
                               ? " (its kernel has not started: an earlier operation of this "
                                 "comm, not sampled for KernelCh, holds it; `ncclscope hang` on "
                                 "the job's files names it)"
                               : "";
        nsc_log_warn("ncclscope: hang watchdog: comm %016llx rank %d: %u operation(s) in flight, "
                     "none completed for %u s; oldest %s seq %llu%s, channels %d/%d done, "
                     "ProxyOps %u/%u done%s; HANG block written%s",
                     (unsigned long long)id, rank, a->inflight, hang_seconds, fn[0] ? fn : "?",
                     o ? (unsigned long long)o->seq : 0ull, peer,
                     o ? __builtin_popcountll(o->ch_done) : 0, o ? o->nch : 0,
                     o ? o->proxies_done : 0, o ? o->proxies : 0, held,
                     flight ? ", flight recorder dumping" : "");
    }
    free(hc);
    free(ho);
    free(hp);
}

static uint32_t check(uint64_t now, uint64_t tps, uint64_t grace) {
    uint32_t nops = 0, nprox = 0, left_out = 0;
    uint32_t retired =
        nsc_opst_scan(now, grace, ops, &nops, OPS_CAP, proxies, &nprox, PROXIES_CAP, &left_out);
    /* Only the slots ever taken (comm_table.h): the rest of agg is never
     * written, so its memory is not touched either. An operation of a comm
     * opened after this load waits for the next check. */
    nslots = nsc_comm_slot_bound();
    memset(agg, 0, nslots * sizeof(*agg));
    for (uint32_t i = 0; i < nops; i++) {
        if (ops[i].comm_index >= nslots)
            continue;
        struct comm_agg *a = &agg[ops[i].comm_index];
        if (!a->inflight || ops[i].start_ticks < a->oldest_start) {
            a->oldest_start = ops[i].start_ticks;
            a->oldest = ops[i];
        }
        a->inflight++;
    }
    uint64_t limit = (uint64_t)hang_seconds * tps;
    int any_new = 0;
    for (uint32_t ci = 0; ci < nslots; ci++) {
        struct comm_agg *a = &agg[ci];
        if (!a->inflight)
            continue;
        a->have_st = nsc_opst_comm_read(ci, &a->st);
        if (!a->have_st)
            continue;
        uint64_t since = a->st.any_done && a->st.done_ticks > a->oldest_start ? a->st.done_ticks
                                                                              : a->oldest_start;
        if (now <= since || now - since < limit)
            continue;
        a->stuck = 1;
        if (fired_serial[ci] == a->st.serial && fired_completed[ci] == a->st.completed)
            continue; /* fired for this stall already */
        fired_serial[ci] = a->st.serial;
        fired_completed[ci] = a->st.completed;
        a->stuck = 2; /* newly stalled: log it */
        any_new = 1;
    }
    if (!any_new)
        return retired;
    atomic_fetch_add_explicit(&fired, 1, memory_order_relaxed);
    fire(now, nops, nprox, left_out);
    if (flight) {
        atomic_store_explicit(&dump_wanted, 1, memory_order_relaxed);
        nsc_engine_poke(); /* drainer 0 may sleep NCCLSCOPE_DRAIN_US */
    }
    return retired;
}

/* Whether the normal pace would hold too many slots: operations retired
 * by scans (after their grace, or overtaken) per second, times how long the
 * normal pace holds each (its grace plus up to one scan), against half the
 * slots. */
static int rate_needs_pressed_pace(uint64_t retired, uint64_t ticks, uint64_t tps) {
    if (!ticks)
        return 0;
    double per_s = (double)retired * (double)tps / (double)ticks;
    return per_s * (2.0 * SCAN_MS / 1000.0) > NSC_SLAB_SLOTS / 2.0;
}

static void *watchdog_main(void *arg) {
    (void)arg;
    uint64_t tps = nsc_clock_ticks_per_sec();
    uint64_t full_seen = nsc_slab_full_count();
    uint64_t pressed_until = 0, next_full = 0; /* ticks */
    /* operations retired by scans since window_start: the rate that
     * decides, when a pressed second ends, whether to stay pressed. A
     * refusal restarts the window after the next scan (`fresh`): that scan
     * retires the backlog of the normal pace (most of a full slab), which
     * is no rate. */
    uint64_t retired = 0, window_start = nsc_clock_ticks();
    int fresh = 0;
    pthread_mutex_lock(&mu);
    while (!stop_req) {
        uint64_t t = nsc_clock_ticks();
        if (pressed_until && t >= pressed_until) {
            /* A pressed second ended without a refusal. Back at the normal
             * pace, an operation keeps its slot up to 200 ms: at the rate
             * of the second that ended, would that fill half the slab?
             * Then stay (quietly): otherwise a steady 80,000 operations a
             * second or more would cycle through refusals, each cycle a
             * few tens of milliseconds of operations not watched. Decided
             * here, before the wait, whose length it sets. */
            pressed_until = rate_needs_pressed_pace(retired, t - window_start, tps) ? t + tps : 0;
            retired = 0;
            window_start = t;
        }
        int pressed = t < pressed_until;
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += (pressed ? PRESSED_SCAN_MS : SCAN_MS) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cv, &mu, &dl);
        if (stop_req)
            break;
        pthread_mutex_unlock(&mu);
        uint64_t now = nsc_clock_ticks();
        uint64_t full = nsc_slab_full_count();
        if (full != full_seen) { /* refusals since the last scan: the pressed pace for a second */
            /* once per episode (NCCL_DEBUG=INFO shows it): not when the
             * pressed pace, on for this wait, still saw refusals (a machine
             * too busy to scan every 5 ms) */
            if (!pressed)
                nsc_log_info("ncclscope: hang watchdog under pressure: more operations in "
                             "flight than its %u slots (%llu left unwatched so far); scanning "
                             "every %d ms while the rate of operations needs it",
                             (unsigned)NSC_SLAB_SLOTS, (unsigned long long)full, PRESSED_SCAN_MS);
            full_seen = full;
            pressed_until = now + tps;
            fresh = 1;
        }
        uint64_t grace = now < pressed_until ? tps * PRESSED_GRACE_MS / 1000 : tps * SCAN_MS / 1000;
        if (now >= next_full) {
            retired += check(now, tps, grace);
            next_full = now + tps * SCAN_MS / 1000;
        } else {
            retired += nsc_opst_scan_light(now, grace);
        }
        if (fresh) {
            retired = 0;
            window_start = nsc_clock_ticks();
            fresh = 0;
        }
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void stop_thread(void) {
    pthread_mutex_lock(&mu);
    stop_req = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
}

int nsc_watchdog_start(const struct nsc_config *cfg) {
    hang_seconds = cfg->hang_seconds;
    flight = cfg->flight;
    if (!hang_seconds || running)
        return 0;
    ops = malloc(OPS_CAP * sizeof(*ops));
    op_taken = malloc(OPS_CAP);
    proxies = malloc(PROXIES_CAP * sizeof(*proxies));
    infos = malloc(NSC_MAX_COMMS * sizeof(*infos));
    stop_req = 0;
    /* The thread before the slab: a slab nobody scans would keep every
     * operation without KernelCh (never completed) until it is full, and
     * every later start would pay for a refusal; the scan does nothing
     * while the slab is off. The slab is made once per process and never
     * unmapped: a callback still holding a slab handle after the session
     * (a late stop) reads mapped memory; its slot check fails and nothing
     * happens. */
    int rc = -1;
    if (ops && op_taken && proxies && infos)
        rc = nsc_bg_thread_start(&thread, cfg, watchdog_main, NULL, "ncclscope-hang");
    if (rc == 0 && nsc_slab_create() != 0) {
        stop_thread();
        rc = -1;
        nsc_log_warn("ncclscope: no memory for the operation slab; no hang watchdog");
    } else if (rc != 0) {
        nsc_log_warn("ncclscope: cannot start the hang watchdog");
    }
    if (rc != 0) {
        free(ops);
        free(op_taken);
        free(proxies);
        free(infos);
        ops = NULL, op_taken = NULL, proxies = NULL, infos = NULL;
        return -1;
    }
    running = 1;
    nsc_opst_set_tracking(1);
    static const struct nsc_engine_hooks hooks = {.hang_take = nsc_watchdog_take_block,
                                                  .hang_dump = nsc_watchdog_take_dump_request};
    nsc_engine_observe(&hooks);
    return 0;
}

void nsc_watchdog_stop(void) {
    if (!running)
        return;
    nsc_opst_set_tracking(0); /* no new slots without a scanner */
    stop_thread();
    running = 0;
    free(ops);
    free(op_taken);
    free(proxies);
    free(infos);
    ops = NULL, op_taken = NULL, proxies = NULL, infos = NULL;
    /* A block still pending is written by the session's last job (and
     * the latest goes into flight mode's last dump): nsc_watchdog_release
     * frees them after the engine stopped. */
}

void nsc_watchdog_release(void) {
    pthread_mutex_lock(&mu);
    free(pending);
    free(latest);
    free(spending);
    free(slatest);
    pending = latest = spending = slatest = NULL;
    pending_len = latest_len = spending_len = slatest_len = 0;
    pthread_mutex_unlock(&mu);
}

void nsc_watchdog_post_suspect(unsigned char *block, size_t len) {
    unsigned char *copy = malloc(len);
    pthread_mutex_lock(&mu);
    free(spending);
    spending = block;
    spending_len = len;
    if (copy) {
        memcpy(copy, block, len);
        free(slatest);
        slatest = copy;
        slatest_len = len;
    }
    pthread_mutex_unlock(&mu);
}

unsigned char *nsc_watchdog_take_block(int dump, size_t *len) {
    pthread_mutex_lock(&mu);
    unsigned char *b = NULL;
    size_t n = 0;
    unsigned char *keep = dump == 2 ? slatest : latest;
    size_t keep_len = dump == 2 ? slatest_len : latest_len;
    if (!dump && pending) {
        b = pending, n = pending_len;
        pending = NULL;
    } else if (!dump && spending) {
        b = spending, n = spending_len;
        spending = NULL;
    } else if (dump && keep && (b = malloc(keep_len)) != NULL) {
        memcpy(b, keep, keep_len);
        n = keep_len;
    }
    pthread_mutex_unlock(&mu);
    *len = n;
    return b;
}

int nsc_watchdog_take_dump_request(void) {
    return atomic_exchange_explicit(&dump_wanted, 0, memory_order_relaxed);
}

uint64_t nsc_watchdog_fired(void) { return atomic_load_explicit(&fired, memory_order_relaxed); }
