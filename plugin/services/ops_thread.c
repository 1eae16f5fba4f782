// SPDX-License-Identifier: Apache-2.0
/* ops_thread.c - the ops thread (see ops_thread.h). */
#include "ops_thread.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bg_thread.h"
#include "clock.h"
#include "control.h"
#include "live_metrics.h"
#include "lib_pin.h"
#include "log.h"

#define POLL_MS 100

/* Two threads: the ops thread polls the control files, the metrics thread
 * writes the metrics file. One thread for both let a frozen metrics
 * directory (a hung mount node-exporter's directory is on) stop `mark`,
 * `stop` and `dump` from the control files with it. */
struct ops {
    pthread_t thread, mthread;
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    int stop;           /* under mu */
    int done, mdone;    /* under mu: each thread finished (1 when it never ran) */
    int mstarted;       /* the metrics thread runs (the session's thread only) */
    struct nsc_config cfg;
};

static struct ops *O; /* the running session's; session mutex */

static void deadline_after_ms(struct timespec *ts, uint64_t ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + ms * 1000000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *ops_main(void *arg) {
    struct ops *o = arg;
    pthread_mutex_lock(&o->mu);
    while (!o->stop) {
        struct timespec dl;
        deadline_after_ms(&dl, POLL_MS);
        pthread_cond_timedwait(&o->cv, &o->mu, &dl);
        if (o->stop)
            break;
        pthread_mutex_unlock(&o->mu);
        nsc_ctl_poll();
        pthread_mutex_lock(&o->mu);
    }
    o->done = 1;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

static void *metrics_main(void *arg) {
    struct ops *o = arg;
    uint64_t period_ms = (uint64_t)o->cfg.metrics_seconds * 1000ull;
    /* The first file right away, then every period: a collector sees the
     * process from its start, and a job shorter than one period still
     * shows up while it runs. */
    pthread_mutex_lock(&o->mu);
    while (!o->stop) {
        pthread_mutex_unlock(&o->mu);
        nsc_live_write(0);
        pthread_mutex_lock(&o->mu);
        struct timespec dl;
        deadline_after_ms(&dl, period_ms);
        while (!o->stop && pthread_cond_timedwait(&o->cv, &o->mu, &dl) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&o->mu);
    /* The engine has drained everything: the last numbers, or no file. */
    if (o->cfg.metrics_keep)
        nsc_live_write(1);
    else
        nsc_live_remove();
    pthread_mutex_lock(&o->mu);
    o->mdone = 1;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

int nsc_ops_start(const struct nsc_config *cfg) {
    struct ops *o = calloc(1, sizeof(*o));
    if (!o)
        return -1;
    o->cfg = *cfg;
    pthread_mutex_init(&o->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&o->cv, &ca);
    pthread_condattr_destroy(&ca);
    o->mdone = 1; /* until its thread runs */
    int rc = nsc_bg_thread_start(&o->thread, cfg, ops_main, o, "ncclscope-ops");
    if (rc != 0) {
        nsc_log_warn("ncclscope: cannot start the ops thread (%s): no control files, no metrics",
                     strerror(rc));
        pthread_cond_destroy(&o->cv);
        pthread_mutex_destroy(&o->mu);
        free(o);
        return -1;
    }
    if (cfg->metrics_dir[0]) {
        o->mdone = 0;
        rc = nsc_bg_thread_start(&o->mthread, cfg, metrics_main, o, "ncclscope-prom");
        o->mstarted = rc == 0;
        if (rc != 0) {
            o->mdone = 1;
            nsc_log_warn("ncclscope: cannot start the metrics thread (%s): no metrics file",
                         strerror(rc));
        }
    }
    O = o;
    return 0;
}

int nsc_ops_stop(void) {
    struct ops *o = O;
    if (!o)
        return 1;
    O = NULL;
    struct timespec dl;
    deadline_after_ms(&dl, o->cfg.exit_wait_ms);
    pthread_mutex_lock(&o->mu);
    o->stop = 1;
    pthread_cond_broadcast(&o->cv);
    while (!o->done || !o->mdone)
        if (pthread_cond_timedwait(&o->cv, &o->mu, &dl) == ETIMEDOUT)
            break;
    int done = o->done, mdone = o->mdone;
    pthread_mutex_unlock(&o->mu);
    if (!done || !mdone) {
        nsc_pin_library(); /* a thread left behind in a stalled file system */
        nsc_log_warn("ncclscope: the %s files in %s did not answer within "
                     "NCCLSCOPE_EXIT_WAIT_MS=%u ms; leaving the %s thread behind",
                     done ? "metrics" : "control", done ? o->cfg.metrics_dir : o->cfg.dir,
                     o->cfg.exit_wait_ms, done ? "metrics" : "ops");
        return 0; /* o stays allocated: the threads still read it */
    }
    pthread_join(o->thread, NULL);
    if (o->mstarted)
        pthread_join(o->mthread, NULL);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
    return 1;
}
