// SPDX-License-Identifier: Apache-2.0
/*
 * ring.h - a writer thread's single-producer single-consumer queue of
 * 64-byte records, made of pages borrowed from the process's page pool
 * (page_pool.h), so one thread's burst can use most of the budget while an
 * idle thread holds at most one page.
 *
 * Contract:
 *   - exactly one producer at a time calls ring_reserve/ring_slot/ring_commit
 *     (the thread that owns the ring; a dead thread's ring passes to a new
 *     thread under the thread registry's mutex, which orders the hand-over);
 *   - exactly one consumer (the flusher) calls ring_readable/ring_slot/
 *     ring_consume; it gives fully drained pages back to the pool;
 *   - producer and consumer run concurrently; the producer's common path
 *     takes no lock, makes no syscall and allocates nothing: a full page
 *     takes the next one from the pool (lock-free, ring.c); when the pool is
 *     spent or the ring holds its cap (NCCLSCOPE_RING_KB), reserve fails and
 *     the caller drops the record and counts it.
 *
 * Positions are free-running 64-bit counters. Position p lives in the page
 * pt[(p >> NSC_PAGE_SHIFT) & pt_mask], slot p % NSC_PAGE_RECORDS.
 *
 *   tail ......... head ......... limit
 *   [ readable    )[ reserved by  )     pages cover [tail & ~page, limit)
 *                   the producer
 *
 * Memory ordering:
 *   - producer: fills the slots (and pt entries of new pages), then
 *     store-RELEASE `head` (ring_commit); pairs with the consumer's
 *     load-ACQUIRE of `head` (ring_readable): the consumer sees complete
 *     records and the pt entries that locate them;
 *   - consumer: reads the records, then store-RELEASE `tail` (ring_consume);
 *     pairs with the producer's load-ACQUIRE of `tail` in the slow path of
 *     ring_reserve, which counts the pages still held before taking another;
 *     drained pages go back to the pool with a RELEASE (page_pool.h);
 *   - `limit`, `wpage`, `cached_tail` and `owner` are producer-private.
 *
 * Layout: producer-hot, read-only and consumer-hot fields on three separate
 * cache lines (_Static_assert below): a line the producer writes is read
 * by the consumer only for `head`, once per drain pass.
 */
#ifndef NSC_RING_H
#define NSC_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "page_pool.h"
#include "prefetch.h"
#include "trace_format.h"

#define NSC_CACHELINE 64
#define NSC_RING_PREFETCH 8 /* records ahead of the writer prefetched for writing */

struct nsc_ring {
    /* producer-hot: everything ring_reserve/ring_wslot/ring_commit touch
     * on their common path, and nothing the consumer reads but `head` */
    alignas(NSC_CACHELINE) _Atomic uint64_t head;
    uint64_t limit;        /* positions below it have a page (producer-private) */
    struct nsc_rec *wpage; /* records of the page holding [limit - NSC_PAGE_RECORDS, limit) */
    uint64_t cached_tail;  /* producer-private copy of tail */
    /* The owner's own hot words (thread_state.h keeps its block of event
     * ids here), so that a START touches one line of per-thread state. */
    uint64_t owner[2];
    /* set by ring_create, then only read, by both sides: away from head,
     * which the producer stores on every commit (the consumer reads pt and
     * pt_mask for every page it drains) */
    alignas(NSC_CACHELINE) _Atomic uint32_t *pt; /* page of each position's page number (see above) */
    uint32_t pt_mask;
    uint32_t max_pages;    /* most pages this ring may hold at once; 0: never records */
    /* consumer-hot */
    alignas(NSC_CACHELINE) _Atomic uint64_t tail;
};
_Static_assert(offsetof(struct nsc_ring, tail) - offsetof(struct nsc_ring, head) >= 2 * NSC_CACHELINE &&
                   offsetof(struct nsc_ring, pt) - offsetof(struct nsc_ring, head) >= NSC_CACHELINE,
               "head, the read-only fields and tail on separate cache lines");
_Static_assert(offsetof(struct nsc_ring, owner) + sizeof(uint64_t[2]) <= NSC_CACHELINE,
               "the producer's fields in one cache line");

/* Sets up an empty ring that may hold up to max_records (rounded up to
 * whole pages). Returns 0, or -1 when its page table cannot be allocated.
 * Slow path. max_records 0 makes a ring that always refuses. */
int ring_create(struct nsc_ring *r, uint64_t max_records);
void ring_destroy(struct nsc_ring *r);

/* Slow path of ring_reserve: takes pages until [head, head + n) is covered. */
int ring_grow(struct nsc_ring *r, uint64_t need);

static inline struct nsc_rec *ring_slot(const struct nsc_ring *r, uint64_t pos) {
    uint32_t page = atomic_load_explicit(&r->pt[(pos >> NSC_PAGE_SHIFT) & r->pt_mask],
                                         memory_order_relaxed);
    return page_pool_records(page) + (pos & (NSC_PAGE_RECORDS - 1));
}

/* Producer: the slot of a reserved position, without the page table (the
 * only position outside the newest page is the first of a pair that
 * straddles two pages). */
static inline struct nsc_rec *ring_wslot(const struct nsc_ring *r, uint64_t pos) {
    if (__builtin_expect(r->limit - pos <= NSC_PAGE_RECORDS, 1))
        return r->wpage + (pos & (NSC_PAGE_RECORDS - 1));
    return ring_slot(r, pos);
}

/* Producer: reserves n (1 or 2) positions. Returns the first, or UINT64_MAX
 * when no memory is left for them. */
static inline uint64_t ring_reserve(struct nsc_ring *r, unsigned n) {
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed); /* own field */
    if (__builtin_expect(head + n > r->limit, 0)) {
        if (ring_grow(r, head + n) != 0)
            return UINT64_MAX;
    } else {
        /* The slots ahead were last read by the drainer on another core:
         * ask for them in exclusive state now, so the stores of the records
         * to come do not wait for that core to let go of the line (the
         * records are 64-byte lines; a pair advances two, hence the second
         * prefetch). ring_grow prefetches a new page's first lines. */
        uint64_t ahead = head + NSC_RING_PREFETCH;
        if (ahead + n <= r->limit) {
            struct nsc_rec *p = r->wpage + (ahead & (NSC_PAGE_RECORDS - 1));
            nsc_prefetch_write(p);
            if (n == 2)
                nsc_prefetch_write(p + 1);
            /* (Prefetching the next record's line as well made cold calls
             * slower in bench --cold on the dev VM, 3 rounds of 4: not done.) */
        }
    }
    return head;
}

/* Producer: publishes n records starting at the reserved position. */
static inline void ring_commit(struct nsc_ring *r, uint64_t pos, unsigned n) {
    /* RELEASE: pairs with ring_readable's ACQUIRE; the record bytes and pt
     * entries written before this store are visible once head is. */
    atomic_store_explicit(&r->head, pos + n, memory_order_release);
}

/* Consumer: number of records ready from *pos (set to the current tail). */
static inline uint64_t ring_readable(struct nsc_ring *r, uint64_t *pos) {
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed); /* own field */
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    *pos = tail;
    return head - tail;
}

/* Consumer: hands n records from pos (== tail) back; pages now fully
 * drained return to the pool. */
void ring_consume(struct nsc_ring *r, uint64_t pos, uint64_t n);

/* Records currently held (consumer's view; statistics). */
static inline uint64_t ring_backlog(struct nsc_ring *r) {
    return atomic_load_explicit(&r->head, memory_order_acquire) -
           atomic_load_explicit(&r->tail, memory_order_relaxed);
}

/* Registry, with no producer attached and the ring drained (tail == head):
 * returns the page still held for the next records to the pool. */
void ring_release_idle(struct nsc_ring *r);

#endif /* NSC_RING_H */
