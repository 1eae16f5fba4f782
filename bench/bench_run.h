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
    double rate;          /* events/s per thread, 0 = as fast as possible */
    int keep_traces;
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
    long rss_growth_kib;
    double background_cores; /* CPU used by threads other than the writers */
};

/* Runs one configuration. Returns 0, or -1 with err. */
int bench_run(const struct bench_config *cfg, struct bench_result *res, char *err, size_t errlen);

#endif /* NSC_BENCH_RUN_H */
