// SPDX-License-Identifier: Apache-2.0
/*
 * floor_plugin.c - the reference "floor" profiler plugin: what keeping an
 * event costs at the very least. Each callback reads the TSC and writes one
 * 64-byte record (kind, type, timestamp, handle) into the calling thread's
 * private ring of 1024 records, which nothing ever reads; a START returns a
 * counter as its handle. No drainer, no file, no checks, no descriptor
 * fields beyond the type.
 *
 * NCCLSCOPE_FLOOR=tsc: the timestamp alone (kept in a thread-local word, no
 * record), to split the floor into its two parts.
 *
 * It sits beside the empty plugin in the tables of docs/benchmarks.md:
 * empty -> floor is the price of one timestamp and one record line per
 * callback, floor -> ncclscope is what ncclscope adds to that (validation,
 * descriptor copy, strings, a reader on another core).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "nccl_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define FLOOR_RECORDS 1024

struct floor_rec {
    uint8_t kind;
    uint8_t type;
    uint16_t pad;
    uint32_t aux;
    uint64_t ticks;
    uint64_t handle;
    uint64_t rest[5];
};
_Static_assert(sizeof(struct floor_rec) == 64, "one line per record");

struct floor_thread {
    uint64_t pos, next_handle;
    struct floor_rec *recs;
    struct floor_thread *all_next; /* every thread's state, freed when the plugin unloads */
};

static struct floor_thread *_Atomic all_threads;

static __thread struct floor_thread *tls __attribute__((tls_model("initial-exec")));
static __thread uint64_t last_ticks __attribute__((tls_model("initial-exec")));
static char context_token;
/* NCCLSCOPE_FLOOR=tsc; set at every init (comms may init on several
 * threads at once, hence the atomic: a relaxed load is a plain one) */
static _Atomic int tsc_only;

static inline uint64_t ticks(void) {
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    return 0;
#endif
}

/* The thread's ring, made at its first callback (the slow path: a list
 * push) and freed when the plugin is unloaded, as a real plugin's would
 * be. NULL when out of memory: the callback then records nothing. */
static struct floor_thread *thread_state(void) {
    struct floor_thread *t = tls;
    if (__builtin_expect(t != NULL, 1))
        return t;
    t = calloc(1, sizeof(*t));
    if (t && posix_memalign((void **)&t->recs, 64, FLOOR_RECORDS * sizeof(struct floor_rec)) != 0) {
        free(t);
        t = NULL;
    }
    if (t) { /* RELEASE: the unload's ACQUIRE exchange sees a whole entry */
        t->all_next = atomic_load_explicit(&all_threads, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&all_threads, &t->all_next, t,
                                                      memory_order_release, memory_order_relaxed))
            ;
    }
    tls = t;
    return t;
}

/* dlclose (or exit): every thread's ring. The callers are done by then. */
__attribute__((destructor)) static void free_threads(void) {
    struct floor_thread *t = atomic_exchange_explicit(&all_threads, NULL, memory_order_acquire);
    while (t) {
        struct floor_thread *n = t->all_next;
        free(t->recs);
        free(t);
        t = n;
    }
}

static inline void put(struct floor_thread *t, uint8_t kind, uint8_t type, uint32_t aux,
                       uint64_t ts, uint64_t handle) {
    struct floor_rec *r = &t->recs[t->pos++ & (FLOOR_RECORDS - 1)];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->type = type;
    r->aux = aux;
    r->ticks = ts;
    r->handle = handle;
}

static int mask_from_env(void) {
    uint32_t m = NSC_MASK_ALL;
    const char *s = getenv("NCCLSCOPE_EVENTS");
    char err[128];
    if (s && *s && nsc_mask_parse(s, &m, err, sizeof(err)) != 0)
        m = NSC_MASK_ALL;
    return (int)m;
}

static nsc_abi_result init_any(void **ctx, int *mask) {
    const char *mode = getenv("NCCLSCOPE_FLOOR");
    atomic_store_explicit(&tsc_only, mode && strcmp(mode, "tsc") == 0, memory_order_relaxed);
    *ctx = &context_token;
    *mask = mask_from_env();
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result init_v1(void **ctx, int *mask) { return init_any(ctx, mask); }
static nsc_abi_result init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                              int nranks, int rank, nsc_abi_logger logfn) {
    (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
    return init_any(ctx, mask);
}
static nsc_abi_result init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nsc_abi_logger logfn) {
    (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
    return init_any(ctx, mask);
}
/* The type is read from the v5+ layout's first member; older layouts keep
 * it there too (an 8-bit field in v1..v4, whose low byte is what we keep). */
static nsc_abi_result start_event(void *ctx, void **handle, void *descr) {
    (void)ctx;
    uint64_t ts = ticks();
    if (atomic_load_explicit(&tsc_only, memory_order_relaxed)) {
        last_ticks = ts;
        *handle = &context_token;
        return NSC_ABI_SUCCESS;
    }
    struct floor_thread *t = thread_state();
    if (!t) {
        *handle = &context_token;
        return NSC_ABI_SUCCESS;
    }
    uint64_t h = ++t->next_handle;
    uint8_t type;
    memcpy(&type, descr, 1);
    put(t, 1, type, 0, ts, h);
    *handle = (void *)(uintptr_t)h;
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result stop_event(void *handle) {
    uint64_t ts = ticks();
    if (atomic_load_explicit(&tsc_only, memory_order_relaxed)) {
        last_ticks = ts;
        return NSC_ABI_SUCCESS;
    }
    struct floor_thread *t = thread_state();
    if (t)
        put(t, 2, 0, 0, ts, (uint64_t)(uintptr_t)handle);
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result record_state(void *handle, int state, void *args) {
    (void)args;
    uint64_t ts = ticks();
    if (atomic_load_explicit(&tsc_only, memory_order_relaxed)) {
        last_ticks = ts;
        return NSC_ABI_SUCCESS;
    }
    struct floor_thread *t = thread_state();
    if (t)
        put(t, 3, 0, (uint32_t)state, ts, (uint64_t)(uintptr_t)handle);
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result finalize(void *ctx) {
    (void)ctx;
    return NSC_ABI_SUCCESS;
}

EXPORT const nsc_abi_profiler_v5 ncclProfiler_v7 = {"floor", init_v5, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v6 = {"floor", init_v5, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v5 = {"floor", init_v5, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v4 ncclProfiler_v4 = {"floor", init_v4, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v3 = {"floor", init_v1, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v2 = {"floor", init_v1, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v1 = {"floor", init_v1, start_event, stop_event,
                                                    record_state, finalize};
