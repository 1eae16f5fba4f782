// SPDX-License-Identifier: Apache-2.0
/* ring.c - the ring's slow paths: page tables, growing, draining pages. */
#include "ring.h"

#include <stdlib.h>

int ring_create(struct nsc_ring *r, uint64_t max_records) {
    uint64_t pages = (max_records + NSC_PAGE_RECORDS - 1) / NSC_PAGE_RECORDS;
    uint32_t size = 1;
    while (size < pages)
        size <<= 1;
    r->pt = calloc(size, sizeof(*r->pt));
    if (!r->pt)
        return -1;
    r->pt_mask = size - 1;
    r->max_pages = (uint32_t)pages;
    r->limit = 0;
    r->wpage = NULL;
    r->cached_tail = 0;
    r->owner[0] = r->owner[1] = 0;
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
    atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
    return 0;
}

void ring_destroy(struct nsc_ring *r) {
    free(r->pt);
    r->pt = NULL;
    r->max_pages = 0;
}

int ring_grow(struct nsc_ring *r, uint64_t need) {
    if (r->max_pages == 0)
        return -1; /* a ring that never records (the sentinel): writes nothing */
    while (r->limit < need) {
        uint64_t held = (r->limit >> NSC_PAGE_SHIFT) - (r->cached_tail >> NSC_PAGE_SHIFT);
        if (held >= r->max_pages) {
            /* ACQUIRE: pairs with ring_consume's RELEASE of tail: the pages
             * below it are drained (and their pt entries read). */
            r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
            held = (r->limit >> NSC_PAGE_SHIFT) - (r->cached_tail >> NSC_PAGE_SHIFT);
            if (held >= r->max_pages)
                return -1;
        }
        uint32_t page = page_pool_get();
        if (page == NSC_PAGE_NONE)
            return -1;
        /* Published to the consumer by ring_commit's RELEASE of head. */
        atomic_store_explicit(&r->pt[(r->limit >> NSC_PAGE_SHIFT) & r->pt_mask], page,
                              memory_order_relaxed);
        r->limit += NSC_PAGE_RECORDS;
        r->wpage = page_pool_records(page);
        /* The page's first lines, for writing (ring_reserve prefetches the
         * rest as the writer advances). */
        for (unsigned k = 0; k < NSC_RING_PREFETCH + 2; k++)
            nsc_prefetch_write(r->wpage + k);
    }
    return 0;
}

void ring_consume(struct nsc_ring *r, uint64_t pos, uint64_t n) {
    uint64_t first = pos >> NSC_PAGE_SHIFT, end = (pos + n) >> NSC_PAGE_SHIFT;
    /* Pages [first, end) are drained. Their pt entries are read before tail
     * moves: once it has, the producer may take new pages into those
     * entries (ring_grow counts pages from tail). */
    uint32_t done[64];
    uint64_t k = first;
    while (k < end) {
        unsigned m = 0;
        for (; k < end && m < 64; k++)
            done[m++] = atomic_load_explicit(&r->pt[k & r->pt_mask], memory_order_relaxed);
        if (k == end)
            /* RELEASE: our reads of these records happen before the
             * producer reuses their slots. */
            atomic_store_explicit(&r->tail, pos + n, memory_order_release);
        for (unsigned i = 0; i < m; i++)
            page_pool_put(done[i]);
    }
    if (first == end)
        atomic_store_explicit(&r->tail, pos + n, memory_order_release);
}

void ring_release_idle(struct nsc_ring *r) {
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    for (uint64_t k = tail >> NSC_PAGE_SHIFT; k < (r->limit >> NSC_PAGE_SHIFT); k++)
        page_pool_put(atomic_load_explicit(&r->pt[k & r->pt_mask], memory_order_relaxed));
    /* The next owner starts with no page: its first reserve takes the page
     * that holds position head (== tail). */
    r->limit = tail & ~(uint64_t)(NSC_PAGE_RECORDS - 1);
    r->wpage = NULL; /* no page: the next reserve grows first */
    r->cached_tail = tail;
}
