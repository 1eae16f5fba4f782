/* thread_state.c - attaching writer threads (slow path). */
#include "thread_state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread struct nsc_thread *nsc_tls_thread __attribute__((tls_model("initial-exec")));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nsc_thread *threads[NSC_MAX_THREADS_HARD];
static _Atomic uint32_t nthreads;
static uint32_t max_threads = 32;
static uint32_t ring_records = 16384;
static int disabled;
/* Ids are taken in blocks from here, one atomic add per NSC_ID_BLOCK events. */
static _Atomic uint64_t next_id = 1;

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

/* The sentinel's ring has one slot, head 1 and tail 0: always full. */
static struct nsc_rec sentinel_slot;
static struct nsc_thread sentinel = {
    .ring = {.head = 1, .cached_tail = 0, .slots = &sentinel_slot, .mask = 0, .tail = 0},
    .shared = 1,
    .index = UINT32_MAX,
};

static void on_thread_exit(void *p) {
    struct nsc_thread *t = p;
    /* Any callback this thread makes from a later destructor goes to the
     * sentinel, so it can never write into a ring another thread adopted. */
    nsc_tls_thread = &sentinel;
    /* RELEASE: the ring's last head store happens before an adopter sees dead. */
    atomic_store_explicit(&t->dead, 1, memory_order_release);
}

static void make_key(void) { key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0; }

void nsc_thread_configure(uint32_t max, uint32_t records) {
    pthread_mutex_lock(&lock);
    max_threads = max < NSC_MAX_THREADS_HARD ? max : NSC_MAX_THREADS_HARD;
    /* interim, until rings grow from the process budget: a power of two,
     * at most 8 MiB */
    uint32_t p = 64;
    while (p * 2 <= records && p * 2 <= 131072)
        p *= 2;
    ring_records = p;
    pthread_mutex_unlock(&lock);
}

void nsc_thread_disable_after_fork(void) {
    /* Runs in the child right after fork(): only the forking thread exists,
     * and nothing drains rings here. Record nothing from now on. */
    disabled = 1;
    nsc_tls_thread = &sentinel;
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

struct nsc_thread *nsc_thread_attach(void) {
    if (disabled) { /* forked child: the registry's mutex may be unusable */
        nsc_tls_thread = &sentinel;
        return &sentinel;
    }
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&lock);
    struct nsc_thread *t = NULL;
    {
        uint32_t n = atomic_load_explicit(&nthreads, memory_order_relaxed);
        for (uint32_t i = 0; i < n && !t; i++) {
            struct nsc_thread *c = threads[i];
            /* ACQUIRE on dead pairs with on_thread_exit's RELEASE; ACQUIRE
             * on tail pairs with the flusher's ring_consume: an empty ring
             * can change hands. */
            if (atomic_load_explicit(&c->dead, memory_order_acquire) &&
                atomic_load_explicit(&c->ring.tail, memory_order_acquire) ==
                    atomic_load_explicit(&c->ring.head, memory_order_relaxed))
                t = c;
        }
        if (!t && n < max_threads && (t = create()) != NULL) {
            t->index = n;
            threads[n] = t;
            /* RELEASE: the flusher sees a complete state at index n. */
            atomic_store_explicit(&nthreads, n + 1, memory_order_release);
        }
    }
    if (t) {
        t->tid = (uint32_t)syscall(SYS_gettid);
        memset(t->name, 0, sizeof(t->name));
        prctl(PR_GET_NAME, t->name, 0, 0, 0);
        memset(&t->strings, 0, sizeof(t->strings));
        atomic_store_explicit(&t->dead, 0, memory_order_relaxed);
        /* RELEASE: tid and name are visible to the flusher once it reads
         * the new incarnation (it loads head first, then this). */
        atomic_fetch_add_explicit(&t->incarnation, 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    if (!t)
        t = &sentinel;
    else if (key_ok)
        pthread_setspecific(exit_key, t);
    nsc_tls_thread = t;
    return t;
}

uint64_t nsc_thread_refill_ids(struct nsc_thread *t) {
    if (t->shared)
        return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    uint64_t base = atomic_fetch_add_explicit(&next_id, NSC_ID_BLOCK, memory_order_relaxed);
    t->id_next = base + 1;
    t->id_end = base + NSC_ID_BLOCK;
    return base;
}

uint32_t nsc_thread_count(void) { return atomic_load_explicit(&nthreads, memory_order_acquire); }

struct nsc_thread *nsc_thread_at(uint32_t i) { return threads[i]; }

struct nsc_thread *nsc_thread_sentinel(void) { return &sentinel; }

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
}
