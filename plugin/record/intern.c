// SPDX-License-Identifier: Apache-2.0
/* intern.c - the process-wide string table (slow path).
 *
 * Lookup by content goes through an open-addressing index (FNV-1a of the
 * kept text, linear probing, at most half full), so a miss costs the same
 * with 20 strings or 65,000 (a linear scan under the mutex would make each
 * new pointer cost up to 65,000 string compares). */
#include "intern.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

#define INDEX_SIZE (2u * NSC_INTERN_MAX) /* power of two; at most half full */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *texts[NSC_INTERN_MAX] = {NULL, "?"};
/* Id 0 = NULL, id 1 = overflow marker; real strings start at 2. */
static _Atomic uint32_t count = 2;
static uint16_t index_ids[INDEX_SIZE]; /* lock; 0 = empty slot */
static size_t text_bytes;              /* lock */
static _Atomic uint64_t overflows;
static const char overflow_text[] = "?";

void nsc_intern_count_overflow(void) {
    /* Relaxed: a statistic, read by the flusher whenever it writes STATS. */
    atomic_fetch_add_explicit(&overflows, 1, memory_order_relaxed);
}

static _Atomic uint64_t user_refused;
static _Atomic int user_refusal_seen;

/* The id of s, added if it is new and fits; 0 when it does not. User text
 * fits only outside NCCL's reserve (intern.h). */
static uint32_t lookup_or_add(const char *s, int user) {
    size_t len = strnlen(s, NSC_INTERN_TEXT_LEN);
    uint32_t h = (uint32_t)nsc_mix64(nsc_fnv1a(NSC_FNV_SEED, s, len));
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load_explicit(&count, memory_order_relaxed); /* writers hold the lock */
    uint32_t id = 0, at = h & (INDEX_SIZE - 1);
    for (; index_ids[at]; at = (at + 1) & (INDEX_SIZE - 1)) {
        const char *t = texts[index_ids[at]];
        if (strncmp(t, s, len) == 0 && t[len] == '\0') {
            id = index_ids[at];
            break;
        }
    }
    uint32_t max_ids = user ? NSC_INTERN_MAX - NSC_INTERN_NCCL_IDS : NSC_INTERN_MAX;
    size_t max_text = user ? NSC_INTERN_TEXT_MAX - NSC_INTERN_NCCL_TEXT : NSC_INTERN_TEXT_MAX;
    if (id == 0 && n < max_ids && text_bytes + len + 1 <= max_text) {
        char *t = malloc(len + 1);
        if (t) {
            memcpy(t, s, len);
            t[len] = '\0';
            texts[n] = t;
            text_bytes += len + 1;
            index_ids[at] = (uint16_t)n; /* `at` is the empty slot the probe ended on */
            id = n;
            /* RELEASE: the text is complete before the flusher, which
             * loads `count` with ACQUIRE, can see the new id. */
            atomic_store_explicit(&count, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&lock);
    return id;
}

uint16_t nsc_intern_slow(struct nsc_intern_cache *c, const char *s) {
    uint32_t id = lookup_or_add(s, 0);
    if (id == 0) {
        nsc_intern_count_overflow();
        id = NSC_INTERN_OVERFLOW;
    }
    /* Overflow ids are cached too: the fast path counts each later use. */
    unsigned slot = nsc_intern_slot(s);
    c->e[slot].ptr = s;
    c->e[slot].id = (uint16_t)id;
    return (uint16_t)id;
}

uint16_t nsc_intern_user(const char *s, int *first) {
    uint32_t id = lookup_or_add(s, 1);
    if (first)
        *first = 0;
    if (id)
        return (uint16_t)id;
    /* Relaxed: counts; the flag is taken by one caller only (exchange). */
    nsc_intern_count_overflow();
    atomic_fetch_add_explicit(&user_refused, 1, memory_order_relaxed);
    if (first && !atomic_exchange_explicit(&user_refusal_seen, 1, memory_order_relaxed))
        *first = 1;
    return NSC_INTERN_OVERFLOW;
}

uint64_t nsc_intern_user_refused(void) {
    return atomic_load_explicit(&user_refused, memory_order_relaxed);
}

uint32_t nsc_intern_count(void) { return atomic_load_explicit(&count, memory_order_acquire); }

const char *nsc_intern_text(uint32_t id) {
    if (id == NSC_INTERN_OVERFLOW)
        return overflow_text;
    return id < NSC_INTERN_MAX ? texts[id] : NULL;
}

uint64_t nsc_intern_overflows(void) {
    return atomic_load_explicit(&overflows, memory_order_relaxed);
}

/* fork(): see intern.h */
void nsc_intern_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void nsc_intern_atfork_parent(void) { pthread_mutex_unlock(&lock); }
void nsc_intern_atfork_child(void) { pthread_mutex_init(&lock, NULL); }

void nsc_intern_free_all(void) {
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load_explicit(&count, memory_order_relaxed);
    for (uint32_t i = 2; i < n; i++) {
        free((void *)(uintptr_t)texts[i]);
        texts[i] = NULL;
    }
    memset(index_ids, 0, sizeof(index_ids));
    text_bytes = 0;
    atomic_store_explicit(&count, 2, memory_order_relaxed);
    atomic_store_explicit(&user_refusal_seen, 0, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
}
