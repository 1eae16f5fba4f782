// SPDX-License-Identifier: Apache-2.0
/*
 * nccl_pattern.h - `ncclscope-bench --nccl-pattern`: a plugin driven by the
 * threads NCCL drives it with, at NCCL's pace, with the caches cold.
 *
 * N application threads (one communicator each) and one proxy thread. An
 * application thread makes an operation's GroupApi, CollApi, KernelLaunch,
 * Group and Coll calls, then hands the Coll's handle to the proxy thread,
 * which some microseconds later makes the KernelCh and ProxyOp/ProxyStep
 * calls with that handle as parent, in three parts
 * (mix_build_nccl_pattern). Operations are paced (op_rate per application
 * thread, sleeps in between), and before each part the thread writes
 * evict_kib of its own memory: NCCL's work between two callbacks, which
 * pushes the plugin's lines out of the near caches.
 *
 * Each thread times only its plugin calls (fenced TSC reads around each
 * call, their own cost removed) and sums them per operation: the result is
 * the median, over operations, of what one operation costs the application
 * thread and the proxy thread, in TSC ticks.
 */
#ifndef NSC_NCCL_PATTERN_H
#define NSC_NCCL_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "bench_run.h"

enum pattern_side { PATTERN_APP, PATTERN_PROXY, PATTERN_SIDES };

struct pattern_config {
    const char *plugin;  /* path of the .so */
    int version;         /* 0: newest, else forced */
    int app_threads;
    double seconds;
    double op_rate;      /* operations per second per application thread */
    unsigned evict_kib;  /* written by a thread before each of its parts */
    int proxy_ops;       /* 1: a ProxyOp of 2 ProxySteps per channel; 0: KernelCh only */
    int per_call;        /* also the median of every call of the operation */
    int keep_traces;
};

struct pattern_result {
    char plugin_name[64];
    int version;
    uint64_t ops[PATTERN_SIDES];      /* operations timed (after the first few) */
    double p50[PATTERN_SIDES];        /* TSC ticks per operation, median */
    double p90[PATTERN_SIDES];
    double calls_per_op[PATTERN_SIDES];
    double handoff_p50_us;            /* application's last call to proxy's first */
    double op_rate;                   /* operations per second reached, all threads */
    double ns_per_tick;
    double wall_s;
    /* per_call: each call's median ticks, in the operation's order */
    int nsteps;
    double step_p50[MIX_MAX_STEPS];
    char step_name[MIX_MAX_STEPS][32];
    /* calls by kind, events offered, what the plugin kept (bench_run.h) */
    struct bench_result kept;
};

/* Runs one plugin. Returns 0, or -1 with err. */
int pattern_run(const struct pattern_config *cfg, struct pattern_result *res, char *err,
                size_t errlen);

#endif /* NSC_NCCL_PATTERN_H */
