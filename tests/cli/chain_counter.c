// SPDX-License-Identifier: Apache-2.0
/*
 * chain_counter.c - a small counting profiler plugin for the chaining test
 * (test_chain.py): what a plugin chained behind ncclscope receives.
 *
 * Each event gets its own handle, a slot of a static array holding the
 * event's type and whether it stopped, so the plugin can tell a handle it
 * issued from anything else: stop and state with a handle it did not
 * issue, a second stop, and a parentObj that is not one of its handles are
 * counted as errors. Counts per type: starts, stops, states; parents seen.
 *
 * CHAIN_COUNTER_MASK (decimal) is the mask it asks for (default: all);
 * CHAIN_COUNTER_FAIL (decimal), when set, is what its init returns instead.
 * At the last finalize it writes $CHAIN_COUNTER_OUT (JSON). Built twice:
 * with every ncclProfiler_v1..v7, and with -DONLY_V4 (only v4), to check
 * the version fallback and descriptor translation.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "nccl_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_EVENTS (1u << 22)

struct ev {
    _Atomic int type; /* type index + 1 */
    _Atomic int stopped;
};
static struct ev evs[MAX_EVENTS];
static _Atomic uint32_t nevents;
static _Atomic uint64_t starts[NSC_ET_COUNT], stops[NSC_ET_COUNT], states[NSC_ET_COUNT];
static _Atomic uint64_t bad_handle, double_stop, bad_parent, with_parent, null_parent, full;
static _Atomic int live, inits, finalizes, version;
static char ctx_token;

static struct ev *ev_of(const void *h) {
    const struct ev *e = h;
    if (e < evs || e >= evs + MAX_EVENTS || ((const char *)e - (const char *)evs) % sizeof(*e))
        return NULL;
    return (struct ev *)e;
}

static nsc_abi_result start(uint64_t type, void *parent, void **handle) {
    *handle = NULL;
    int t = nsc_etype_from_bit(type);
    if (t < 0)
        return NSC_ABI_SUCCESS;
    atomic_fetch_add(&starts[t], 1);
    if (parent) {
        if (ev_of(parent) && atomic_load(&ev_of(parent)->type))
            atomic_fetch_add(&with_parent, 1);
        else
            atomic_fetch_add(&bad_parent, 1);
    } else {
        atomic_fetch_add(&null_parent, 1);
    }
    uint32_t i = atomic_fetch_add(&nevents, 1);
    if (i >= MAX_EVENTS) {
        atomic_fetch_add(&full, 1);
        return NSC_ABI_SUCCESS;
    }
    atomic_store(&evs[i].type, t + 1);
    *handle = &evs[i];
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result start_u8(void *ctx, void **handle, void *d) {
    (void)ctx;
    const nsc_abi_descr_v4 *o = d; /* v1..v4: type and parentObj at the same offsets */
    return start(o->type, o->parentObj, handle);
}

__attribute__((unused)) static nsc_abi_result start_u64(void *ctx, void **handle, void *d) {
    (void)ctx;
    const nsc_abi_descr_v5 *o = d;
    return start(o->type, o->parentObj, handle);
}

static nsc_abi_result stop(void *handle) {
    struct ev *e = ev_of(handle);
    if (!e || !atomic_load(&e->type)) {
        atomic_fetch_add(&bad_handle, 1);
        return NSC_ABI_SUCCESS;
    }
    if (atomic_exchange(&e->stopped, 1))
        atomic_fetch_add(&double_stop, 1);
    atomic_fetch_add(&stops[atomic_load(&e->type) - 1], 1);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result state(void *handle, int s, void *args) {
    (void)s;
    (void)args;
    struct ev *e = ev_of(handle);
    if (!e || !atomic_load(&e->type)) {
        atomic_fetch_add(&bad_handle, 1);
        return NSC_ABI_SUCCESS;
    }
    atomic_fetch_add(&states[atomic_load(&e->type) - 1], 1);
    return NSC_ABI_SUCCESS;
}

static void put(FILE *f, const char *name, _Atomic uint64_t *v) {
    fprintf(f, "\"%s\": {", name);
    int first = 1;
    for (int i = 0; i < NSC_ET_COUNT; i++)
        if (atomic_load(&v[i])) {
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", nsc_etype_name((unsigned)i),
                    (unsigned long long)atomic_load(&v[i]));
            first = 0;
        }
    fprintf(f, "}, ");
}

static void write_out(void) {
    const char *path = getenv("CHAIN_COUNTER_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "{");
    put(f, "start", starts);
    put(f, "stop", stops);
    put(f, "state", states);
    fprintf(f, "\"version\": %d, \"inits\": %d, \"finalizes\": %d, \"bad_handle\": %llu, "
               "\"double_stop\": %llu, \"bad_parent\": %llu, \"with_parent\": %llu, "
               "\"null_parent\": %llu, \"full\": %llu}\n",
            atomic_load(&version), atomic_load(&inits), atomic_load(&finalizes),
            (unsigned long long)atomic_load(&bad_handle), (unsigned long long)atomic_load(&double_stop),
            (unsigned long long)atomic_load(&bad_parent), (unsigned long long)atomic_load(&with_parent),
            (unsigned long long)atomic_load(&null_parent), (unsigned long long)atomic_load(&full));
    fclose(f);
}

static nsc_abi_result init_any(int v, void **ctx, int *mask) {
    const char *fail = getenv("CHAIN_COUNTER_FAIL"); /* init returns this result */
    if (fail && *fail)
        return (nsc_abi_result)atoi(fail);
    const char *m = getenv("CHAIN_COUNTER_MASK");
    *mask = m && *m ? atoi(m) : (int)NSC_MASK_ALL;
    *ctx = &ctx_token;
    atomic_store(&version, v);
    atomic_fetch_add(&inits, 1);
    atomic_fetch_add(&live, 1);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result finalize(void *ctx) {
    if (ctx != &ctx_token)
        atomic_fetch_add(&bad_handle, 1);
    atomic_fetch_add(&finalizes, 1);
    if (atomic_fetch_sub(&live, 1) == 1)
        write_out();
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                              int nranks, int rank, nsc_abi_logger logfn) {
    (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
    return init_any(4, ctx, mask);
}
EXPORT const nsc_abi_profiler_v4 ncclProfiler_v4 = {"chain-counter", init_v4, start_u8, stop,
                                                    state, finalize};

#ifndef ONLY_V4
static nsc_abi_result init_v7(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nsc_abi_logger logfn) {
    (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
    return init_any(7, ctx, mask);
}
static nsc_abi_result init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nsc_abi_logger logfn) {
    (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
    return init_any(5, ctx, mask);
}
static nsc_abi_result init_v1(void **ctx, int *mask) { return init_any(1, ctx, mask); }
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v7 = {"chain-counter", init_v7, start_u64, stop,
                                                    state, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v5 = {"chain-counter", init_v5, start_u64, stop,
                                                    state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v1 = {"chain-counter", init_v1, start_u8, stop,
                                                    state, finalize};
#endif
