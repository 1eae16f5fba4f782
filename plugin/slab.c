/* slab.c - the slot allocator (slab.h has the contract and the layout). */
#include "slab.h"

#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct nsc_slab_slot *nsc_slab_slots;

/* Free list head: tag (32) | index + 1 (32). The tag changes at every pop
 * and push, so a CAS that read a head, was preempted while the slot it saw
 * was popped, reused and pushed back, fails instead of installing a stale
 * `next` (ABA). */
/* Sharded: one list per group of threads (a thread pushes and pops its
 * own shard, and looks at the others only when its own is empty). A single
 * head was one cache line every writer CASed twice per operation: on 16
 * device vCPUs it held 16 writers to 11 M callbacks/s with start p50
 * 2.6 us. Each head sits on its own line. */
#define SHARDS 16
static struct {
    _Alignas(64) _Atomic uint64_t head;
} free_lists[SHARDS];
static _Atomic uint32_t next_shard;
/* 0: not yet chosen; else shard + 1 (initial-exec: no __tls_get_addr call) */
static __thread uint32_t my_shard __attribute__((tls_model("initial-exec")));

static inline uint32_t shard_of_thread(void) {
    uint32_t s = my_shard;
    if (__builtin_expect(!s, 0))
        my_shard = s = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) % SHARDS + 1;
    return s - 1;
}
_Atomic uint32_t nsc_slab_high; /* slots ever handed out: [0, high) */
static _Atomic uint64_t n_full, n_orphans, n_untracked;

int nsc_slab_create(void) {
    if (nsc_slab_on())
        return 0;
    size_t bytes = (size_t)NSC_SLAB_SLOTS * sizeof(struct nsc_slab_slot);
    /* Anonymous memory is zero and unbacked until touched: a job that keeps
     * 50 operations in flight touches a few pages of the 2 MiB. */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    for (int k = 0; k < SHARDS; k++)
        atomic_store_explicit(&free_lists[k].head, 0, memory_order_relaxed);
    atomic_store_explicit(&nsc_slab_high, 0, memory_order_relaxed);
    /* RELEASE: pairs with nsc_slab_on()'s ACQUIRE (the counters above and
     * the zeroed slots before any use). */
    atomic_store_explicit((_Atomic(struct nsc_slab_slot *) *)&nsc_slab_slots,
                          (struct nsc_slab_slot *)p, memory_order_release);
    return 0;
}

void nsc_slab_destroy(void) {
    struct nsc_slab_slot *s = nsc_slab_slots;
    if (!s)
        return;
    atomic_store_explicit((_Atomic(struct nsc_slab_slot *) *)&nsc_slab_slots, NULL,
                          memory_order_release);
    UNPOISON(s, (size_t)NSC_SLAB_SLOTS * sizeof(*s));
    munmap(s, (size_t)NSC_SLAB_SLOTS * sizeof(*s));
}

/* Pops one slot of shard k, or -1 when it is empty. */
static int32_t pop(struct nsc_slab_slot *S, uint32_t k) {
    _Atomic uint64_t *head = &free_lists[k].head;
    /* ACQUIRE: pairs with the RELEASE CAS in nsc_slab_free, so the
     * next_free read below is the one the pusher wrote. */
    uint64_t h = atomic_load_explicit(head, memory_order_acquire);
    while ((uint32_t)h) {
        uint32_t i = (uint32_t)h - 1;
        UNPOISON(&S[i].next_free, sizeof(S[i].next_free));
        /* Relaxed: may be stale if another thread popped i meanwhile; then
         * the tag changed and the CAS fails. */
        uint32_t next = atomic_load_explicit(&S[i].next_free, memory_order_relaxed);
        uint64_t nh = ((h >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(head, &h, nh, memory_order_acquire,
                                                  memory_order_acquire)) {
            UNPOISON(&S[i], sizeof(S[i]));
            return (int32_t)i;
        }
    }
    return -1;
}

int32_t nsc_slab_alloc(void) {
    struct nsc_slab_slot *S = nsc_slab_slots;
    uint32_t me = shard_of_thread();
    for (uint32_t k = 0; k < SHARDS; k++) {
        int32_t i = pop(S, (me + k) % SHARDS);
        if (i >= 0)
            return i;
    }
    /* Never used slots: the high-water mark (relaxed: the slot itself is
     * zero from the mapping and reaches other threads only through `life`,
     * published with RELEASE by its user). */
    uint32_t n = atomic_load_explicit(&nsc_slab_high, memory_order_relaxed);
    while (n < NSC_SLAB_SLOTS)
        if (atomic_compare_exchange_weak_explicit(&nsc_slab_high, &n, n + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return (int32_t)n;
    atomic_fetch_add_explicit(&n_full, 1, memory_order_relaxed);
    return -1;
}

void nsc_slab_free(uint32_t i) {
    struct nsc_slab_slot *S = nsc_slab_slots;
    atomic_store_explicit(&S[i].kind, 0, memory_order_relaxed);
    for (int k = 0; k < 14; k++)
        atomic_store_explicit(&S[i].w[k], 0, memory_order_relaxed);
    /* Nothing but the list may touch a free slot's payload: ASan says so if
     * anyone does (life, kind and next_free stay readable: the watchdog
     * scans them, pops read next_free). Before the push: once on the list
     * the slot may be popped (and unpoisoned) by another thread at once. */
    POISON(&S[i].w, sizeof(S[i].w));
    _Atomic uint64_t *head = &free_lists[shard_of_thread()].head;
    uint64_t h = atomic_load_explicit(head, memory_order_relaxed);
    do
        atomic_store_explicit(&S[i].next_free, (uint32_t)h, memory_order_relaxed);
    /* RELEASE: next_free (and the cleared payload) before the slot is
     * visible on the list; pairs with pop's ACQUIRE. */
    while (!atomic_compare_exchange_weak_explicit(head, &h, ((h >> 32) + 1) << 32 | (i + 1),
                                                  memory_order_release, memory_order_relaxed));
}

void nsc_slab_count_orphan(void) { atomic_fetch_add_explicit(&n_orphans, 1, memory_order_relaxed); }
void nsc_slab_count_untracked(void) {
    atomic_fetch_add_explicit(&n_untracked, 1, memory_order_relaxed);
}

void nsc_slab_counts(struct nsc_slab_counts *out) {
    /* Relaxed: statistics, read by the writer for STATS/HANG. */
    out->full = atomic_load_explicit(&n_full, memory_order_relaxed);
    out->orphans = atomic_load_explicit(&n_orphans, memory_order_relaxed);
    out->untracked = atomic_load_explicit(&n_untracked, memory_order_relaxed);
    out->high = atomic_load_explicit(&nsc_slab_high, memory_order_relaxed);
    /* Counted here, not kept: a shared counter would be two contended
     * atomic adds per event on the callback path. */
    out->live = 0;
    for (uint32_t i = 0; i < out->high && nsc_slab_slots; i++)
        out->live += atomic_load_explicit(&nsc_slab_slots[i].life, memory_order_relaxed) != 0;
}

int nsc_slab_check_invariants(void) {
    struct nsc_slab_slot *S = nsc_slab_slots;
    if (!S)
        return 0;
    uint32_t hi = atomic_load_explicit(&nsc_slab_high, memory_order_relaxed);
    uint32_t onlist = 0, steps = 0;
    static unsigned char seen[NSC_SLAB_SLOTS];
    memset(seen, 0, sizeof(seen));
    for (int k = 0; k < SHARDS; k++)
        for (uint32_t v = (uint32_t)atomic_load_explicit(&free_lists[k].head, memory_order_relaxed);
             v;) {
            uint32_t i = v - 1;
            if (i >= hi || seen[i] || ++steps > NSC_SLAB_SLOTS)
                return -1;
            seen[i] = 1;
            if (atomic_load_explicit(&S[i].life, memory_order_relaxed) != 0)
                return -1; /* a free slot has no occupant */
            onlist++;
            v = atomic_load_explicit(&S[i].next_free, memory_order_relaxed);
        }
    uint32_t taken = 0;
    for (uint32_t i = 0; i < hi; i++)
        taken += !seen[i];
    uint32_t live = 0;
    for (uint32_t i = 0; i < hi; i++)
        live += atomic_load_explicit(&S[i].life, memory_order_relaxed) != 0;
    return taken == live ? 0 : -1;
}
