// SPDX-License-Identifier: Apache-2.0
/*
 * bench_run.h - one benchmark configuration (a plugin, a workload, a number
 * of writer threads) run end to end: load the plugin the way NCCL does,
 * drive it, measure, finalize, unload, and read back what it kept.
 */
#ifndef NSC_BENCH_RUN_H
#define NSC_BENCH_RUN_H

#include <stdint.h>

#include "call_mix.h"
#include "latency_hist.h"
#include "replay.h"

struct bench_config {
    const char *plugin;   /* path of the .so */
    int version;          /* 0: newest, else forced */
    const char *mix;      /* synthetic mix name, or NULL */
    const struct nsc_script *script; /* replay, or NULL */
    int threads;
    double seconds;
    double rate;          /* per writer thread, 0 = as fast as possible: */
    int rate_callbacks;   /* 1: `rate` counts callbacks (start+stop+state), 0: events */
    int keep_traces;
    unsigned cold_kib;    /* >0: calls one at a time in NCCL's order with caches
                           * scrubbed before each (call_mix.h); no batches */
};

struct bench_result {
    char plugin_name[64]; /* the table's name field */
    int version;
    /* per callback kind (enum mix_kind) */
    struct lat_hist single[MIX_KINDS];  /* single-call samples, 1/16 ns */
    struct lat_hist batch[MIX_KINDS];   /* per-call means of batches, 1/16 ns */
    double worst_thread_p50_ns[MIX_KINDS]; /* the slowest thread's batch median */
    uint64_t calls[MIX_KINDS];
    /* floor, measured by every writer thread before its run (medians) */
    double floor_tsc_ns, floor_clock_gettime_ns, floor_call_ns;
    double wall_s;
    uint64_t events_offered, events_null;
    /* from ncclscope's own trace, when the plugin wrote one */
    int have_trace;
    uint64_t trace_bytes, trace_records, trace_drop_records, trace_drop_events, trace_files;
    uint64_t trace_damage;
    uint64_t trace_kind[MIX_KINDS]; /* START, STOP, STATE records in the trace */
    uint64_t trace_lost;  /* records lost after the rings: write errors, exit */
    /* from the counting plugin's file ($NCCLSCOPE_COUNT_DIR), when it wrote one */
    int have_counts;
    uint64_t counted[MIX_KINDS];
    /* seconds from the writers' last call to the plugin's unload: how long
     * the plugin needed to drain what it still held (finalize, exit) */
    double drain_s;
    long rss_growth_kib;
    double background_cores; /* CPU used by threads other than the writers */
};

/* Runs one configuration. Returns 0, or -1 with err. */
int bench_run(const struct bench_config *cfg, struct bench_result *res, char *err, size_t errlen);

/* Reads back what the plugin left in dir: ncclscope's traces (records by
 * kind, drop counters, damage) and the counting plugin's counts; removes
 * them and dir unless keep. */
void bench_read_traces(const char *dir, struct bench_result *res, int keep);

/* Callbacks the harness made (every kind). */
uint64_t bench_calls(const struct bench_result *res);

/* Callbacks the plugin kept, as far as the harness can observe: ncclscope's
 * records in its trace (less its drop counters), the counting plugin's
 * counts, else the calls made on non-NULL handles. */
uint64_t bench_calls_kept(const struct bench_result *res);

/* Events kept: started with a non-NULL handle, less the drop counters and
 * missing START records of a trace, or the counting plugin's starts. */
uint64_t bench_events_kept(const struct bench_result *res);

/* 1 when nothing observable was lost: no NULL handle, no drop counter, no
 * damage, and every call is in the trace or the counts. */
int bench_zero_drop(const struct bench_result *res);

/* 1 when the run kept everything *and* the plugin was keeping up: what it
 * still held when the writers stopped drained within max(50 ms, 5 % of
 * the run). A plugin that fell behind by a fraction f of the offered rate
 * needs about f x the run's length to drain, so a short run that keeps
 * everything only thanks to its buffers is not counted as sustained. */
int bench_sustained(const struct bench_result *res);

#endif /* NSC_BENCH_RUN_H */
