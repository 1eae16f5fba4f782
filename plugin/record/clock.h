// SPDX-License-Identifier: Apache-2.0
/*
 * clock.h - the record clock: what every record's `ticks` field holds.
 *
 * On x86-64 with an invariant TSC the record clock is the TSC (rdtsc, about
 * 10 ns, no syscall, no vDSO call); elsewhere, or with NCCLSCOPE_CLOCK=monotonic,
 * it is CLOCK_MONOTONIC in ns. The flusher writes anchors (ticks, monotonic,
 * realtime) taken together, which is how readers map ticks to time
 * (docs/format.md, "Clock").
 */
#ifndef NSC_CLOCK_H
#define NSC_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "hot_line.h"
#include "trace_format.h"

/* Set once by nsc_clock_init() before any recording starts, then only read:
 * a plain word is enough (published to other threads by the session mutex
 * and by thread creation). It sits on the callbacks' hot line. */
#define nsc_clock_use_tsc (nsc_hot.clock_use_tsc)

static inline uint64_t nsc_clock_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t nsc_clock_ticks(void) {
#if defined(__x86_64__)
    if (__builtin_expect(nsc_clock_use_tsc, 1)) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return nsc_clock_monotonic_ns();
}

/* Chooses the clock ("auto", "tsc" or "monotonic") and, for the TSC,
 * calibrates ticks per second over a few milliseconds. Returns the source. */
enum nsc_clock_source nsc_clock_init(const char *choice);

/* Ticks per second of the record clock (1e9 for monotonic). */
uint64_t nsc_clock_ticks_per_sec(void);

/* Reads the three clocks as close together as we can. */
void nsc_clock_anchor(struct nsc_anchor *a);

#endif /* NSC_CLOCK_H */
