// SPDX-License-Identifier: Apache-2.0
/*
 * stress_comm_state.c - 100,000 communicator lifetimes while readers walk
 * their state, through the plugin's own code: comm_table.c
 * (slots, contexts, generations), op_state.c (per-comm and per-operation
 * state), slab.c (slots for operations). Runs in the stress suite, also
 * under TSan (tests/run.sh).
 *
 *   stress_comm_state CYCLES
 *
 * Writers (2 threads) each open a comm, enqueue 3 AllReduces (seqNumber
 * serial * 1000 + k) with a KernelCh each, complete 2 of them, leave the
 * third in flight, and finalize: CYCLES comm lifetimes in all. Readers (2
 * threads) read every comm's state the whole time and check each snapshot
 * they accept: the seqNumbers belong to the serial the snapshot names,
 * completed <= started <= 3. A watchdog thread scans the slab (it reclaims
 * the finalized comms' operations). At the end every slot must be free
 * again and the slab's invariants hold. The writers have thread states, so
 * their slots go through the per-thread slab caches (slab.h), flushed when
 * they exit; the watchdog has none (the shared lists directly).
 *
 *   stress_comm_state handoff N
 *
 * Slots crossing threads through the caches: one thread starts N
 * AllReduces with 4 KernelCh each, another stops them (so operations are
 * finished, and their slots freed, on the stopping thread: its cache
 * overflows to the shared lists while the starting thread's runs dry and
 * refills from them, a batch per CAS). At the end: no slot taken, every
 * free slot listed once, and the high-water mark far below N * 5 (slots
 * were reused, not leaked into a cache).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm_table.h"
#include "control.h"
#include "event_types.h"
#include "op_state.h"
#include "page_pool.h"
#include "slab.h"
#include "thread_state.h"

/* What op_state.c reads from the session and the control module. */
int nsc_session_pid;

static long cycles;
static _Atomic long done_cycles;
static _Atomic int writers_done;
static _Atomic uint64_t next_id = 1;
static _Atomic uint64_t snapshots, bad;

static void fail(const char *what) {
    atomic_fetch_add(&bad, 1);
    fprintf(stderr, "FAIL: %s\n", what);
}

/* A Coll's or P2p's handle carries NSC_HANDLE_SAMPLED, as the plugin's
 * start gives it when KernelCh is recorded for every operation (the mask
 * below). */
static uint64_t handle(unsigned et) {
    return atomic_fetch_add(&next_id, 1) | (uint64_t)et << NSC_HANDLE_ETYPE_SHIFT |
           (et == NSC_ET_COLL || et == NSC_ET_P2P ? NSC_HANDLE_SAMPLED : 0);
}

static void *writer(void *arg) {
    long n = (long)(intptr_t)arg;
    nsc_thread_get(); /* a thread state, hence a slab cache */
    if (!nsc_thread_slab_cache())
        fail("writer has no thread state (no slab cache)");
    for (long i = 0; i < n; i++) {
        struct nsc_comm *c = nsc_comm_open(0x1000 + (uint64_t)i, "stress", 1, 2, 0, 0);
        if (!c) {
            fail("no comm slot");
            continue;
        }
        nsc_opst_comm_open((uint32_t)(c - nsc_comms), c->serial);
        for (int k = 0; k < 3; k++) {
            nsc_abi_descr_v7 d;
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_COLL;
            d.coll.seqNumber = (uint64_t)c->serial * 1000 + (uint64_t)k;
            d.coll.nChannels = 1;
            uint64_t plain = handle(NSC_ET_COLL);
            uint64_t op = nsc_opst_start(c, NSC_ET_COLL, &d, plain, 1, NULL);
            /* a slab handle keeps the id, the type and the flags, and names
             * a slot below the high-water mark; a full slab gives the plain one */
            if (nsc_handle_is_slab(op)
                    ? (op & NSC_SLAB_ID_MASK) != (plain & NSC_ID_MASK) ||
                          (op & ~(NSC_HANDLE_SLAB | (uint64_t)(NSC_SLAB_SLOTS - 1) << NSC_SLAB_ID_BITS)) != plain ||
                          !nsc_slab_slot_used(nsc_handle_slot(op))
                    : op != plain)
                fail("handle");
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_KERNEL_CH;
            d.parentObj = (void *)(uintptr_t)op;
            uint64_t kch = nsc_opst_start(c, NSC_ET_KERNEL_CH, &d, handle(NSC_ET_KERNEL_CH), 2, NULL);
            nsc_opst_stop(op, 3);
            if (k < 2) /* the third stays in flight: the watchdog reclaims it */
                nsc_opst_stop(kch, 4);
        }
        void *ctx = nsc_comm_context(c);
        struct nsc_comm *cl = nsc_comm_claim_context(ctx);
        if (cl != c)
            fail("claim");
        nsc_comm_close(c);
        atomic_fetch_add(&done_cycles, 1);
    }
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    while (atomic_load(&writers_done) < 2) {
        /* the slots ever taken, as the watchdog's pass; past them a sample
         * (a slot opened since the load is read there) */
        uint32_t nb = nsc_comm_slot_bound();
        for (uint32_t i = 0; i < NSC_MAX_COMMS; i += i < nb ? 1 : 97) {
            struct nsc_opst_comm o;
            if (!nsc_opst_comm_read(i, &o))
                continue;
            atomic_fetch_add_explicit(&snapshots, 1, memory_order_relaxed);
            uint64_t base = (uint64_t)o.serial * 1000;
            if (o.started > 3 || o.completed > o.started)
            {
                fprintf(stderr, "serial %u started %llu completed %llu\n", o.serial,
                        (unsigned long long)o.started, (unsigned long long)o.completed);
                fail("counts of another lifetime in a snapshot");
            }
            if (o.started && (o.enq_seq < base || o.enq_seq >= base + 3))
{ fprintf(stderr, "serial %u enq %llu started %llu done %llu completed %llu\n", o.serial, (unsigned long long)o.enq_seq, (unsigned long long)o.started, (unsigned long long)o.done_seq, (unsigned long long)o.completed); fail("enqueued seqNumber of another comm in a snapshot"); }
            if (o.any_done && (o.done_seq < base || o.done_seq >= base + 2))
{ fprintf(stderr, "serial %u enq %llu started %llu done %llu completed %llu\n", o.serial, (unsigned long long)o.enq_seq, (unsigned long long)o.started, (unsigned long long)o.done_seq, (unsigned long long)o.completed); fail("completed seqNumber of another comm in a snapshot"); }
        }
    }
    return NULL;
}

static struct nsc_opst_op ops[4096];
static unsigned expect_nch = 1; /* channels of every operation started */
static struct nsc_opst_proxy proxies[64];

static void *watchdog(void *arg) {
    (void)arg;
    uint64_t now = 1000;
    while (atomic_load(&writers_done) < 2) {
        uint32_t no, np, lo;
        nsc_opst_scan(now++, 10, ops, &no, 4096, proxies, &np, 64, &lo);
        for (uint32_t k = 0; k < no; k++)
            if (ops[k].nch != expect_nch || ops[k].etype != NSC_ET_COLL)
                fail("an operation the scan copied is not what was started");
        usleep(50);
        nsc_opst_scan_light(now++, 10); /* the watchdog's pressed pace between full scans */
        usleep(50);
    }
    return NULL;
}

/* ---- handoff: operations started on one thread, finished on another ---- */

#define HANDOFF_Q 1024 /* a power of two */
#define HANDOFF_KCH 4
static _Atomic uint64_t q[HANDOFF_Q][1 + HANDOFF_KCH];
static _Atomic uint64_t q_head, q_tail;
static long handoff_n;
static struct nsc_comm *handoff_comm;

static void *handoff_starter(void *arg) {
    (void)arg;
    nsc_thread_get();
    if (!nsc_thread_slab_cache())
        fail("starter has no slab cache");
    for (long i = 0; i < handoff_n; i++) {
        uint64_t h = atomic_load_explicit(&q_head, memory_order_relaxed);
        while (h - atomic_load_explicit(&q_tail, memory_order_acquire) == HANDOFF_Q)
            sched_yield();
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.coll.seqNumber = (uint64_t)i;
        d.coll.nChannels = HANDOFF_KCH;
        uint64_t op = nsc_opst_start(handoff_comm, NSC_ET_COLL, &d, handle(NSC_ET_COLL), 1, NULL);
        _Atomic uint64_t *e = q[h % HANDOFF_Q];
        atomic_store_explicit(&e[0], op, memory_order_relaxed);
        for (int k = 0; k < HANDOFF_KCH; k++) {
            d.parentObj = (void *)(uintptr_t)op;
            d.kernelCh.channelId = (uint8_t)k;
            atomic_store_explicit(&e[1 + k],
                                  nsc_opst_start(handoff_comm, NSC_ET_KERNEL_CH, &d,
                                                 handle(NSC_ET_KERNEL_CH), 2, NULL),
                                  memory_order_relaxed);
        }
        nsc_opst_stop(op, 3); /* enqueued: the KernelCh stops finish it */
        atomic_store_explicit(&q_head, h + 1, memory_order_release);
    }
    return NULL;
}

static void *handoff_stopper(void *arg) {
    (void)arg;
    nsc_thread_get();
    for (long i = 0; i < handoff_n; i++) {
        uint64_t t = atomic_load_explicit(&q_tail, memory_order_relaxed);
        while (atomic_load_explicit(&q_head, memory_order_acquire) == t)
            sched_yield();
        _Atomic uint64_t *e = q[t % HANDOFF_Q];
        for (int k = 0; k < HANDOFF_KCH; k++) {
            uint64_t kch = atomic_load_explicit(&e[1 + k], memory_order_relaxed);
            if (!nsc_handle_is_slab(kch))
                fail("handoff: a KernelCh without a slot (slab full?)");
            nsc_opst_stop(kch, 4);
        }
        atomic_store_explicit(&q_tail, t + 1, memory_order_release);
    }
    return NULL;
}

static int handoff(long n) {
    handoff_n = n;
    expect_nch = HANDOFF_KCH;
    handoff_comm = nsc_comm_open(0x3000, "handoff", 1, 2, 0, 0);
    nsc_opst_comm_open((uint32_t)(handoff_comm - nsc_comms), handoff_comm->serial);
    pthread_t a, b, wd;
    pthread_create(&a, NULL, handoff_starter, NULL);
    pthread_create(&b, NULL, handoff_stopper, NULL);
    pthread_create(&wd, NULL, watchdog, NULL); /* scans while slots move */
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    atomic_fetch_add(&writers_done, 2);
    pthread_join(wd, NULL);
    struct nsc_opst_comm o;
    struct nsc_slab_counts sc;
    nsc_slab_counts(&sc);
    int ok = nsc_opst_comm_read((uint32_t)(handoff_comm - nsc_comms), &o);
    printf("handoff: %ld operations x %d KernelCh, completed %llu, slab high-water %u, live %u, "
           "full %llu\n", n, HANDOFF_KCH, ok ? (unsigned long long)o.completed : 0ull, sc.high,
           sc.live, (unsigned long long)sc.full);
    if (!ok || o.completed != (uint64_t)n)
        fail("handoff: not every operation completed");
    if (sc.live != 0 || sc.full != 0)
        fail("handoff: slots still taken, or the slab ran full");
    /* In flight at once: at most HANDOFF_Q operations of 5 slots, plus what
     * the two caches and a batch in transit hold. */
    if (sc.high > HANDOFF_Q * (1 + HANDOFF_KCH) + 4 * NSC_SLAB_CACHE + NSC_SLAB_BATCH)
        fail("handoff: slots not reused (parked in a cache?)");
    if (nsc_slab_check_invariants() != 0)
        fail("handoff: slab invariants");
    return atomic_load(&bad) ? 1 : 0;
}

/* `stress_comm_state bench N`: the slab's own cost, one thread, no
 * contention: N times an AllReduce with one KernelCh and one ProxyOp with
 * 4 ProxySteps (the start, stop and state hooks the callbacks call),
 * nanoseconds per hook call (docs/benchmarks.md). */
static int bench(long n) {
    nsc_thread_get(); /* a thread state: slots through its cache, as in the plugin */
    struct nsc_comm *c = nsc_comm_open(0x2000, "bench", 1, 2, 0, 0);
    nsc_opst_comm_open((uint32_t)(c - nsc_comms), c->serial);
    nsc_abi_descr_v7 d;
    struct timespec t0, t1;
    long calls = 0;
    /* CPU time of this thread: the machine may be shared */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (long i = 0; i < n; i++) {
        memset(&d, 0, sizeof(d));
        d.coll.seqNumber = (uint64_t)i;
        d.coll.nChannels = 1;
        uint64_t op = nsc_opst_start(c, NSC_ET_COLL, &d, handle(NSC_ET_COLL), 1, NULL);
        d.parentObj = (void *)(uintptr_t)op;
        uint64_t k = nsc_opst_start(c, NSC_ET_KERNEL_CH, &d, handle(NSC_ET_KERNEL_CH), 2, NULL);
        d.proxyOp.pid = nsc_session_pid;
        uint64_t px = nsc_opst_start(c, NSC_ET_PROXY_OP, &d, handle(NSC_ET_PROXY_OP), 2, NULL);
        d.parentObj = (void *)(uintptr_t)px;
        for (int st = 0; st < 4; st++) {
            uint64_t step = nsc_opst_start(c, NSC_ET_PROXY_STEP, &d, handle(NSC_ET_PROXY_STEP), 3, NULL);
            nsc_opst_state(step, NSC_ABI_PROXY_STEP_SEND_WAIT, 0, 0);
            nsc_opst_stop(step, 0);
        }
        nsc_opst_stop(px, 0);
        nsc_opst_stop(op, 0);
        nsc_opst_stop(k, 4);
        calls += 3 + 12 + 3;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    struct nsc_slab_counts sc;
    nsc_slab_counts(&sc);
    printf("%ld operations, %.1f ns per hook call (start/stop/state), %.1f ns per operation; "
           "slots used %u, live %u, full %llu\n",
           n, ns / (double)calls, ns / (double)n, sc.high, sc.live, (unsigned long long)sc.full);
    return sc.live == 0 && sc.full == 0 ? 0 : 1;
}

/* The slab, and operations taking slots from it, as the watchdog's start
 * sets them up (watchdog.c). */
static int slab_on(void) {
    if (nsc_slab_create() != 0)
        return -1;
    nsc_opst_set_tracking(1);
    return 0;
}

int main(int argc, char **argv) {
    /* What op_state.c reads as the recorded mask (control.h). */
    atomic_store(&nsc_ctl_record_mask, NSC_ABI_COLL | NSC_ABI_KERNEL_CH);
    /* Thread states take a ring page at attach (their THREAD record). */
    if (page_pool_create(8 * NSC_PAGE_BYTES) != 0)
        return 1;
    if (argc > 2 && !strcmp(argv[1], "bench")) {
        nsc_session_pid = 1;
        nsc_clock_init("auto"); /* the plugin's clock: rdtsc where invariant */
        return slab_on() == 0 ? bench(atol(argv[2])) : 1;
    }
    if (argc > 2 && !strcmp(argv[1], "handoff")) {
        nsc_session_pid = 1;
        nsc_clock_init("auto");
        return slab_on() == 0 ? handoff(atol(argv[2])) : 1;
    }
    cycles = argc > 1 ? atol(argv[1]) : 100000;
    if (slab_on() != 0) {
        fprintf(stderr, "no slab\n");
        return 1;
    }
    pthread_t w[2], r[2], wd;
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, writer, (void *)(intptr_t)(cycles / 2));
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    pthread_create(&wd, NULL, watchdog, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i], NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    pthread_join(wd, NULL);
    /* Every comm is closed: two sweeps (20 scans) reclaim what was left in flight. */
    for (int k = 0; k < 25; k++)
        nsc_opst_scan(1000000 + (uint64_t)k, 10, NULL, NULL, 0, NULL, NULL, 0, NULL);
    struct nsc_slab_counts sc;
    nsc_slab_counts(&sc);
    printf("%ld comm lifetimes, %llu snapshots read, slab high-water %u, live %u, full %llu, "
           "orphans %llu\n",
           (long)atomic_load(&done_cycles), (unsigned long long)atomic_load(&snapshots), sc.high,
           sc.live, (unsigned long long)sc.full, (unsigned long long)sc.orphans);
    if (atomic_load(&done_cycles) != cycles - cycles % 2)
        fail("cycles");
    if (sc.live != 0)
        fail("slots still taken after every comm was finalized and reclaimed");
    if (sc.orphans != 0)
        fail("orphans: no child came late");
    if (nsc_slab_check_invariants() != 0)
        fail("slab invariants");
    if (nsc_comm_active_count() != 0)
        fail("comm slots still taken");
    return atomic_load(&bad) ? 1 : 0;
}
