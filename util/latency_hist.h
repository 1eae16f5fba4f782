// SPDX-License-Identifier: Apache-2.0
/*
 * latency_hist.h - a bounded log-linear histogram of non-negative integers
 * (the benchmark stores latencies in units of 1/16 ns): exact below 128,
 * then 64 sub-buckets per power of two, so every reported percentile is
 * within 1.6 % of the true sample. Fixed size, no allocation while
 * recording; one per (thread, callback kind), merged after the run.
 */
#ifndef NSC_LATENCY_HIST_H
#define NSC_LATENCY_HIST_H

#include <stdint.h>

#define LAT_HIST_BUCKETS (128 + 57 * 64)

struct lat_hist {
    uint64_t count, max, sum;
    uint64_t b[LAT_HIST_BUCKETS];
};

static inline unsigned lat_hist_index(uint64_t v) {
    if (v < 128)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - 6;
    return 128 + (msb - 7) * 64 + (unsigned)((v >> shift) - 64);
}

static inline void lat_hist_add(struct lat_hist *h, uint64_t v) {
    h->b[lat_hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

void lat_hist_merge(struct lat_hist *into, const struct lat_hist *from);
/* The value at quantile q (0..1): the upper edge of its bucket, capped at
 * the largest sample. 0 for an empty histogram. */
uint64_t lat_hist_quantile(const struct lat_hist *h, double q);

#endif /* NSC_LATENCY_HIST_H */
