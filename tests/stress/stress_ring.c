/*
 * stress_ring.c - one producer and one consumer hammer a small ring; the
 * consumer checks every record arrives once, in order, intact. Run under
 * TSan in CI (the ring's acquire/release pairs are what TSan checks).
 * Rerunnable: `stress_ring [records]`.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ring.h"

static struct nsc_ring ring;
static uint64_t total = 2000000;

static void *producer(void *arg) {
    (void)arg;
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
}

int main(int argc, char **argv) {
    if (argc > 1)
        total = strtoull(argv[1], NULL, 10);
    if (ring_create(&ring, 64) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    uint64_t next = 0, bad = 0;
    struct nsc_rec buf[64];
    while (next < total) {
        uint64_t pos, n = ring_readable(&ring, &pos);
        if (!n)
            continue;
        ring_copy_out(&ring, pos, n, buf);
        ring_consume(&ring, pos, n);
        for (uint64_t k = 0; k < n; k++, next++)
            if (buf[k].h.id != next || buf[k].h.ticks != ~next)
                bad++;
    }
    pthread_join(t, NULL);
    ring_destroy(&ring);
    printf("%llu records, %llu bad\n%d passed, %d failed\n", (unsigned long long)total,
           (unsigned long long)bad, bad == 0, bad != 0);
    return bad != 0;
}
