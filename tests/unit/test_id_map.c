// SPDX-License-Identifier: Apache-2.0
/* test_id_map.c - util/id_map against a naive reference (a flat array
 * searched linearly), under insert/remove churn, in both modes; a fixed
 * map filled to its limit; iteration with removal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "id_map.h"

#define REF_MAX 5000

struct ref {
    uint64_t key[REF_MAX], val[REF_MAX];
    uint32_t n;
};

static int ref_find(const struct ref *r, uint64_t key) {
    for (uint32_t i = 0; i < r->n; i++)
        if (r->key[i] == key)
            return (int)i;
    return -1;
}

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void) { /* xorshift64 */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Keys from a small space so inserts hit existing keys and clusters form;
 * spread over low bits, high bits and 0 (the side slot). */
static uint64_t some_key(void) {
    uint64_t k = rnd() % 1000; /* x 4 forms: at most 4,000 keys */
    switch (rnd() % 4) {
    case 0: return k;                  /* sequential ids, 0 included */
    case 1: return k << 40;            /* differ only in high bits */
    case 2: return k * 0x100000001ull; /* both halves */
    default: return ~k;                /* near the top */
    }
}

/* Every reference key is found with its value, and the map holds no more. */
static int agrees(const struct nsc_id_map *m, const struct ref *r) {
    if (nsc_id_map_count(m) != r->n)
        return 0;
    for (uint32_t i = 0; i < r->n; i++) {
        uint64_t v;
        if (!nsc_id_map_get_u64(m, r->key[i], &v) || v != r->val[i])
            return 0;
    }
    struct nsc_id_map_iter it;
    uint64_t k;
    void *v;
    uint32_t seen = 0;
    for (nsc_id_map_iter_init(m, &it); nsc_id_map_next(m, &it, &k, &v);) {
        int j = ref_find(r, k);
        uint64_t x;
        memcpy(&x, v, sizeof(x));
        if (j < 0 || r->val[j] != x)
            return 0;
        seen++;
    }
    return seen == r->n;
}

static void churn(int mode, uint32_t max) {
    static struct ref r;
    memset(&r, 0, sizeof(r));
    struct nsc_id_map m;
    CHECK(nsc_id_map_init(&m, max, sizeof(uint64_t), mode) == 0);
    int bad = 0, full_refusals = 0;
    for (int step = 0; step < 200000; step++) {
        uint64_t k = some_key();
        int j = ref_find(&r, k);
        unsigned op = rnd() % 8;
        if (op < 4) { /* insert or overwrite */
            uint64_t v = rnd();
            int rc = nsc_id_map_put_u64(&m, k, v);
            if (j >= 0) {
                bad += rc != 0;
                r.val[j] = v;
            } else if (mode == NSC_ID_MAP_FIXED && r.n >= max) {
                bad += rc != -1; /* full: refused, nothing changed */
                full_refusals++;
            } else {
                bad += rc != 0;
                r.key[r.n] = k;
                r.val[r.n++] = v;
            }
        } else if (op < 7) { /* remove */
            int rc = nsc_id_map_remove(&m, k);
            bad += rc != (j >= 0);
            if (j >= 0) {
                r.key[j] = r.key[--r.n];
                r.val[j] = r.val[r.n];
            }
        } else { /* lookup */
            uint64_t v = 0;
            int rc = nsc_id_map_get_u64(&m, k, &v);
            bad += rc != (j >= 0) || (j >= 0 && v != r.val[j]);
        }
        if (step % 5000 == 0)
            bad += !agrees(&m, &r);
    }
    CHECK(bad == 0);
    CHECK(agrees(&m, &r));
    if (mode == NSC_ID_MAP_FIXED)
        CHECK(full_refusals > 0); /* the churn did reach the limit */
    nsc_id_map_destroy(&m);
}

/* A fixed map takes exactly max keys, refuses the next without
 * allocating or changing anything, and takes one again after a remove. */
static void fixed_full(void) {
    struct nsc_id_map m;
    CHECK(nsc_id_map_init(&m, 100, 24, NSC_ID_MAP_FIXED) == 0);
    uint64_t *keys_before = m.keys;
    uint32_t cap_before = m.cap;
    for (uint64_t k = 0; k < 100; k++) {
        int added = 0;
        unsigned char *v = nsc_id_map_insert(&m, k * 7, &added);
        CHECK(v && added);
        if (v) {
            CHECK(v[0] == 0 && v[23] == 0); /* zeroed */
            memset(v, (int)k + 1, 24);
        }
    }
    CHECK(nsc_id_map_count(&m) == 100);
    CHECK(nsc_id_map_insert(&m, 100000, NULL) == NULL);
    int added = 1;
    CHECK(nsc_id_map_insert(&m, 7 * 5, &added) != NULL && !added); /* existing key still found */
    CHECK(m.keys == keys_before && m.cap == cap_before);
    for (uint64_t k = 0; k < 100; k++) {
        unsigned char *v = nsc_id_map_find(&m, k * 7);
        CHECK(v && v[0] == (unsigned char)(k + 1) && v[23] == (unsigned char)(k + 1));
    }
    CHECK(nsc_id_map_remove(&m, 7 * 3) == 1);
    CHECK(nsc_id_map_remove(&m, 7 * 3) == 0);
    CHECK(nsc_id_map_insert(&m, 100000, NULL) != NULL);
    CHECK(nsc_id_map_insert(&m, 100001, NULL) == NULL);
    nsc_id_map_clear(&m);
    CHECK(nsc_id_map_count(&m) == 0 && nsc_id_map_find(&m, 0) == NULL &&
          nsc_id_map_find(&m, 7) == NULL);
    nsc_id_map_destroy(&m);
}

/* Removing every other entry while iterating visits each key once and
 * leaves exactly the others; remove_value removes what find returned. */
static void iterate_remove(void) {
    struct nsc_id_map m;
    CHECK(nsc_id_map_init(&m, 4, sizeof(uint64_t), NSC_ID_MAP_GROW) == 0);
    const uint64_t n = 3000;
    for (uint64_t k = 0; k < n; k++) /* grows from 8 slots */
        CHECK(nsc_id_map_put_u64(&m, k << 20, k) == 0);
    CHECK(nsc_id_map_count(&m) == n);
    static unsigned char seen[3000];
    memset(seen, 0, sizeof(seen));
    struct nsc_id_map_iter it;
    uint64_t k;
    void *v;
    int dup = 0;
    for (nsc_id_map_iter_init(&m, &it); nsc_id_map_next(&m, &it, &k, &v);) {
        uint64_t x;
        memcpy(&x, v, sizeof(x));
        CHECK(x == k >> 20);
        dup += seen[x]++ != 0;
        if (x % 2)
            nsc_id_map_iter_remove(&m, &it);
    }
    CHECK(dup == 0);
    uint32_t missing = 0;
    for (uint64_t i = 0; i < n; i++)
        missing += !seen[i];
    CHECK(missing == 0);
    CHECK(nsc_id_map_count(&m) == n / 2);
    int wrong = 0;
    for (uint64_t i = 0; i < n; i++)
        wrong += (nsc_id_map_find(&m, i << 20) != NULL) != (i % 2 == 0);
    CHECK(wrong == 0);
    void *z = nsc_id_map_find(&m, 0);
    CHECK(z != NULL);
    nsc_id_map_remove_value(&m, z);
    CHECK(nsc_id_map_find(&m, 0) == NULL);
    void *w = nsc_id_map_find(&m, 2ull << 20);
    CHECK(w != NULL);
    nsc_id_map_remove_value(&m, w);
    CHECK(nsc_id_map_find(&m, 2ull << 20) == NULL && nsc_id_map_count(&m) == n / 2 - 2);
    nsc_id_map_destroy(&m);
}

int main(void) {
    churn(NSC_ID_MAP_GROW, 1);
    churn(NSC_ID_MAP_FIXED, 700);
    churn(NSC_ID_MAP_FIXED, 64);
    fixed_full();
    iterate_remove();
    return check_summary();
}
