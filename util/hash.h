// SPDX-License-Identifier: Apache-2.0
/*
 * hash.h - the two hashes the tools use: FNV-1a over bytes (names, keys)
 * and a 64-bit finalizer (murmur3's fmix64) to spread ids and combine keys.
 * Not for anything adversarial; just stable and well mixed.
 */
#ifndef NSC_HASH_H
#define NSC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define NSC_FNV_SEED 1469598103934665603ull

static inline uint64_t nsc_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static inline uint64_t nsc_fnv1a_str(uint64_t h, const char *s) {
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static inline uint64_t nsc_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

#endif /* NSC_HASH_H */
