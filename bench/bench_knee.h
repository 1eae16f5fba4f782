// SPDX-License-Identifier: Apache-2.0
/*
 * bench_knee.h - the knee of one (plugin, workload, writer threads): the
 * highest offered callback rate the plugin keeps with zero drops, found by
 * a short search over paced runs of bench_run.
 *
 * A probe paces every writer to a rate (callbacks per second per writer;
 * 0 = flat out) for cfg->seconds and counts when bench_sustained() holds:
 * every callback observable as kept (ncclscope's trace, the counting
 * plugin's counts, else non-NULL handles), no drop counter, and the plugin
 * drained what it still held within max(50 ms, 5 % of the run), so a rate
 * its buffers only absorbed for a short run does not count.
 *
 * Search: one flat-out probe first (if it keeps everything, the writers are
 * the limit and that rate is the answer); then from the start rate,
 * doubling while probes pass (halving while they fail), then bisection on
 * the geometric mean until the bracket is within 10 % or the time budget is
 * spent. The best rate is then confirmed by a run 4 x as long (at least
 * 2 s; 10 % lower after each failure) when the budget holds it. Rates
 * reported are what the writers achieved, per process (all writers
 * together), not the targets.
 */
#ifndef NSC_BENCH_KNEE_H
#define NSC_BENCH_KNEE_H

#include "bench_run.h"

#define KNEE_MAX_PROBES 32

struct knee_probe {
    double target;       /* callbacks/s per writer asked for; 0 = flat out */
    double offered;      /* callbacks/s per process achieved */
    uint64_t calls, calls_kept, events, events_kept;
    double drain_s, bg_cores, seconds;
    int zero_drop, sustained;
    int confirm;         /* the longer confirmation run */
};

struct knee_result {
    char plugin_name[64];
    int version;
    struct knee_probe probe[KNEE_MAX_PROBES];
    int nprobes;
    int best;            /* index of the fastest probe that passed, -1 none */
    double max_zero_drop_rate; /* callbacks/s per process, 0 when none passed */
    double events_per_callback; /* of the workload, to express rates in events */
    double flat_out_rate;      /* callbacks/s per process the first probe offered */
    const char *bound;   /* "writers": nothing lost even flat out; "plugin"; "none" */
    int converged;       /* the bracket closed to 10 % within the budget */
    int confirmed;       /* a run 4 x as long (>= 2 s) kept everything at the rate */
};

/* Searches the knee of cfg (its rate fields are overwritten per probe),
 * spending at most budget_s seconds of probes, starting at start_rate
 * callbacks/s per writer. Returns 0, or -1 with err when a probe could not
 * run (the probes that ran stay in res). */
int bench_knee(const struct bench_config *cfg, double budget_s, double start_rate,
               struct knee_result *res, char *err, size_t errlen);

#endif /* NSC_BENCH_KNEE_H */
