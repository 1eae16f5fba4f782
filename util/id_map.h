// SPDX-License-Identifier: Apache-2.0
/*
 * id_map.h - the project's one id map: u64 key -> fixed-size value.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones: a table that churns forever never degrades). The home slot
 * is Fibonacci hashing, the top bits of key * 2^64/phi, which spreads
 * sequential ids and ids that differ in high bits alike.
 *
 * Two modes, chosen at init:
 * - fixed (NSC_ID_MAP_FIXED): all memory is taken by init; afterwards no
 *   call allocates, and an insert past `max_entries` fails (returns NULL)
 *   so the caller can count what it could not keep. For the plugin and
 *   its flusher, which must not allocate on their paths.
 * - growable: the table doubles when it would pass half full. For tools.
 *
 * Every key is valid, 0 included (key 0 lives in a side slot; 0 marks an
 * empty slot in the key array). Values are `val_size` bytes each, zeroed
 * when their key is inserted.
 *
 * Pointers to values stay valid until the next insert (growable mode may
 * move every value) or the next remove (backward shift moves neighbours).
 * Not thread-safe: one owner, or the owner's lock, per map.
 */
#ifndef NSC_ID_MAP_H
#define NSC_ID_MAP_H

#include <stddef.h>
#include <stdint.h>

enum { NSC_ID_MAP_GROW = 0, NSC_ID_MAP_FIXED = 1 };

struct nsc_id_map {
    uint64_t *keys;      /* cap slots, 0 = empty */
    unsigned char *vals; /* (cap + 1) values; the last is key 0's */
    size_t val_size;
    uint32_t cap;        /* power of two, >= 8, always more than twice count */
    uint32_t shift;      /* 64 - log2(cap) */
    uint32_t count;      /* keys held, key 0 included */
    uint32_t limit;      /* fixed mode: most keys held; growable: grow past this */
    uint8_t fixed, has_zero;
};

/* Position of an iteration; see nsc_id_map_next. */
struct nsc_id_map_iter {
    uint32_t pos, left, cur;
    uint8_t zero_left, cur_zero;
};

/* Sets up `m` for at most `max_entries` keys (fixed mode) or an initial
 * guess of them (growable). Returns 0, or -1 when memory is short (then
 * `m` holds nothing and nsc_id_map_destroy is harmless). */
int nsc_id_map_init(struct nsc_id_map *m, uint32_t max_entries, size_t val_size, int mode);
void nsc_id_map_destroy(struct nsc_id_map *m);

/* Forgets every key; keeps the memory (no allocation in fixed mode). */
void nsc_id_map_clear(struct nsc_id_map *m);

static inline uint32_t nsc_id_map_count(const struct nsc_id_map *m) { return m->count; }

/* The value of `key`, or NULL. */
void *nsc_id_map_find(const struct nsc_id_map *m, uint64_t key);

/* The value of `key`, inserted (zeroed) when absent; *added says which
 * (may be NULL). NULL when the key is absent and cannot be added: fixed
 * map full, or growth failed for memory. */
void *nsc_id_map_insert(struct nsc_id_map *m, uint64_t key, int *added);

/* Removes `key`; returns 1 if it was there, else 0. */
int nsc_id_map_remove(struct nsc_id_map *m, uint64_t key);

/* Removes the entry whose value `val` points at (a pointer from find or
 * insert, still valid): saves the second probe of find-then-remove. */
void nsc_id_map_remove_value(struct nsc_id_map *m, void *val);

/* u64 values (val_size == 8): get returns 1 and sets *val when present;
 * put returns 0, or -1 when the key cannot be added. */
int nsc_id_map_get_u64(const struct nsc_id_map *m, uint64_t key, uint64_t *val);
int nsc_id_map_put_u64(struct nsc_id_map *m, uint64_t key, uint64_t val);

/* Iteration visits each key once, in no useful order:
 *     struct nsc_id_map_iter it;
 *     uint64_t k; void *v;
 *     for (nsc_id_map_iter_init(m, &it); nsc_id_map_next(m, &it, &k, &v);)
 *         if (done(v)) nsc_id_map_iter_remove(m, &it);
 * The only change allowed meanwhile is nsc_id_map_iter_remove, which
 * removes the entry just returned (the order makes backward shifts move
 * only entries already visited). */
void nsc_id_map_iter_init(const struct nsc_id_map *m, struct nsc_id_map_iter *it);
int nsc_id_map_next(const struct nsc_id_map *m, struct nsc_id_map_iter *it, uint64_t *key,
                    void **val);
void nsc_id_map_iter_remove(struct nsc_id_map *m, const struct nsc_id_map_iter *it);

#endif /* NSC_ID_MAP_H */
