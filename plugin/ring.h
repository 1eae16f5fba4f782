/*
 * ring.h - single-producer single-consumer ring of 64-byte records.
 *
 * Contract:
 *   - exactly one producer thread at a time calls ring_reserve/ring_slot/
 *     ring_commit (the writer thread that owns the ring; ownership moves to
 *     another thread only while the ring is empty, under the thread
 *     registry's mutex, which orders the hand-over);
 *   - exactly one consumer (the flusher) calls ring_readable/ring_consume;
 *   - producer and consumer run concurrently; nothing here blocks, takes a
 *     lock, makes a syscall or allocates. A full ring makes ring_reserve
 *     fail; the caller drops the record and counts it.
 *
 * Positions are free-running 64-bit counters (never wrap in practice); the
 * slot of position p is p & mask.
 *
 * Memory ordering:
 *   - producer: fills the slots, then store-RELEASE `head` (ring_commit);
 *     pairs with the consumer's load-ACQUIRE of `head` (ring_readable), so
 *     the consumer sees complete records.
 *   - consumer: copies the records out, then store-RELEASE `tail`
 *     (ring_consume); pairs with the producer's load-ACQUIRE of `tail` in
 *     ring_reserve, so the producer never overwrites a slot still being read.
 *   - the producer keeps a private copy of `tail` (`cached_tail`) and only
 *     re-reads the shared one when the cached space runs out: the common
 *     path touches no cache line the consumer writes.
 *
 * Layout: producer-hot fields and consumer-hot fields sit on separate cache
 * lines (checked by _Static_assert), so neither side's stores invalidate the
 * other's line on every record.
 */
#ifndef NSC_RING_H
#define NSC_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

#define NSC_CACHELINE 64
#define NSC_RING_PREFETCH 8 /* records ahead of the writer prefetched for writing */

struct nsc_ring {
    /* producer-hot: written by the producer on every commit */
    alignas(NSC_CACHELINE) _Atomic uint64_t head;
    uint64_t cached_tail; /* producer-private copy of tail */
    struct nsc_rec *slots;
    uint64_t mask;
    /* consumer-hot: written by the flusher */
    alignas(NSC_CACHELINE) _Atomic uint64_t tail;
};
_Static_assert(offsetof(struct nsc_ring, tail) - offsetof(struct nsc_ring, head) >= NSC_CACHELINE,
               "head and tail on separate cache lines");

/* Allocates a ring of `records` slots (a power of two). Returns 0 or -1. */
int ring_create(struct nsc_ring *r, uint32_t records);
void ring_destroy(struct nsc_ring *r);

/* Producer: reserves n contiguous positions. Returns the first position, or
 * UINT64_MAX when fewer than n slots are free. */
static inline uint64_t ring_reserve(struct nsc_ring *r, unsigned n) {
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed); /* own field */
    uint64_t cap = r->mask + 1;
    if (__builtin_expect(head + n - r->cached_tail > cap, 0)) {
        /* ACQUIRE: pairs with ring_consume's RELEASE; slots below the new
         * tail are no longer read by the flusher. */
        r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head + n - r->cached_tail > cap)
            return UINT64_MAX;
    }
    /* The slots ahead were last read by the flusher on another core: ask
     * for them in exclusive state now, so the stores of the records to come
     * do not wait for that core to let go of the line. */
    __builtin_prefetch(&r->slots[(head + NSC_RING_PREFETCH) & r->mask], 1, 3);
    return head;
}

static inline struct nsc_rec *ring_slot(struct nsc_ring *r, uint64_t pos) {
    return &r->slots[pos & r->mask];
}

/* Producer: publishes n records starting at the reserved position. */
static inline void ring_commit(struct nsc_ring *r, uint64_t pos, unsigned n) {
    /* RELEASE: pairs with ring_readable's ACQUIRE; the record bytes written
     * before this store are visible to the flusher once it sees the head. */
    atomic_store_explicit(&r->head, pos + n, memory_order_release);
}

/* Consumer: number of records ready from *pos (set to the current tail). */
static inline uint64_t ring_readable(struct nsc_ring *r, uint64_t *pos) {
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed); /* own field */
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    *pos = tail;
    return head - tail;
}

/* Consumer: hands n records back to the producer. */
static inline void ring_consume(struct nsc_ring *r, uint64_t pos, uint64_t n) {
    /* RELEASE: our reads of these slots happen before the producer reuses them. */
    atomic_store_explicit(&r->tail, pos + n, memory_order_release);
}

/* Consumer: copies n records from position pos into dst (handles the wrap). */
void ring_copy_out(const struct nsc_ring *r, uint64_t pos, uint64_t n, struct nsc_rec *dst);

#endif /* NSC_RING_H */
