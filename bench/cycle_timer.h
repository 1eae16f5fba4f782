// SPDX-License-Identifier: Apache-2.0
/*
 * cycle_timer.h - the benchmark's clock: the TSC read two ways, and its
 * rate.
 *
 *   cycle_now()     plain rdtsc: what a batch of calls is bracketed with
 *                   (the batch is long, so the read's own cost and the
 *                   lack of ordering vanish in the division);
 *   cycle_fenced()  lfence; rdtsc; lfence: for single-call samples, so the
 *                   call cannot drift across the read in either direction.
 *                   Its own cost is measured (cycle_fence_overhead) and
 *                   subtracted from every sample.
 */
#ifndef NSC_CYCLE_TIMER_H
#define NSC_CYCLE_TIMER_H

#include <stdint.h>

static inline uint64_t cycle_now(void) {
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t cycle_fenced(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* Measures the TSC rate against CLOCK_MONOTONIC (about 50 ms). */
void cycle_calibrate(void);
double cycle_ns_per_tick(void);
/* Median cost in ticks of an empty cycle_fenced() pair. */
uint64_t cycle_fence_overhead(void);
/* CLOCK_MONOTONIC in ns. */
uint64_t cycle_mono_ns(void);

#endif /* NSC_CYCLE_TIMER_H */
