// SPDX-License-Identifier: Apache-2.0
/*
 * stress_ring.c - one producer and one consumer hammer a small paged ring
 * through exactly the consumer API the flusher uses (ring_readable,
 * ring_slot, ring_consume, which hands drained pages back to the pool); the
 * consumer checks every record arrives once, in order, intact. A second
 * producer/consumer pair shares the pool, so pages move between rings.
 * Run under TSan in CI (the ring's and the pool's acquire/release pairs are
 * what TSan checks).
 * Rerunnable: `stress_ring [records]`.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "ring.h"

static struct nsc_ring rings[2];
static uint64_t total = 2000000;

static void *producer(void *arg) {
    struct nsc_ring *ring_ = arg;
#define ring (*ring_)
    for (uint64_t i = 0; i < total;) {
        unsigned n = (i % 7 == 0) ? 2 : 1; /* START+EXT pairs too */
        if (i + n > total)
            n = 1;
        uint64_t p = ring_reserve(&ring, n);
        if (p == UINT64_MAX)
            continue; /* full: retry (the plugin would drop) */
        for (unsigned k = 0; k < n; k++) {
            struct nsc_rec *r = ring_slot(&ring, p + k);
            r->h.id = i + k;
            r->h.ticks = ~(i + k);
        }
        ring_commit(&ring, p, n);
        i += n;
    }
    return NULL;
#undef ring
}

static void *consumer(void *arg) {
    struct nsc_ring *r = arg;
    uint64_t next = 0, bad = 0;
    while (next < total) {
        uint64_t pos, n = ring_readable(r, &pos);
        if (!n)
            continue;
        for (uint64_t k = 0; k < n; k++, next++) {
            const struct nsc_rec *rec = ring_slot(r, pos + k);
            if (rec->h.id != next || rec->h.ticks != ~next)
                bad++;
        }
        ring_consume(r, pos, n);
    }
    return (void *)(uintptr_t)bad;
}

int main(int argc, char **argv) {
    if (argc > 1)
        total = strtoull(argv[1], NULL, 10);
    /* 6 pages for two rings of at most 4: they compete for the pool */
    if (page_pool_create(6 * NSC_PAGE_BYTES) != 0)
        return 1;
    pthread_t p[2], c[2];
    for (int i = 0; i < 2; i++) {
        if (ring_create(&rings[i], 4 * NSC_PAGE_RECORDS) != 0)
            return 1;
        pthread_create(&p[i], NULL, producer, &rings[i]);
        pthread_create(&c[i], NULL, consumer, &rings[i]);
    }
    uint64_t bad = 0;
    for (int i = 0; i < 2; i++) {
        void *b;
        pthread_join(p[i], NULL);
        pthread_join(c[i], &b);
        bad += (uint64_t)(uintptr_t)b;
        ring_release_idle(&rings[i]);
        ring_destroy(&rings[i]);
    }
    int leak = page_pool_in_use() != 0;
    printf("2 x %llu records, %llu bad, pages in use at the end %u\n%d passed, %d failed\n",
           (unsigned long long)total, (unsigned long long)bad, page_pool_in_use(),
           bad == 0 && !leak, bad != 0 || leak);
    return bad != 0 || leak;
}
