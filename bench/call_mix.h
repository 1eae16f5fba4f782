// SPDX-License-Identifier: Apache-2.0
/*
 * call_mix.h - synthetic NCCL operations ("mixes") for the benchmark: the
 * events one operation makes on one rank, in NCCL 2.28's call order, with
 * their descriptors and parent links.
 *
 *   allreduce64  64 B all_reduce: GroupApi, CollApi (stopped before its Coll
 *                starts), KernelLaunch, Group, Coll, 2 KernelCh: 7 events,
 *                18 callbacks;
 *   allreduce1m  1 MiB all_reduce: the same with 24 KernelCh: 29 events;
 *   network      the socket path: 2 KernelCh, 4 ProxyOps of 8 ProxySteps,
 *                5 states per step: 43 events, 254 callbacks.
 *
 * An operation runs either in NCCL's order (mix_run_natural, each call timed
 * on its own) or, for a batch of operations, kind by kind (mix_run_grouped:
 * every start, then every state, then every stop, each phase timed as one
 * batch). Both orders are legal for a profiler: a parent always starts
 * before its children.
 */
#ifndef NSC_CALL_MIX_H
#define NSC_CALL_MIX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "latency_hist.h"
#include "nccl_abi.h"

#define MIX_MAX_EVENTS 48
#define MIX_MAX_STEPS 320
#define MIX_BATCH_OPS 32

enum mix_kind { MIX_START, MIX_STOP, MIX_STATE, MIX_KINDS };
extern const char *const mix_kind_name[MIX_KINDS];

struct mix_step {
    uint8_t kind;  /* enum mix_kind */
    uint8_t ev;    /* event index in the operation */
    int16_t state; /* MIX_STATE */
    uint8_t part;  /* mix_build_nccl_pattern: 0 the application thread's, 1..3 the
                    * proxy thread's parts (0 in every other mix) */
    uint64_t arg;  /* MIX_STATE: transSize / pTimer */
};

struct mix_event {
    nsc_abi_descr_v7 d;
    int parent;       /* event index, -1 none */
    int parent_group; /* Coll's Group, -1 none */
};

struct mix_op {
    const char *name;
    struct mix_event ev[MIX_MAX_EVENTS];
    struct mix_step step[MIX_MAX_STEPS];
    int nev, nsteps;
    int per_kind[MIX_KINDS];
};

/* Builds the named mix. Returns 0, or -1 for an unknown name. */
int mix_build(struct mix_op *op, const char *name);

/* The operation of --nccl-pattern (bench/nccl_pattern.h), split by the
 * thread NCCL makes each call on. Part 0, the application thread: allreduce64's
 * API part (GroupApi, CollApi, KernelLaunch, Group, Coll: 12 callbacks). The
 * proxy thread, on 2 channels, each with its KernelCh and one ProxyOp (send
 * on channel 0, receive on 1) of 2 ProxySteps with 3 states each: part 1 the
 * KernelCh and ProxyOp starts (parent: the Coll), part 2 the steps, part 3
 * the ProxyOp stops and each KernelCh's KernelChStop state and stop: 32
 * callbacks. Without proxy_ops, the KernelCh alone (NVLink's path: 6). */
void mix_build_nccl_pattern(struct mix_op *op, int proxy_ops);
#define MIX_PATTERN_PARTS 4

/* What one writer thread drives: a host (the plugin), a context, the mask
 * the plugin asked for, and its histograms. */
struct mix_runner {
    const struct nsc_host *host;
    void *ctx;
    uint32_t mask;
    struct mix_op *op;     /* private copy: descriptors are written per call */
    uint64_t seq;
    int pid;               /* ProxyOp descriptors carry the process id */
    uint64_t fence_overhead;
    /* per kind: single-call samples and batch per-call means, in 1/16 ns */
    struct lat_hist single[MIX_KINDS], batch[MIX_KINDS];
    uint64_t calls[MIX_KINDS];
    uint64_t events_offered, events_null;
    void *h[MIX_BATCH_OPS][MIX_MAX_EVENTS];
    /* --cold: before every call, this many bytes of `scratch` are written
     * (NCCL's own work between two callbacks pushes the plugin's lines out
     * of the near caches), and every timed call is followed by a locked
     * add, as NCCL's next atomic would: it waits for the call's stores to
     * reach the cache, so stores that miss count in the call's time. */
    size_t cold_bytes;
    unsigned char *scratch;
    _Atomic uint64_t sync_word;
};

/* Whether NCCL would make this call: the type is in the plugin's mask, and
 * stop/state only for a non-NULL handle. */
int mix_wanted(const struct mix_runner *r, void *const *hs, const struct mix_step *s);
/* Makes one call of the operation on handles hs (a start writes its handle
 * there and reads its parents' from there), untimed. */
void mix_call(struct mix_runner *r, void **hs, const struct mix_step *s);

/* One operation in NCCL's order, each call timed with fenced reads. */
void mix_run_natural(struct mix_runner *r, double ns_per_tick);
/* MIX_BATCH_OPS operations, each kind as one timed batch. */
void mix_run_grouped(struct mix_runner *r, double ns_per_tick);

#endif /* NSC_CALL_MIX_H */
