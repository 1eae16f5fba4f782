// SPDX-License-Identifier: Apache-2.0
/*
 * thread_state.h - per-writer-thread state: its ring, its block of event
 * ids, its string cache and its drop counters.
 *
 * Contract:
 *   - nsc_thread_get() returns the calling thread's state; the first call on
 *     a thread attaches one (slow path: takes the registry mutex, may
 *     allocate a page table); later calls are one TLS load and one test;
 *   - a state is written only by the thread it is attached to; the flusher
 *     reads rings (ring.h contract) and the counters (relaxed loads: they
 *     are statistics);
 *   - every owner's first record is a THREAD record (tid, name) written into
 *     the ring by the owner itself, so the trace attributes the records that
 *     follow to it without the flusher having to see the hand-over;
 *   - when a thread exits, its state is marked dead and the next thread to
 *     attach adopts it at once, whatever its ring still holds (the dead
 *     owner will never write again: the exit's RELEASE of `dead` pairs with
 *     the adopter's ACQUIRE), so threads that come and go reuse a few states;
 *   - more than NCCLSCOPE_MAX_THREADS live threads share a sentinel whose
 *     ring never records: their records are dropped and counted; such a
 *     thread attaches for real as soon as another thread has exited (the
 *     registry generation tells it to retry);
 *   - threads of a forked child get the sentinel for good;
 *   - states live until the library is unloaded; at most max_threads exist.
 */
#ifndef NSC_THREAD_STATE_H
#define NSC_THREAD_STATE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "hot_line.h"
#include "intern.h"
#include "ring.h"
#include "slab.h"

#define NSC_MAX_THREADS_HARD 4096
#define NSC_ID_BLOCK 4096

struct nsc_thread {
    /* three cache lines: producer (with the id block, ring.owner[]),
     * read-only, consumer */
    struct nsc_ring ring;

    /* producer-private and producer-written */
    alignas(NSC_CACHELINE) _Atomic uint64_t drops_ring;   /* records not written: ring full */
    _Atomic uint64_t drops_events; /* events whose START was not written */
    uint32_t index;
    int shared;                    /* the sentinel: counters shared by many threads */
    struct nsc_intern_cache strings;

    /* the owner's free slab slots (slab.h): flushed when it exits */
    alignas(NSC_CACHELINE) struct nsc_slab_cache slab_cache;

    /* owner description: written at attach, under the registry mutex */
    alignas(NSC_CACHELINE) _Atomic int dead;
    _Atomic uint32_t tid;
    char name[16];
};

extern __thread struct nsc_thread *nsc_tls_thread __attribute__((tls_model("initial-exec")));

struct nsc_thread *nsc_thread_attach(void);

/* The sentinel (see the contract). Its address is a link-time constant, so
 * telling it apart costs no load of its own. */
extern struct nsc_thread nsc_thread_sentinel_state __attribute__((visibility("hidden")));

/* The calling thread's slab cache, or NULL when it has no state of its own
 * (the watchdog, threads on the sentinel). Never attaches. */
static inline struct nsc_slab_cache *nsc_thread_slab_cache(void) {
    struct nsc_thread *t = nsc_tls_thread;
    return t && t != &nsc_thread_sentinel_state ? &t->slab_cache : 0;
}

static inline struct nsc_thread *nsc_thread_get(void) {
    struct nsc_thread *t = nsc_tls_thread;
    if (__builtin_expect(t != 0 && t != &nsc_thread_sentinel_state, 1))
        return t;
    return nsc_thread_attach(); /* first call, or on the sentinel: maybe retry */
}

uint64_t nsc_thread_refill_ids(struct nsc_thread *t);

/* Ids below this have been handed out (blocks are taken ahead of use); on
 * the callbacks' hot line (hot_line.h). */
#define nsc_next_id (nsc_hot.next_id)

/* A fresh event id, never 0, unique in the process. */
/* The block [id_next, id_end) lives in the ring's producer line. */
#define nsc_thread_id_next(t) ((t)->ring.owner[0])
#define nsc_thread_id_end(t) ((t)->ring.owner[1])

static inline uint64_t nsc_thread_next_id(struct nsc_thread *t) {
    if (__builtin_expect(nsc_thread_id_next(t) < nsc_thread_id_end(t), 1))
        return nsc_thread_id_next(t)++;
    return nsc_thread_refill_ids(t);
}

/* Counts n records dropped because the ring was full. */
static inline void nsc_thread_count_drop(struct nsc_thread *t, unsigned n, int event_lost) {
    /* Single writer per counter except on the sentinel: a relaxed
     * load+store is exact for the owner and costs no locked instruction. */
    if (__builtin_expect(t->shared, 0)) {
        atomic_fetch_add_explicit(&t->drops_ring, n, memory_order_relaxed);
        if (event_lost)
            atomic_fetch_add_explicit(&t->drops_events, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&t->drops_ring,
                          atomic_load_explicit(&t->drops_ring, memory_order_relaxed) + n,
                          memory_order_relaxed);
    if (event_lost)
        atomic_store_explicit(&t->drops_events,
                              atomic_load_explicit(&t->drops_events, memory_order_relaxed) + 1,
                              memory_order_relaxed);
}

/* Registry, for the flusher: number of states ever created, and state i.
 * ACQUIRE on the count pairs with the RELEASE that published state i. */
uint32_t nsc_thread_count(void);
struct nsc_thread *nsc_thread_at(uint32_t i);
/* The sentinel (drops of threads without a state). */
struct nsc_thread *nsc_thread_sentinel(void);

/* Rotation (segments.h): the latest owner of state i (tid, name; it may
 * have exited), read under the registry mutex. Returns 0 for an unknown
 * state. */
int nsc_thread_describe(uint32_t i, uint32_t *tid, char name[16]);

/* Flusher, once in a while: dead threads' drained rings give their last
 * page back to the pool (registry mutex; slow path). */
void nsc_thread_reclaim_idle(void);

/* Session control (slow paths). */
void nsc_thread_configure(uint32_t max_threads, uint64_t ring_records);
void nsc_thread_disable_after_fork(void);
/* Library unload: deletes the thread-exit key; frees every state when
 * free_memory is set (no callback can run any more). */
void nsc_thread_free_all(int free_memory);

#endif /* NSC_THREAD_STATE_H */
