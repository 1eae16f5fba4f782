// SPDX-License-Identifier: Apache-2.0
/* clock.c - record clock selection, TSC calibration and anchors. */
#include "clock.h"

#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Ids start at 1: 0 is no event. */
struct nsc_hot_line nsc_hot = {.next_id = 1};
static uint64_t ticks_per_sec = 1000000000ull;

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int tsc_is_invariant(void) {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1; /* CPUID.80000007H:EDX[8] = invariant TSC */
#else
    return 0;
#endif
}

/* Measures the TSC against CLOCK_MONOTONIC over ~5 ms. Anchors written every
 * flush refine the mapping, so this only has to be good for the first
 * second. */
static uint64_t calibrate(void) {
    uint64_t t0 = nsc_clock_monotonic_ns(), c0 = nsc_clock_ticks();
    uint64_t t1, c1;
    do {
        t1 = nsc_clock_monotonic_ns();
        c1 = nsc_clock_ticks();
    } while (t1 - t0 < 5000000ull);
    return (uint64_t)((double)(c1 - c0) * 1e9 / (double)(t1 - t0));
}

enum nsc_clock_source nsc_clock_init(const char *choice) {
    int want_tsc = tsc_is_invariant();
    if (choice && strcmp(choice, "monotonic") == 0)
        want_tsc = 0;
    nsc_clock_use_tsc = want_tsc;
    if (want_tsc) {
        ticks_per_sec = calibrate();
        if (ticks_per_sec == 0) {
            nsc_clock_use_tsc = 0;
            ticks_per_sec = 1000000000ull;
        }
    } else {
        ticks_per_sec = 1000000000ull;
    }
    return nsc_clock_use_tsc ? NSC_CLOCK_TSC : NSC_CLOCK_MONOTONIC;
}

uint64_t nsc_clock_ticks_per_sec(void) { return ticks_per_sec; }

void nsc_clock_anchor(struct nsc_anchor *a) {
    /* ticks sampled between the two monotonic reads; the midpoint is the
     * best estimate of when it was taken. */
    uint64_t m0 = nsc_clock_monotonic_ns();
    uint64_t t = nsc_clock_ticks();
    uint64_t m1 = nsc_clock_monotonic_ns();
    a->ticks = t;
    a->mono_ns = m0 + (m1 - m0) / 2;
    a->real_ns = realtime_ns();
}
