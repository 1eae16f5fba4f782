// SPDX-License-Identifier: Apache-2.0
/* cycle_timer.c - TSC calibration and the fenced read's overhead. */
#include "cycle_timer.h"

#include <stdlib.h>
#include <time.h>

static double ns_per_tick = 1.0;
static uint64_t fence_overhead;

uint64_t cycle_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void cycle_calibrate(void) {
    uint64_t n0 = cycle_mono_ns(), c0 = cycle_now();
    while (cycle_mono_ns() - n0 < 50000000ull)
        ;
    uint64_t n1 = cycle_mono_ns(), c1 = cycle_now();
    ns_per_tick = (double)(n1 - n0) / (double)(c1 - c0);

    enum { N = 20001 };
    static uint64_t d[N];
    for (int i = 0; i < N; i++) {
        uint64_t a = cycle_fenced();
        uint64_t b = cycle_fenced();
        d[i] = b - a;
    }
    qsort(d, N, sizeof(d[0]), cmp_u64);
    fence_overhead = d[N / 2];
}

double cycle_ns_per_tick(void) { return ns_per_tick; }
uint64_t cycle_fence_overhead(void) { return fence_overhead; }
