// SPDX-License-Identifier: Apache-2.0
/* page_pool.c - the budgeted page pool (see page_pool.h). */
#include "page_pool.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

struct nsc_rec *nsc_pool_base;
static uint32_t npages;
static _Atomic uint32_t *next_of; /* next_of[p]: page below p on the free stack */
/* Written by every get and put: a line of their own (the struct's
 * alignment pads it to 64 bytes), away from what is only read. */
static struct {
    _Atomic uint64_t top; /* tag << 32 | page index (NSC_PAGE_NONE: empty) */
    _Atomic uint32_t in_use, peak;
} __attribute__((aligned(64))) hot;
_Static_assert(sizeof(hot) == 64, "the pool's hot words fill one line");

int page_pool_create(uint64_t bytes) {
    if (nsc_pool_base)
        return 0;
    uint64_t n = bytes / NSC_PAGE_BYTES;
    if (n < 2)
        n = 2;
    if (n > (1u << 20))
        n = 1u << 20;
    /* MAP_NORESERVE: the budget is an upper bound, not a commitment; pages
     * become resident when a ring first writes them. */
    void *mem = mmap(NULL, n * NSC_PAGE_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return -1;
    next_of = calloc(n, sizeof(*next_of));
    if (!next_of) {
        munmap(mem, n * NSC_PAGE_BYTES);
        return -1;
    }
    /* Page 0 on top: a LIFO reuses the few pages already resident and warm
     * before it touches new ones. */
    for (uint32_t p = 0; p < n; p++)
        atomic_store_explicit(&next_of[p], p + 1 < n ? p + 1 : NSC_PAGE_NONE, memory_order_relaxed);
    npages = (uint32_t)n;
    atomic_store_explicit(&hot.in_use, 0, memory_order_relaxed);
    atomic_store_explicit(&hot.peak, 0, memory_order_relaxed);
    atomic_store_explicit(&hot.top, 0, memory_order_release);
    nsc_pool_base = mem;
    return 0;
}

uint32_t page_pool_get(void) {
    /* ACQUIRE: pairs with put's RELEASE (the last owner is done with it). */
    uint64_t old = atomic_load_explicit(&hot.top, memory_order_acquire);
    for (;;) {
        uint32_t p = (uint32_t)old;
        if (p == NSC_PAGE_NONE)
            return NSC_PAGE_NONE;
        /* May be stale if another thread pops p first; the tag makes the
         * CAS below fail then. */
        uint32_t below = atomic_load_explicit(&next_of[p], memory_order_relaxed);
        uint64_t nw = ((old >> 32) + 1) << 32 | below;
        if (atomic_compare_exchange_weak_explicit(&hot.top, &old, nw, memory_order_acquire,
                                                  memory_order_acquire))
            break;
    }
    uint32_t u = atomic_fetch_add_explicit(&hot.in_use, 1, memory_order_relaxed) + 1;
    uint32_t pk = atomic_load_explicit(&hot.peak, memory_order_relaxed);
    while (u > pk && !atomic_compare_exchange_weak_explicit(&hot.peak, &pk, u, memory_order_relaxed,
                                                            memory_order_relaxed))
        ;
    return (uint32_t)old;
}

void page_pool_put(uint32_t page) {
    atomic_fetch_sub_explicit(&hot.in_use, 1, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&hot.top, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&next_of[page], (uint32_t)old, memory_order_relaxed);
        uint64_t nw = ((old >> 32) + 1) << 32 | page;
        /* RELEASE: our reads of the page and the next_of store happen
         * before a getter's ACQUIRE sees it on top. */
        if (atomic_compare_exchange_weak_explicit(&hot.top, &old, nw, memory_order_release,
                                                  memory_order_relaxed))
            return;
    }
}

uint32_t page_pool_pages(void) { return npages; }
uint32_t page_pool_in_use(void) { return atomic_load_explicit(&hot.in_use, memory_order_relaxed); }
uint32_t page_pool_peak(void) { return atomic_load_explicit(&hot.peak, memory_order_relaxed); }

void page_pool_destroy(void) {
    if (!nsc_pool_base)
        return;
    munmap(nsc_pool_base, (uint64_t)npages * NSC_PAGE_BYTES);
    free(next_of);
    next_of = NULL;
    nsc_pool_base = NULL;
    npages = 0;
}
