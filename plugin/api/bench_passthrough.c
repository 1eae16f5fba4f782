// SPDX-License-Identifier: Apache-2.0
/* bench_passthrough.c - the harness's arms inside the plugin (see
 * bench_passthrough.h). */
#include "bench_passthrough.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "clock.h"
#include "hot_line.h"

#define NCCLSCOPE_NO_LOADER
#include "ncclscope.h"

#define EXPORT __attribute__((visibility("default")))

/* Benchmarks only: with `on` = 1, every startEvent returns a token and
 * does nothing else (what bench/empty_plugin.c does), stop and state of
 * that token return at once; with `on` = 2 each of those calls also takes
 * a timestamp and writes one 64-byte line into a private per-thread ring
 * nothing reads (what bench/floor_plugin.c does: the least that keeping an
 * event costs); with 3 events are recorded as usual but take no slab slot
 * (the watchdog's per-operation state: what that hook costs). Events
 * started before keep their full path. Lets one
 * process measure ncclscope against the empty plugin's and the floor's
 * behaviour in alternating blocks (bench/gpu/nccl_bench.c --ab), where
 * separate processes differ by more than the cost measured. Relaxed: a
 * start that reads the old value is served by the old behaviour. */
char nsc_passthrough_token;
EXPORT int ncclscope_bench_passthrough(int on) {
    if (on < 0 || on > 3)
        return NCCLSCOPE_INVALID;
    atomic_store_explicit(&nsc_hot.passthrough, on, memory_order_relaxed);
    return NCCLSCOPE_OK;
}

/* The floor arm's ring: 1024 lines per thread, allocated at the thread's
 * first floor call (benchmarks only; never freed, like the floor plugin's). */
#define FLOOR_LINES 1024
struct floor_line {
    uint64_t w[8];
};
static __thread struct floor_line *floor_ring __attribute__((tls_model("initial-exec")));
static __thread uint64_t floor_pos __attribute__((tls_model("initial-exec")));

void nsc_bench_floor(uint64_t kind, uint64_t what) {
    uint64_t ticks = nsc_clock_ticks();
    struct floor_line *ring = floor_ring;
    if (__builtin_expect(!ring, 0)) {
        ring = aligned_alloc(64, FLOOR_LINES * sizeof(*ring));
        if (!ring)
            return;
        floor_ring = ring;
    }
    struct floor_line *l = &ring[floor_pos++ & (FLOOR_LINES - 1)];
    l->w[0] = kind;
    l->w[1] = ticks;
    l->w[2] = what;
    for (int i = 3; i < 8; i++)
        l->w[i] = 0;
}

