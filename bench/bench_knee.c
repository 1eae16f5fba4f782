// SPDX-License-Identifier: Apache-2.0
/* bench_knee.c - the search for the highest rate kept with zero drops. */
#include "bench_knee.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cycle_timer.h"

#define KNEE_MIN_RATE 1000.0 /* callbacks/s per writer: below this, "none" */
#define KNEE_TOLERANCE 1.10  /* the bracket is closed when hi/lo is within this */
#define KNEE_CONFIRM 4.0     /* the confirmation run is this many probes long */

/* Runs one probe at `target` callbacks/s per writer and appends it to res.
 * Returns the probe, or NULL with err. */
static struct knee_probe *probe(const struct bench_config *base, double target,
                                struct knee_result *res, char *err, size_t errlen) {
    if (res->nprobes >= KNEE_MAX_PROBES) {
        snprintf(err, errlen, "too many probes");
        return NULL;
    }
    struct bench_result *r = malloc(sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    struct bench_config cfg = *base;
    cfg.rate = target;
    cfg.rate_callbacks = 1;
    if (bench_run(&cfg, r, err, errlen) != 0) {
        free(r);
        return NULL;
    }
    struct knee_probe *p = &res->probe[res->nprobes++];
    memset(p, 0, sizeof(*p));
    snprintf(res->plugin_name, sizeof(res->plugin_name), "%s", r->plugin_name);
    res->version = r->version;
    p->target = target;
    p->seconds = cfg.seconds;
    p->calls = bench_calls(r);
    p->calls_kept = bench_calls_kept(r);
    p->events = r->events_offered;
    p->events_kept = bench_events_kept(r);
    p->offered = r->wall_s > 0 ? (double)p->calls / r->wall_s : 0;
    p->drain_s = r->drain_s;
    p->bg_cores = r->background_cores;
    p->zero_drop = bench_zero_drop(r);
    p->sustained = bench_sustained(r);
    if (p->calls)
        res->events_per_callback = (double)p->events / (double)p->calls;
    free(r);
    return p;
}

static double now_s(void) { return (double)cycle_mono_ns() / 1e9; }

int bench_knee(const struct bench_config *cfg, double budget_s, double start_rate,
               struct knee_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof(*res));
    res->best = -1;
    res->bound = "none";
    double t0 = now_s();
    /* A probe costs its run plus setup and drain; the first one tells how
     * much more than cfg->seconds that is. */
    struct knee_probe *p = probe(cfg, 0, res, err, errlen);
    if (!p)
        return -1;
    double per_probe = now_s() - t0;
    res->flat_out_rate = p->offered;
    if (p->sustained) {
        res->best = 0;
        res->max_zero_drop_rate = p->offered;
        res->bound = "writers";
        res->converged = 1;
        return 0;
    }
    int threads = cfg->threads > 0 ? cfg->threads : 1;
    /* The confirmation run at the end: KNEE_CONFIRM x the probe length (at
     * least 2 s), with the same setup overhead; its time is kept back from
     * the search when the budget holds both. */
    struct bench_config confirm = *cfg;
    confirm.seconds = cfg->seconds * KNEE_CONFIRM > 2.0 ? cfg->seconds * KNEE_CONFIRM : 2.0;
    double confirm_cost = per_probe - cfg->seconds + confirm.seconds;
    double search_budget = budget_s;
    if (budget_s >= 4 * per_probe + confirm_cost)
        search_budget = budget_s - confirm_cost;
    /* Per writer: lo passed, hi failed (flat out failed, so it bounds hi). */
    double lo = 0, hi = p->offered / threads;
    double r = start_rate > 0 ? start_rate : 1e6;
    if (r >= hi)
        r = hi / 2;
    while (now_s() - t0 + per_probe <= search_budget) {
        if (lo > 0 && hi / lo <= KNEE_TOLERANCE) {
            res->converged = 1;
            break;
        }
        if (r < KNEE_MIN_RATE) { /* even a trickle is lost */
            res->converged = 1;
            break;
        }
        p = probe(cfg, r, res, err, errlen);
        if (!p)
            return -1;
        /* A target the writers could not reach is judged at what they did
         * reach; hi never goes above what a failed probe offered. */
        double got = p->offered / threads;
        if (p->sustained) {
            if (got > lo) {
                lo = got;
                res->best = res->nprobes - 1;
            }
            if (got < 0.9 * r) { /* the writers are the limit here */
                hi = lo;
                res->converged = 1;
                break;
            }
        } else {
            double failed = got > 0 ? got : r;
            if (failed < hi)
                hi = failed;
        }
        if (lo == 0)
            r = r / 2;
        else if (2 * lo < hi)
            r = 2 * lo;
        else
            r = sqrt(lo * hi);
    }
    if (res->best < 0)
        return 0;
    res->bound = "plugin";
    /* Confirm the best rate with a longer run (a short probe can pass by
     * luck); on a failure step down 10 % while the budget lasts. */
    double target = res->probe[res->best].offered / threads;
    while (now_s() - t0 + confirm_cost <= budget_s && res->nprobes < KNEE_MAX_PROBES) {
        p = probe(&confirm, target, res, err, errlen);
        if (!p)
            return -1;
        p->confirm = 1;
        if (p->sustained) {
            res->best = res->nprobes - 1;
            res->confirmed = 1;
            break;
        }
        target /= 1.1;
    }
    res->max_zero_drop_rate = res->probe[res->best].offered;
    return 0;
}
