// SPDX-License-Identifier: Apache-2.0
/* thread_state.c - attaching writer threads (slow path). */
#include "thread_state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "signal_stack.h"

_Static_assert(NSC_MAX_THREADS_HARD == 4096, "signal_stack.c keeps a stack per state, 4096");

__thread struct nsc_thread *nsc_tls_thread __attribute__((tls_model("initial-exec")));
/* Registry generation this thread saw when it was put on the sentinel, and
 * whether it is exiting (then it stays there). */
static __thread uint32_t tls_gen_seen __attribute__((tls_model("initial-exec")));
static __thread int tls_exiting __attribute__((tls_model("initial-exec")));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsc_thread *threads[NSC_MAX_THREADS_HARD];
static _Atomic uint32_t nthreads;
static uint32_t max_threads = 256;
static uint64_t ring_records = 1u << 20;
static int disabled;
/* Bumped when a state becomes free to adopt: sentinel threads retry. */
static _Atomic uint32_t registry_gen;
/* Ids are taken in blocks from here, one atomic add per NSC_ID_BLOCK events. */
#define next_id nsc_next_id

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

/* The sentinel's ring has no page and may take none: reserve always fails
 * without writing anything, so any number of threads may share it. */
struct nsc_thread nsc_thread_sentinel_state = {
    .ring = {.head = 0, .limit = 0, .max_pages = 0},
    .shared = 1,
    .index = UINT32_MAX,
};

static void on_thread_exit(void *p) {
    struct nsc_thread *t = p;
    /* Any callback this thread makes from a later destructor goes to the
     * sentinel, so it can never write into a ring another thread adopted. */
    tls_exiting = 1;
    nsc_tls_thread = &nsc_thread_sentinel_state;
    /* its signal stack back before another thread can adopt the state and
     * be given the same one (signal_stack.h) */
    nsc_sigstack_exit();
    /* Its free slab slots back to the shared lists (slab.h): the adopter
     * starts with an empty cache, and none stay parked meanwhile. */
    nsc_slab_cache_flush(&t->slab_cache);
    /* RELEASE: the ring's last head store happens before an adopter's
     * ACQUIRE of dead; the adopter continues from that head. */
    atomic_store_explicit(&t->dead, 1, memory_order_release);
    atomic_fetch_add_explicit(&registry_gen, 1, memory_order_release);
}

static void make_key(void) { key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0; }

void nsc_thread_configure(uint32_t max, uint64_t records) {
    pthread_mutex_lock(&lock);
    max_threads = max < NSC_MAX_THREADS_HARD ? max : NSC_MAX_THREADS_HARD;
    /* Rings made from now on take the new cap; existing ones keep theirs
     * (their page tables are sized for it). */
    ring_records = records;
    pthread_mutex_unlock(&lock);
}

void nsc_thread_disable_after_fork(void) {
    /* Runs in the child right after fork(): only the forking thread exists,
     * and nothing drains rings here. Record nothing from now on. */
    disabled = 1;
    nsc_tls_thread = &nsc_thread_sentinel_state;
}

static struct nsc_thread *create(void) {
    struct nsc_thread *t = NULL;
    if (posix_memalign((void **)&t, NSC_CACHELINE, sizeof(*t)) != 0)
        return NULL;
    memset(t, 0, sizeof(*t));
    if (ring_create(&t->ring, ring_records) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

/* The owner's first record: who writes what follows. */
static void write_thread_record(struct nsc_thread *t) {
    uint64_t pos = ring_reserve(&t->ring, 1);
    if (pos == UINT64_MAX) {
        nsc_thread_count_drop(t, 1, 0);
        return;
    }
    struct nsc_rec *r = ring_wslot(&t->ring, pos);
    memset(r, 0, sizeof(*r));
    r->h.kind = NSC_REC_THREAD;
    r->h.aux = atomic_load_explicit(&t->tid, memory_order_relaxed);
    r->h.ticks = nsc_clock_ticks();
    memcpy(r->u.thread_name, t->name, sizeof(t->name));
    ring_commit(&t->ring, pos, 1);
}

struct nsc_thread *nsc_thread_attach(void) {
    struct nsc_thread *cur = nsc_tls_thread;
    if (disabled || tls_exiting) { /* forked child (the mutex may be unusable), or exiting */
        nsc_tls_thread = &nsc_thread_sentinel_state;
        return &nsc_thread_sentinel_state;
    }
    uint32_t gen = atomic_load_explicit(&registry_gen, memory_order_acquire);
    if (cur == &nsc_thread_sentinel_state && gen == tls_gen_seen)
        return &nsc_thread_sentinel_state; /* nothing freed since the last try */
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&lock);
    struct nsc_thread *t = NULL;
    uint32_t n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    for (uint32_t i = 0; i < n && !t; i++)
        /* ACQUIRE: pairs with on_thread_exit's RELEASE; the dead owner's
         * last head is visible, and we continue after it. */
        if (atomic_load_explicit(&threads[i]->dead, memory_order_acquire))
            t = threads[i];
    if (!t && n < max_threads && (t = create()) != NULL) {
        t->index = n;
        threads[n] = t;
        /* RELEASE: the flusher sees a complete state at index n. */
        atomic_store_explicit(&nthreads, n + 1, memory_order_release);
    }
    if (t) {
        atomic_store_explicit(&t->tid, (uint32_t)syscall(SYS_gettid), memory_order_relaxed);
        memset(t->name, 0, sizeof(t->name));
        prctl(PR_GET_NAME, t->name, 0, 0, 0);
        memset(&t->strings, 0, sizeof(t->strings));
        atomic_store_explicit(&t->dead, 0, memory_order_relaxed);
        write_thread_record(t);
    }
    pthread_mutex_unlock(&lock);
    if (!t) {
        tls_gen_seen = gen;
        t = &nsc_thread_sentinel_state;
    } else {
        if (key_ok)
            pthread_setspecific(exit_key, t);
        nsc_sigstack_give(t->index); /* a stack for the crash handler, if it has none */
    }
    nsc_tls_thread = t;
    return t;
}

void nsc_thread_reclaim_idle(void) {
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_thread *t = threads[i];
        /* Dead and drained: no producer, and the mutex keeps adopters out. */
        if (atomic_load_explicit(&t->dead, memory_order_acquire) && ring_backlog(&t->ring) == 0 &&
            t->ring.limit > (atomic_load_explicit(&t->ring.tail, memory_order_relaxed) &
                             ~(uint64_t)(NSC_PAGE_RECORDS - 1)))
            ring_release_idle(&t->ring);
    }
    pthread_mutex_unlock(&lock);
}

uint64_t nsc_thread_refill_ids(struct nsc_thread *t) {
    if (t->shared)
        return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    uint64_t base = atomic_fetch_add_explicit(&next_id, NSC_ID_BLOCK, memory_order_relaxed);
    nsc_thread_id_next(t) = base + 1;
    nsc_thread_id_end(t) = base + NSC_ID_BLOCK;
    return base;
}

uint32_t nsc_thread_count(void) { return atomic_load_explicit(&nthreads, memory_order_acquire); }

struct nsc_thread *nsc_thread_at(uint32_t i) { return threads[i]; }

struct nsc_thread *nsc_thread_sentinel(void) { return &nsc_thread_sentinel_state; }

void nsc_thread_free_all(int free_memory) {
    /* Deleting the key first means no thread-exit destructor can run code
     * about to be unmapped. */
    if (key_ok) {
        pthread_key_delete(exit_key);
        key_ok = 0;
    }
    if (!free_memory)
        return;
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        ring_destroy(&threads[i]->ring);
        free(threads[i]);
        threads[i] = NULL;
    }
    atomic_store_explicit(&nthreads, 0, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    page_pool_destroy();
}

int nsc_thread_describe(uint32_t i, uint32_t *tid, char name[16]) {
    pthread_mutex_lock(&lock);
    /* A dead owner too: its last records may still be on their way. */
    int ok = i < atomic_load_explicit(&nthreads, memory_order_relaxed);
    if (ok) {
        *tid = atomic_load_explicit(&threads[i]->tid, memory_order_relaxed);
        memcpy(name, threads[i]->name, 16);
    }
    pthread_mutex_unlock(&lock);
    return ok;
}
