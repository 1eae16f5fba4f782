/* intern.c - the process-wide string table (slow path). */
#include "intern.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *texts[NSC_INTERN_MAX] = {NULL, "?"};
/* Id 0 = NULL, id 1 = overflow marker; real strings start at 2. */
static _Atomic uint32_t count = 2;
static _Atomic uint64_t overflows;
static const char overflow_text[] = "?";

uint16_t nsc_intern_slow(struct nsc_intern_cache *c, const char *s) {
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load_explicit(&count, memory_order_relaxed); /* writers hold the lock */
    uint32_t id = 0;
    for (uint32_t i = 2; i < n; i++)
        if (strncmp(texts[i], s, 255) == 0) {
            id = i;
            break;
        }
    if (id == 0) {
        if (n < NSC_INTERN_MAX) {
            texts[n] = strndup(s, 255);
            if (texts[n]) {
                id = n;
                /* RELEASE: the text is complete before the flusher, which
                 * loads `count` with ACQUIRE, can see the new id. */
                atomic_store_explicit(&count, n + 1, memory_order_release);
            }
        }
        if (id == 0) {
            atomic_fetch_add_explicit(&overflows, 1, memory_order_relaxed);
            id = NSC_INTERN_OVERFLOW;
        }
    }
    pthread_mutex_unlock(&lock);
    unsigned slot = nsc_intern_slot(s);
    c->ptr[slot] = s;
    c->id[slot] = (uint16_t)id;
    return (uint16_t)id;
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

void nsc_intern_free_all(void) {
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load_explicit(&count, memory_order_relaxed);
    for (uint32_t i = 2; i < n; i++) {
        free((void *)(uintptr_t)texts[i]);
        texts[i] = NULL;
    }
    atomic_store_explicit(&count, 2, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
}
