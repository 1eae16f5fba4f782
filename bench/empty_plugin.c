// SPDX-License-Identifier: Apache-2.0
/*
 * empty_plugin.c - the reference "empty" profiler plugin: it asks NCCL for
 * the same events ncclscope would (NCCLSCOPE_EVENTS, same syntax, default:
 * every type), hands back a non-NULL handle for each so NCCL keeps
 * generating children and states, and records nothing.
 *
 * It is what every benchmark table compares ncclscope against: the cost of
 * being a profiler at all (NCCL's own bookkeeping, the indirect calls),
 * without any recording. Exports ncclProfiler_v1 .. v7 like ncclscope so a
 * forced version compares like with like.
 */
#include <stdint.h>
#include <stdlib.h>

#include "event_types.h"
#include "nccl_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* Any non-NULL pointer that is not dereferenced: NCCL only tests it. */
static char handle_token;
static char context_token;

static int mask_from_env(void) {
    uint32_t m = NSC_MASK_ALL;
    const char *s = getenv("NCCLSCOPE_EVENTS");
    char err[128];
    if (s && *s && nsc_mask_parse(s, &m, err, sizeof(err)) != 0)
        m = NSC_MASK_ALL;
    return (int)m;
}

static nsc_abi_result init_any(void **ctx, int *mask) {
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
static nsc_abi_result start_event(void *ctx, void **handle, void *descr) {
    (void)ctx, (void)descr;
    *handle = &handle_token;
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result stop_event(void *handle) {
    (void)handle;
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result record_state(void *handle, int state, void *args) {
    (void)handle, (void)state, (void)args;
    return NSC_ABI_SUCCESS;
}
static nsc_abi_result finalize(void *ctx) {
    (void)ctx;
    return NSC_ABI_SUCCESS;
}

EXPORT const nsc_abi_profiler_v5 ncclProfiler_v7 = {"empty", init_v5, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v6 = {"empty", init_v5, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v5 ncclProfiler_v5 = {"empty", init_v5, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v4 ncclProfiler_v4 = {"empty", init_v4, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v3 = {"empty", init_v1, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v2 = {"empty", init_v1, start_event, stop_event,
                                                    record_state, finalize};
EXPORT const nsc_abi_profiler_v1 ncclProfiler_v1 = {"empty", init_v1, start_event, stop_event,
                                                    record_state, finalize};
