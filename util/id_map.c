// SPDX-License-Identifier: Apache-2.0
/* id_map.c - open addressing, linear probing, backward-shift deletion.
 * See id_map.h for the contract. */
#include "id_map.h"

#include <stdlib.h>
#include <string.h>

#define GOLDEN 0x9e3779b97f4a7c15ull /* 2^64 / phi, odd */

static inline uint32_t home(const struct nsc_id_map *m, uint64_t key) {
    return (uint32_t)((key * GOLDEN) >> m->shift);
}

static inline void *val_at(const struct nsc_id_map *m, uint32_t i) {
    return m->vals + (size_t)i * m->val_size;
}

/* Allocates the arrays for `cap` slots into `m` (keys zeroed). */
static int alloc_table(struct nsc_id_map *m, uint32_t cap) {
    uint32_t log2 = 0;
    while ((1u << log2) < cap)
        log2++;
    m->keys = calloc(cap, sizeof(*m->keys));
    /* +1: the side slot of key 0; at least 1 byte so a 0-size value
     * map (a set) still gets a pointer to return. */
    m->vals = calloc((size_t)cap + 1, m->val_size ? m->val_size : 1);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        m->keys = NULL;
        m->vals = NULL;
        return -1;
    }
    m->cap = cap;
    m->shift = 64 - log2;
    return 0;
}

int nsc_id_map_init(struct nsc_id_map *m, uint32_t max_entries, size_t val_size, int mode) {
    memset(m, 0, sizeof(*m));
    m->val_size = val_size;
    m->fixed = mode == NSC_ID_MAP_FIXED;
    if (max_entries > (1u << 30))
        return -1;
    uint32_t cap = 8;
    while (cap < 2 * max_entries)
        cap *= 2;
    if (alloc_table(m, cap) != 0)
        return -1;
    m->limit = m->fixed ? max_entries : cap / 2;
    return 0;
}

void nsc_id_map_destroy(struct nsc_id_map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

void nsc_id_map_clear(struct nsc_id_map *m) {
    if (m->keys)
        memset(m->keys, 0, (size_t)m->cap * sizeof(*m->keys));
    m->count = 0;
    m->has_zero = 0;
}

/* The slot holding `key` (not 0), or the empty slot its probe ends on. */
static uint32_t probe(const struct nsc_id_map *m, uint64_t key) {
    uint32_t mask = m->cap - 1, i = home(m, key);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

void *nsc_id_map_find(const struct nsc_id_map *m, uint64_t key) {
    if (!m->keys)
        return NULL;
    if (key == 0)
        return m->has_zero ? val_at(m, m->cap) : NULL;
    uint32_t i = probe(m, key);
    return m->keys[i] ? val_at(m, i) : NULL;
}

/* Doubles the table, rehashing every key. Growable mode only. */
static int grow(struct nsc_id_map *m) {
    if (m->cap >= (1u << 31))
        return -1;
    struct nsc_id_map old = *m;
    if (alloc_table(m, old.cap * 2) != 0) {
        *m = old;
        return -1;
    }
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.keys[i]) {
            uint32_t j = probe(m, old.keys[i]);
            m->keys[j] = old.keys[i];
            memcpy(val_at(m, j), val_at(&old, i), m->val_size);
        }
    memcpy(val_at(m, m->cap), val_at(&old, old.cap), m->val_size);
    m->limit = m->cap / 2;
    free(old.keys);
    free(old.vals);
    return 0;
}

void *nsc_id_map_insert(struct nsc_id_map *m, uint64_t key, int *added) {
    if (added)
        *added = 0;
    if (!m->keys)
        return NULL;
    if (key == 0 && m->has_zero)
        return val_at(m, m->cap);
    uint32_t i = 0;
    if (key != 0) {
        i = probe(m, key);
        if (m->keys[i])
            return val_at(m, i);
    }
    if (m->count >= m->limit) {
        if (m->fixed || grow(m) != 0)
            return NULL;
        if (key != 0)
            i = probe(m, key); /* the table moved */
    }
    void *v;
    if (key == 0) {
        m->has_zero = 1;
        v = val_at(m, m->cap);
    } else {
        m->keys[i] = key;
        v = val_at(m, i);
    }
    memset(v, 0, m->val_size);
    m->count++;
    if (added)
        *added = 1;
    return v;
}

/* Empties slot i and closes the gap: each following entry of the cluster
 * whose home is not in (i, j] cyclically moves back into the hole. */
static void remove_slot(struct nsc_id_map *m, uint32_t i) {
    uint32_t mask = m->cap - 1;
    m->keys[i] = 0;
    m->count--;
    for (uint32_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        uint32_t h = home(m, m->keys[j]);
        /* j's entry may move into the hole at i when i lies in [h, j) cyclically */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            memcpy(val_at(m, i), val_at(m, j), m->val_size);
            m->keys[j] = 0;
            i = j;
        }
    }
}

int nsc_id_map_remove(struct nsc_id_map *m, uint64_t key) {
    if (!m->keys)
        return 0;
    if (key == 0) {
        if (!m->has_zero)
            return 0;
        m->has_zero = 0;
        m->count--;
        return 1;
    }
    uint32_t i = probe(m, key);
    if (!m->keys[i])
        return 0;
    remove_slot(m, i);
    return 1;
}

void nsc_id_map_remove_value(struct nsc_id_map *m, void *val) {
    size_t i = ((unsigned char *)val - m->vals) / (m->val_size ? m->val_size : 1);
    if (i == m->cap) {
        m->has_zero = 0;
        m->count--;
    } else {
        remove_slot(m, (uint32_t)i);
    }
}

int nsc_id_map_get_u64(const struct nsc_id_map *m, uint64_t key, uint64_t *val) {
    const void *v = nsc_id_map_find(m, key);
    if (!v)
        return 0;
    memcpy(val, v, sizeof(*val));
    return 1;
}

int nsc_id_map_put_u64(struct nsc_id_map *m, uint64_t key, uint64_t val) {
    void *v = nsc_id_map_insert(m, key, NULL);
    if (!v)
        return -1;
    memcpy(v, &val, sizeof(val));
    return 0;
}

/* Iteration runs downward from an empty slot. A backward shift after
 * removing slot i moves entries from the slots after i up to the next
 * empty one; going downward from an empty slot, those were all visited
 * already, and the ones not yet visited never move. */
void nsc_id_map_iter_init(const struct nsc_id_map *m, struct nsc_id_map_iter *it) {
    memset(it, 0, sizeof(*it));
    if (!m->keys)
        return;
    uint32_t e = 0;
    while (m->keys[e]) /* there is always an empty slot: cap > 2 x count */
        e++;
    it->pos = e;
    it->left = m->cap - 1;
    it->zero_left = m->has_zero;
}

int nsc_id_map_next(const struct nsc_id_map *m, struct nsc_id_map_iter *it, uint64_t *key,
                    void **val) {
    if (it->zero_left) {
        it->zero_left = 0;
        it->cur_zero = 1;
        *key = 0;
        *val = val_at(m, m->cap);
        return 1;
    }
    it->cur_zero = 0;
    while (it->left) {
        it->left--;
        it->pos = (it->pos - 1) & (m->cap - 1);
        if (m->keys[it->pos]) {
            it->cur = it->pos;
            *key = m->keys[it->pos];
            *val = val_at(m, it->pos);
            return 1;
        }
    }
    return 0;
}

void nsc_id_map_iter_remove(struct nsc_id_map *m, const struct nsc_id_map_iter *it) {
    if (it->cur_zero) {
        m->has_zero = 0;
        m->count--;
    } else {
        remove_slot(m, it->cur);
    }
}
