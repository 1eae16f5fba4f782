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
#include "log.h"

#define POLL_MS 100

struct ops {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    int stop, done;    /* under mu */
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
    int metrics = o->cfg.metrics_dir[0] != '\0';
    uint64_t period = (uint64_t)o->cfg.metrics_seconds * 1000000000ull;
    /* The first file right away (within POLL_MS of the session's start),
     * then every period: a collector sees the process from its start, and
     * a job shorter than one period still shows up while it runs. */
    uint64_t next_metrics = nsc_clock_monotonic_ns();
    pthread_mutex_lock(&o->mu);
    while (!o->stop) {
        struct timespec dl;
        deadline_after_ms(&dl, POLL_MS);
        pthread_cond_timedwait(&o->cv, &o->mu, &dl);
        if (o->stop)
            break;
        pthread_mutex_unlock(&o->mu);
        nsc_ctl_poll();
        uint64_t now = nsc_clock_monotonic_ns();
        if (metrics && now >= next_metrics) {
            nsc_live_write(0);
            next_metrics = now + period;
        }
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    /* The flusher has drained everything: the last numbers, or no file. */
    if (metrics) {
        if (o->cfg.metrics_keep)
            nsc_live_write(1);
        else
            nsc_live_remove();
    }
    pthread_mutex_lock(&o->mu);
    o->done = 1;
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
    int rc = nsc_bg_thread_start(&o->thread, cfg, ops_main, o, "ncclscope-ops");
    if (rc != 0) {
        nsc_log_warn("ncclscope: cannot start the ops thread (%s): no control files, no metrics",
                     strerror(rc));
        pthread_cond_destroy(&o->cv);
        pthread_mutex_destroy(&o->mu);
        free(o);
        return -1;
    }
    O = o;
    return 0;
}

/* Keeps the library mapped for a thread left behind in a stalled file
 * system (a later dlclose would unmap the code it returns to). */
static void pin_library(void) {
    Dl_info info;
    if (dladdr((void *)&pin_library, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
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
    while (!o->done)
        if (pthread_cond_timedwait(&o->cv, &o->mu, &dl) == ETIMEDOUT)
            break;
    int done = o->done;
    pthread_mutex_unlock(&o->mu);
    if (!done) {
        pin_library();
        nsc_log_warn("ncclscope: the metrics or control files in %s did not answer within "
                     "NCCLSCOPE_EXIT_WAIT_MS=%u ms; leaving the ops thread behind",
                     o->cfg.metrics_dir[0] ? o->cfg.metrics_dir : o->cfg.dir, o->cfg.exit_wait_ms);
        return 0; /* o stays allocated: the thread still reads it */
    }
    pthread_join(o->thread, NULL);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
    return 1;
}
