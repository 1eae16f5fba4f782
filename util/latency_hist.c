// SPDX-License-Identifier: Apache-2.0
/* latency_hist.c - merging and quantiles. */
#include "latency_hist.h"

void lat_hist_merge(struct lat_hist *into, const struct lat_hist *from) {
    for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->max > into->max)
        into->max = from->max;
}

static uint64_t bucket_upper(unsigned i) {
    if (i < 128)
        return i;
    unsigned k = i - 128;
    unsigned msb = k / 64 + 7;
    unsigned shift = msb - 6;
    uint64_t sub = (uint64_t)(k % 64) + 64;
    return ((sub + 1) << shift) - 1;
}

uint64_t lat_hist_quantile(const struct lat_hist *h, double q) {
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if (rank >= h->count)
        rank = h->count - 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen > rank) {
            uint64_t v = bucket_upper(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}
