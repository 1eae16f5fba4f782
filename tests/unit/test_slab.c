// SPDX-License-Identifier: Apache-2.0
/* test_slab.c - plugin/record/slab.c's allocator: slots handed out once until
 * freed, batches moved between threads' caches through the shared lists
 * (a batch's head names its other slots), the path of a thread without a
 * cache (it takes a batch and gives back all but one), a full slab, and the
 * lists' invariants after each; then two threads passing slots to each
 * other (one allocates, the other frees), as an operation's slot goes from
 * the issuing thread to the proxy or watchdog thread. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "slab.h"

static unsigned char taken[NSC_SLAB_SLOTS];

/* Allocates with cache c (or none); 1 when the slot was free before. */
static int take(struct nsc_slab_cache *c, int32_t *out) {
    int32_t i = nsc_slab_alloc(c);
    *out = i;
    if (i < 0 || i >= (int32_t)NSC_SLAB_SLOTS || taken[i])
        return 0;
    taken[i] = 1;
    /* an occupant, as op_state would publish one (the invariants count
     * slots with a life as taken) */
    atomic_store_explicit(&nsc_slab_slots[i].life, NSC_LIFE(i + 1), memory_order_relaxed);
    return 1;
}

static void give(struct nsc_slab_cache *c, int32_t i) {
    taken[i] = 0;
    atomic_store_explicit(&nsc_slab_slots[i].life, 0, memory_order_relaxed);
    nsc_slab_free(c, (uint32_t)i);
}

static void single_thread(void) {
    struct nsc_slab_cache a = {0}, b = {0};
    int32_t got[64];
    int ok = 1;
    for (int k = 0; k < 64; k++)
        ok &= take(&a, &got[k]);
    CHECK(ok);
    CHECK(atomic_load(&nsc_slab_high) == 64); /* batches of 8 from the high-water mark */
    /* free all 64 with cache a: its overflow goes to the shared list in batches */
    for (int k = 0; k < 64; k++)
        give(&a, got[k]);
    CHECK(a.n > 0 && a.n <= NSC_SLAB_CACHE);
    CHECK(nsc_slab_check_invariants() == -1); /* a's parked slots are on no list */
    nsc_slab_cache_flush(&a);
    CHECK(a.n == 0);
    CHECK(nsc_slab_check_invariants() == 0);
    /* cache b takes them all back from the lists, batch by batch; nothing new */
    ok = 1;
    for (int k = 0; k < 64; k++)
        ok &= take(&b, &got[k]);
    CHECK(ok);
    CHECK(atomic_load(&nsc_slab_high) == 64);
    /* without a cache: one slot per call, the rest of its batch goes back */
    for (int k = 0; k < 16; k++)
        give(&b, got[k]);
    nsc_slab_cache_flush(&b);
    CHECK(nsc_slab_check_invariants() == 0);
    ok = 1;
    for (int k = 0; k < 16; k++)
        ok &= take(NULL, &got[k]);
    CHECK(ok);
    CHECK(atomic_load(&nsc_slab_high) == 64);
    CHECK(nsc_slab_check_invariants() == 0);
    for (int k = 0; k < 16; k++)
        give(NULL, got[k]);
    CHECK(nsc_slab_check_invariants() == 0);
    for (int k = 16; k < 64; k++)
        give(&b, got[k]);
    nsc_slab_cache_flush(&b);
    CHECK(nsc_slab_check_invariants() == 0);
}

/* Fills the slab: every slot once, then a refusal (counted), then all back. */
static void full(void) {
    static int32_t all[NSC_SLAB_SLOTS];
    struct nsc_slab_cache c = {0};
    uint64_t full0 = nsc_slab_full_count();
    int ok = 1;
    for (uint32_t k = 0; k < NSC_SLAB_SLOTS; k++)
        ok &= take(k % 3 ? &c : NULL, &all[k]);
    CHECK(ok);
    int32_t none = nsc_slab_alloc(&c);
    CHECK(none == -1);
    CHECK(nsc_slab_full_count() == full0 + 1);
    for (uint32_t k = 0; k < NSC_SLAB_SLOTS; k++)
        give(k % 2 ? &c : NULL, all[k]);
    nsc_slab_cache_flush(&c);
    CHECK(nsc_slab_check_invariants() == 0);
    struct nsc_slab_counts sc;
    nsc_slab_counts(&sc);
    CHECK(sc.high == NSC_SLAB_SLOTS && sc.live == 0);
}

/* Two pairs of threads: each allocator passes every slot it gets through
 * a queue to its freer. The allocators pop the shared lists at the same
 * time (the race the tag is for: a pop reading a batch's words while the
 * other takes and reuses its head), one with a cache and one without; the
 * freers push, one through a cache, one without. A slot handed out while
 * taken is caught by its owner word; at the end every slot is free and
 * the lists hold them all. */
#define HANDOFF 200000
#define QCAP 1024
struct pair {
    _Atomic int32_t queue[QCAP];
    _Atomic uint32_t head, tail;
    int alloc_cached, free_cached;
};
static struct pair pairs[2];
static _Atomic uint32_t owner[NSC_SLAB_SLOTS]; /* 0 free, else the allocator's pair + 1 */
static _Atomic int bad;

static void *allocator(void *arg) {
    struct pair *q = arg;
    struct nsc_slab_cache c = {0};
    for (uint32_t n = 0; n < HANDOFF; n++) {
        int32_t i;
        while ((i = nsc_slab_alloc(q->alloc_cached ? &c : NULL)) < 0)
            ; /* the freers are behind: slots come back */
        uint32_t was = 0;
        if (!atomic_compare_exchange_strong(&owner[i], &was, (uint32_t)(q - pairs) + 1))
            atomic_store(&bad, 1); /* handed out while taken */
        /* an occupant, as op_state publishes one */
        atomic_store_explicit(&nsc_slab_slots[i].life, NSC_LIFE(n + 1), memory_order_release);
        while (atomic_load_explicit(&q->head, memory_order_relaxed) -
                   atomic_load_explicit(&q->tail, memory_order_acquire) >= QCAP)
            ;
        uint32_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
        atomic_store_explicit(&q->queue[h % QCAP], i, memory_order_relaxed);
        atomic_store_explicit(&q->head, h + 1, memory_order_release);
    }
    nsc_slab_cache_flush(&c);
    return NULL;
}

static void *freer(void *arg) {
    struct pair *q = arg;
    struct nsc_slab_cache c = {0};
    for (uint32_t n = 0; n < HANDOFF; n++) {
        uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
        while (atomic_load_explicit(&q->head, memory_order_acquire) == t)
            ;
        int32_t i = atomic_load_explicit(&q->queue[t % QCAP], memory_order_relaxed);
        atomic_store_explicit(&q->tail, t + 1, memory_order_release);
        atomic_store_explicit(&nsc_slab_slots[i].life, 0, memory_order_relaxed);
        atomic_store(&owner[i], 0);
        nsc_slab_free(q->free_cached ? &c : NULL, (uint32_t)i);
    }
    nsc_slab_cache_flush(&c);
    return NULL;
}

static void handoff(void) {
    pthread_t a[2], f[2];
    pairs[0].alloc_cached = 1, pairs[0].free_cached = 0;
    pairs[1].alloc_cached = 0, pairs[1].free_cached = 1;
    for (int k = 0; k < 2; k++) {
        pthread_create(&f[k], NULL, freer, &pairs[k]);
        pthread_create(&a[k], NULL, allocator, &pairs[k]);
    }
    for (int k = 0; k < 2; k++) {
        pthread_join(a[k], NULL);
        pthread_join(f[k], NULL);
    }
    CHECK(!atomic_load(&bad));
    CHECK(nsc_slab_check_invariants() == 0);
    struct nsc_slab_counts sc;
    nsc_slab_counts(&sc);
    CHECK(sc.live == 0);
    uint32_t held = 0;
    for (uint32_t i = 0; i < NSC_SLAB_SLOTS; i++)
        held += atomic_load(&owner[i]) != 0;
    CHECK(held == 0);
}

int main(void) {
    if (nsc_slab_create() != 0) {
        fprintf(stderr, "no slab\n");
        return 1;
    }
    single_thread();
    full();
    handoff();
    return check_summary();
}
