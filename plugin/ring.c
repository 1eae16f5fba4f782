/* ring.c - ring allocation and the consumer's copy (slow paths). */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

int ring_create(struct nsc_ring *r, uint32_t records) {
    if (records == 0 || (records & (records - 1)) != 0)
        return -1;
    void *mem = NULL;
    if (posix_memalign(&mem, NSC_CACHELINE, (size_t)records * sizeof(struct nsc_rec)) != 0)
        return -1;
    /* Touch every page now, in the slow path, so the first records written
     * from a callback never take a page fault. */
    memset(mem, 0, (size_t)records * sizeof(struct nsc_rec));
    r->slots = mem;
    r->mask = records - 1;
    r->cached_tail = 0;
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
    atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
    return 0;
}

void ring_destroy(struct nsc_ring *r) {
    free(r->slots);
    r->slots = NULL;
}

void ring_copy_out(const struct nsc_ring *r, uint64_t pos, uint64_t n, struct nsc_rec *dst) {
    uint64_t cap = r->mask + 1;
    uint64_t first = pos & r->mask;
    uint64_t run = n < cap - first ? n : cap - first;
    memcpy(dst, &r->slots[first], run * sizeof(struct nsc_rec));
    if (run < n)
        memcpy(dst + run, &r->slots[0], (n - run) * sizeof(struct nsc_rec));
}
