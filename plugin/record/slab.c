// SPDX-License-Identifier: Apache-2.0
/* slab.c - the slot allocator (slab.h has the contract and the layout). */
#include "slab.h"

#include <string.h>
#include <sys/mman.h>

#include "prefetch.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Free list head: tag (32) | index + 1 (32). The tag changes at every pop
 * and push, so a CAS that read a head, was preempted while the slot it saw
 * was popped, reused and pushed back, fails instead of installing a stale
 * `next` (ABA). Slots move between a list and a thread's cache (slab.h) in
 * batches. */
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
/* nsc_slab_high (slab.h): slots ever handed out, [0, high) */
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

/* A batch on a shared list: up to NSC_SLAB_BATCH free slots that travel
 * together. Its first slot (the batch's head) carries the rest, as 16-bit
 * index + 1 fields in two payload words no occupant uses (NSC_SLAB_W_BATCH*,
 * slab.h), and links the next batch through next_free. A pop then reads
 * one slot's lines for the whole batch: walking a chain of eight links, one
 * slot at a time, was eight misses in a row on lines the freeing thread
 * had just written (an operation's slot is freed by the proxy or watchdog
 * thread, and taken again by the thread that issues operations). */
#define MEMBERS_PER_WORD 4
_Static_assert(NSC_SLAB_BATCH - 1 <= 2 * MEMBERS_PER_WORD, "a batch's members fit two words");
_Static_assert(NSC_SLAB_SLOTS < 0xffff, "index + 1 fits 16 bits");

/* The members of a batch after its head, from its two words, into out[];
 * returns how many (0..NSC_SLAB_BATCH - 1). */
static uint32_t batch_members(uint64_t m0, uint64_t m1, uint32_t *out) {
    uint32_t got = 0;
    for (uint32_t j = 0; j < NSC_SLAB_BATCH - 1; j++) {
        uint64_t m = j < MEMBERS_PER_WORD ? m0 : m1;
        uint32_t v = (uint32_t)(m >> 16 * (j % MEMBERS_PER_WORD)) & 0xffff;
        if (!v)
            break;
        out[got++] = v - 1;
    }
    return got;
}

/* Pops one batch of shard k into out[] (the head last); returns how many
 * (0: the shard is empty). The tagged head makes this safe: every push and
 * pop changes the tag, so a CAS that succeeds proves the list did not
 * change between the load of the head and the CAS, hence the words read in
 * between were the batch's. Words read while another thread took and
 * reused the head slot may be anything its pushers wrote (always 0 or
 * index + 1 fields), and the CAS then fails; nothing read is used before
 * it succeeds. */
static uint32_t pop_batch(struct nsc_slab_slot *S, uint32_t k, uint32_t *out) {
    _Atomic uint64_t *head = &free_lists[k].head;
    /* ACQUIRE: pairs with the RELEASE CAS of every push before (an RMW
     * continues the release sequence), so the words below are the ones the
     * pushers wrote. */
    uint64_t h = atomic_load_explicit(head, memory_order_acquire);
    while ((uint32_t)h) {
        uint32_t hd = (uint32_t)h - 1;
        /* Relaxed: stale only if the tag changed (the CAS fails). */
        uint32_t next = atomic_load_explicit(&S[hd].next_free, memory_order_relaxed);
        uint64_t m0 = atomic_load_explicit(&S[hd].w[NSC_SLAB_W_BATCH0], memory_order_relaxed);
        uint64_t m1 = atomic_load_explicit(&S[hd].w[NSC_SLAB_W_BATCH1], memory_order_relaxed);
        uint64_t nh = ((h >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(head, &h, nh, memory_order_acquire,
                                                  memory_order_acquire)) {
            uint32_t got = batch_members(m0, m1, out);
            out[got++] = hd; /* handed out first: its lines were just read */
            return got; /* still poisoned: alloc unpoisons the one it hands out */
        }
    }
    return 0;
}

/* Pushes idx[0..n) (1 <= n <= NSC_SLAB_BATCH) onto the calling thread's
 * shard as one batch, one CAS. The slots are ours (freed by us, on no
 * list), so writing their words needs no atomicity; pushing is ABA-safe
 * (the head we link to is the head we replace, whatever happened to it in
 * between). */
static void push_batch(struct nsc_slab_slot *S, const uint32_t *idx, uint32_t n) {
    uint64_t m[2] = {0, 0};
    for (uint32_t j = 1; j < n; j++)
        m[(j - 1) / MEMBERS_PER_WORD] |= (uint64_t)(idx[j] + 1) << 16 * ((j - 1) % MEMBERS_PER_WORD);
    struct nsc_slab_slot *hs = &S[idx[0]];
    atomic_store_explicit(&hs->w[NSC_SLAB_W_BATCH0], m[0], memory_order_relaxed);
    atomic_store_explicit(&hs->w[NSC_SLAB_W_BATCH1], m[1], memory_order_relaxed);
    _Atomic uint64_t *head = &free_lists[shard_of_thread()].head;
    uint64_t h = atomic_load_explicit(head, memory_order_relaxed);
    do
        atomic_store_explicit(&hs->next_free, (uint32_t)h, memory_order_relaxed);
    /* RELEASE: the batch's words (and the slots' last payload) before the
     * batch is visible on the list; pairs with pop_batch's ACQUIRE. */
    while (!atomic_compare_exchange_weak_explicit(head, &h, ((h >> 32) + 1) << 32 | (idx[0] + 1),
                                                  memory_order_release, memory_order_relaxed));
}

static void push_all(struct nsc_slab_slot *S, const uint32_t *idx, uint32_t n) {
    for (uint32_t j = 0; j < n; j += NSC_SLAB_BATCH)
        push_batch(S, idx + j, n - j < NSC_SLAB_BATCH ? n - j : NSC_SLAB_BATCH);
}

/* The slot the cache hands out next is asked for in a writable state now:
 * its lines were last written by the thread that freed it, on another
 * core, and the next operation's start stores into both of them (then
 * waits for them at its next locked instruction). */
static inline void prefetch_next(const struct nsc_slab_slot *S, const struct nsc_slab_cache *c) {
    if (c->n) {
        const struct nsc_slab_slot *s = &S[c->idx[c->n - 1]];
        nsc_prefetch_write(s);
        nsc_prefetch_write((const char *)s + 64);
    }
}

int32_t nsc_slab_alloc(struct nsc_slab_cache *c) {
    struct nsc_slab_slot *S = nsc_slab_slots;
    if (c && c->n) { /* the common case: no atomic at all */
        uint32_t i = c->idx[--c->n];
        UNPOISON(&S[i], sizeof(S[i]));
        prefetch_next(S, c);
        return (int32_t)i;
    }
    uint32_t batch[NSC_SLAB_BATCH], *out = c ? c->idx : batch;
    uint32_t me = shard_of_thread();
    for (uint32_t k = 0; k < SHARDS; k++) {
        uint32_t got = pop_batch(S, (me + k) % SHARDS, out);
        if (got) {
            uint32_t i = out[got - 1]; /* the rest stay in the cache, poisoned */
            if (c) {
                c->n = got - 1;
                prefetch_next(S, c);
            } else if (got > 1) {
                push_batch(S, out, got - 1); /* no cache to keep them in */
            }
            UNPOISON(&S[i], sizeof(S[i]));
            return (int32_t)i;
        }
    }
    /* Never used slots: the high-water mark, a batch at a time for a cache
     * (relaxed: the slots are zero from the mapping and reach other threads
     * only through `life`, published with RELEASE by their user). */
    uint32_t n = atomic_load_explicit(&nsc_slab_high, memory_order_relaxed);
    uint32_t max = c ? NSC_SLAB_BATCH : 1;
    while (n < NSC_SLAB_SLOTS) {
        uint32_t take = NSC_SLAB_SLOTS - n < max ? NSC_SLAB_SLOTS - n : max;
        if (atomic_compare_exchange_weak_explicit(&nsc_slab_high, &n, n + take,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            if (!c)
                return (int32_t)n;
            for (uint32_t j = 0; j + 1 < take; j++)
                c->idx[j] = n + take - 1 - j; /* the lowest slot last, as a list would */
            c->n = take - 1;
            return (int32_t)n;
        }
    }
    atomic_fetch_add_explicit(&n_full, 1, memory_order_relaxed);
    return -1;
}

void nsc_slab_free(struct nsc_slab_cache *c, uint32_t i) {
    struct nsc_slab_slot *S = nsc_slab_slots;
    atomic_store_explicit(&S[i].kind, 0, memory_order_relaxed);
    /* Nothing but the next occupant may touch a free slot's payload: ASan
     * says so if anyone does (life, kind and next_free stay readable: the
     * watchdog scans them, pops read next_free; w[5], which op_state's
     * try_finish reads once more right after releasing an operation that
     * another thread may free at once: it then only compares ids; and the
     * batch words, which pops read). Before the slot can reach another
     * thread (a push), which may unpoison it. */
    _Static_assert(NSC_SLAB_W_BATCH0 == 10 && NSC_SLAB_W_BATCH1 == 12, "poisoned ranges below");
    POISON(&S[i].w[0], 5 * sizeof(S[i].w[0]));
    POISON(&S[i].w[6], 4 * sizeof(S[i].w[0]));
    POISON(&S[i].w[11], sizeof(S[i].w[0]));
    POISON(&S[i].w[13], sizeof(S[i].w[0]));
    if (!c) {
        push_batch(S, &i, 1);
        return;
    }
    if (c->n == NSC_SLAB_CACHE) {
        /* Full: the oldest batch goes to the shared list; the most recent
         * slots (their lines likely still in this core's cache) stay. */
        push_batch(S, c->idx, NSC_SLAB_BATCH);
        memmove(c->idx, c->idx + NSC_SLAB_BATCH,
                (NSC_SLAB_CACHE - NSC_SLAB_BATCH) * sizeof(c->idx[0]));
        c->n = NSC_SLAB_CACHE - NSC_SLAB_BATCH;
    }
    c->idx[c->n++] = i;
}

void nsc_slab_cache_flush(struct nsc_slab_cache *c) {
    if (c->n && nsc_slab_on())
        push_all(nsc_slab_slots, c->idx, c->n);
    c->n = 0;
}

void nsc_slab_count_orphan(void) { atomic_fetch_add_explicit(&n_orphans, 1, memory_order_relaxed); }
void nsc_slab_count_untracked(void) {
    atomic_fetch_add_explicit(&n_untracked, 1, memory_order_relaxed);
}

uint64_t nsc_slab_full_count(void) {
    return atomic_load_explicit(&n_full, memory_order_relaxed);
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
    uint32_t steps = 0;
    static unsigned char seen[NSC_SLAB_SLOTS];
    memset(seen, 0, sizeof(seen));
    for (int k = 0; k < SHARDS; k++)
        for (uint32_t v = (uint32_t)atomic_load_explicit(&free_lists[k].head, memory_order_relaxed);
             v;) {
            uint32_t hd = v - 1, members[NSC_SLAB_BATCH], n;
            if (hd >= hi || ++steps > NSC_SLAB_SLOTS)
                return -1;
            n = batch_members(
                atomic_load_explicit(&S[hd].w[NSC_SLAB_W_BATCH0], memory_order_relaxed),
                atomic_load_explicit(&S[hd].w[NSC_SLAB_W_BATCH1], memory_order_relaxed), members);
            members[n++] = hd;
            for (uint32_t j = 0; j < n; j++) {
                uint32_t i = members[j];
                if (i >= hi || seen[i])
                    return -1;
                seen[i] = 1;
                if (atomic_load_explicit(&S[i].life, memory_order_relaxed) != 0)
                    return -1; /* a free slot has no occupant */
            }
            v = atomic_load_explicit(&S[hd].next_free, memory_order_relaxed);
        }
    uint32_t taken = 0;
    for (uint32_t i = 0; i < hi; i++)
        taken += !seen[i];
    uint32_t live = 0;
    for (uint32_t i = 0; i < hi; i++)
        live += atomic_load_explicit(&S[i].life, memory_order_relaxed) != 0;
    return taken == live ? 0 : -1;
}
