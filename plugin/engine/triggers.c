// SPDX-License-Identifier: Apache-2.0
/* triggers.c - what asks flight mode for a dump: the dump signal
 * (NCCLSCOPE_DUMP_SIGNAL), $NCCLSCOPE_DIR/dump-now, $NCCLSCOPE_DIR/dump-all
 * and the hang watchdog (engine.h's hang_dump hook).
 *
 * Every look at the file system is made by a watcher thread of its own
 * (ncclscope-watch): a directory that stalls (a hung network file system)
 * stalls that thread alone, never drainer 0, whose rings would overflow
 * meanwhile. The watcher creates the directory at once (so `touch
 * $NCCLSCOPE_DIR/dump-now` works from the first seconds), takes dump-now,
 * watches dump-all, touches dump-all when the watchdog fired, and turns
 * what it saw into file_req; drainer 0 (eng_flight_mode.poll) only reads
 * atomics: the dump signal's flag, file_req, the watchdog's request. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bg_thread.h"
#include "engine_int.h"
#include "log.h"

/* Set by the NCCLSCOPE_DUMP_SIGNAL handler (async-signal-safe: a lock-free
 * atomic store), turned into a dump request by drainer 0. */
static volatile _Atomic int dump_signalled;
static struct sigaction old_dump_action;
static int dump_signal_installed, dump_signal_num;

static void on_dump_signal(int sig, siginfo_t *si, void *uc) {
    atomic_store_explicit(&dump_signalled, 1, memory_order_relaxed);
    /* the application's own handler for it still runs */
    if (old_dump_action.sa_flags & SA_SIGINFO) {
        if (old_dump_action.sa_sigaction)
            old_dump_action.sa_sigaction(sig, si, uc);
    } else if (old_dump_action.sa_handler != SIG_DFL && old_dump_action.sa_handler != SIG_IGN)
        old_dump_action.sa_handler(sig);
}

void eng_dump_signal_install(const struct nsc_config *cfg) {
    if (!cfg->dump_signal || dump_signal_installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_dump_signal;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    dump_signal_installed = sigaction(cfg->dump_signal, &sa, &old_dump_action) == 0;
    dump_signal_num = cfg->dump_signal;
}

/* Session end: the previous action comes back, if ours is still the one
 * installed (a handler the application set after ours stays). After this,
 * the library may be unloaded: no handler of ours is left to run. */
void eng_dump_signal_uninstall(void) {
    if (!dump_signal_installed)
        return;
    struct sigaction cur;
    if (sigaction(dump_signal_num, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == on_dump_signal)
        sigaction(dump_signal_num, &old_dump_action, NULL);
    dump_signal_installed = 0;
}

/* The watcher's requests for drainer 0: a dump (file_req), and from drainer
 * 0 to the watcher, touch dump-all (the watchdog fired). last_dump_ns: when
 * a dump was last requested (either side), for dump-all's episodes. */
static _Atomic int file_req, touch_due;
static _Atomic uint64_t last_dump_ns;

/* Files ask for at most one dump per FILE_DUMP_GAP_NS: a dump-now written in
 * a loop (or a junk writer) gets one dump per 10 s, triggers in between
 * merge into the next one. */
#define FILE_DUMP_GAP_NS 10000000000ull

struct watcher {
    char dir[1024];
    char now_path[1100], all_path[1100];
    uint64_t period_ns;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    /* $NCCLSCOPE_DIR/dump-all: the job's trigger. Never removed: every
     * process writing into the directory (a job's ranks on this host; on a
     * shared filesystem, every host) dumps once each time its
     * modification time changes. A file already there when we first look
     * is an earlier job's and only sets the baseline. */
    struct timespec all_seen;
    int all_looked, dir_made, dir_warned;
    uint64_t last_file_dump_ns;
    int pending; /* a file trigger waiting out the gap */
    unsigned merged;
    struct nsc_wchan io; /* its channel to the writer process (or in this process) */
};
static struct watcher *watcher;

static int dump_all_changed(struct watcher *w) {
    struct timespec m = {0, 0};
    if (nsc_wch_mtime(&w->io, w->all_path, &m) != 0)
        m.tv_sec = m.tv_nsec = 0;
    int changed = w->all_looked && (m.tv_sec != w->all_seen.tv_sec || m.tv_nsec != w->all_seen.tv_nsec) &&
                  m.tv_sec;
    w->all_seen = m;
    w->all_looked = 1;
    return changed;
}

/* The hang watchdog fired here: the other ranks' windows matter as much
 * as ours (the rank that skipped a collective has nothing in flight and
 * would never dump). Touch dump-all and take its new time as seen. Never
 * through a link, never a FIFO or device (O_NONBLOCK, a regular file only). */
static void dump_all_touch(struct watcher *w) {
    struct timespec m;
    if (nsc_wch_touch(&w->io, w->all_path, 0640, &m) != 0) {
        if (errno != EINVAL) /* EINVAL: not a regular file, left alone */
            nsc_log_warn("ncclscope: flight recorder: cannot touch %s: %s", w->all_path, strerror(errno));
        return;
    }
    w->all_seen = m;
    w->all_looked = 1;
}

static void watch_once(struct watcher *w) {
    uint64_t now = eng_now_ns();
    if (!w->dir_made) {
        w->dir_made = nsc_wch_mkdir(&w->io, w->dir) == 0;
        if (!w->dir_made && !w->dir_warned) {
            w->dir_warned = 1;
            nsc_log_warn("ncclscope: flight recorder: cannot create %s: %s (dumps will fail)", w->dir,
                         strerror(errno));
        }
    }
    if (atomic_exchange_explicit(&touch_due, 0, memory_order_acquire))
        dump_all_touch(w);
    int want = 0;
    /* unlink is the check: one trigger per file that appears */
    if (nsc_wch_unlink(&w->io, w->now_path) == 0)
        want = 1;
    /* Ranks fire a moment apart, each touching dump-all: a change within
     * 10 s of a dump of ours belongs to the same episode. */
    uint64_t last = atomic_load_explicit(&last_dump_ns, memory_order_relaxed);
    if (dump_all_changed(w) && (!last || now - last > FILE_DUMP_GAP_NS))
        want = 1;
    if (want && w->pending)
        w->merged++;
    w->pending |= want;
    if (w->pending && (!w->last_file_dump_ns || now - w->last_file_dump_ns >= FILE_DUMP_GAP_NS)) {
        if (w->merged)
            nsc_log_info("ncclscope: flight recorder: %u file triggers merged into one dump (at most "
                         "one per 10 s)", w->merged);
        w->pending = 0;
        w->merged = 0;
        w->last_file_dump_ns = now;
        atomic_store_explicit(&last_dump_ns, now, memory_order_relaxed);
        /* RELEASE: pairs with drainer 0's ACQUIRE exchange */
        atomic_store_explicit(&file_req, 1, memory_order_release);
    }
}

static void *watch_main(void *arg) {
    struct watcher *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        pthread_mutex_unlock(&w->mu);
        watch_once(w);
        pthread_mutex_lock(&w->mu);
        if (w->stop)
            break;
        struct timespec dl;
        eng_deadline_after(&dl, w->period_ns / 1000u);
        pthread_cond_timedwait(&w->cv, &w->mu, &dl);
    }
    pthread_mutex_unlock(&w->mu);
    /* the writer leaves once its channels are closed: this one even when
     * the session's end could not wait for us */
    if (w->io.sock >= 0)
        close(w->io.sock);
    w->io.sock = -1;
    return NULL;
}

static void watcher_free(struct watcher *w) {
    if (w->io.sock >= 0)
        close(w->io.sock);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int eng_watch_start(const struct nsc_config *cfg, int sock) {
    struct watcher *w = calloc(1, sizeof(*w));
    if (!w) {
        if (sock >= 0)
            close(sock);
        return -1;
    }
    w->io.sock = sock;
    snprintf(w->dir, sizeof(w->dir), "%s", cfg->dir);
    snprintf(w->now_path, sizeof(w->now_path), "%s/dump-now", cfg->dir);
    snprintf(w->all_path, sizeof(w->all_path), "%s/dump-all", cfg->dir);
    uint64_t ms = cfg->flush_ms ? cfg->flush_ms : 100;
    w->period_ns = (ms < 1000 ? ms : 1000) * 1000000ull;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&file_req, 0);
    atomic_store(&touch_due, 0);
    atomic_store(&last_dump_ns, 0);
    if (nsc_bg_thread_start(&w->thread, cfg, watch_main, w, "ncclscope-watch") != 0) {
        watcher_free(w);
        return -1;
    }
    watcher = w;
    return 0;
}

/* Waits up to wait_ms for the watcher (it may sit in a stalled stat); one
 * still stuck is left behind with its memory and the library pinned. */
void eng_watch_stop(unsigned wait_ms) {
    struct watcher *w = watcher;
    if (!w)
        return;
    watcher = NULL;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl); /* pthread_timedjoin_np's clock */
    uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)wait_ms * 1000000ull;
    dl.tv_sec += (time_t)(ns / 1000000000ull);
    dl.tv_nsec = (long)(ns % 1000000000ull);
    if (pthread_timedjoin_np(w->thread, NULL, &dl) == 0) {
        watcher_free(w);
        return;
    }
    pthread_detach(w->thread);
    eng_pin_library();
    nsc_log_warn("ncclscope: flight recorder: %s does not answer; its watcher is left behind", w->dir);
}

/* At most one dump per DUMP_GAP_NS from any trigger (the signal, the
 * files, the control API, the watchdog): a dump signal or a control call
 * in a loop once wrote 129 whole windows, 503 MB, in 15 s. A request
 * within the gap waits for its end and merges with the others that came
 * meanwhile into that one dump (the count in its log line). The session's
 * last dump and the fatal signals' are not held. */
#define DUMP_GAP_NS 1000000000ull

/* Flight mode, drainer 0, once per pass: atomics only. The dump signal's
 * flag, the watcher's file_req, the watchdog's request and the control
 * API's asks become a dump request once the gap since the last allows;
 * the job sealed next carries it to a compressor. Returns 1 when a dump is
 * asked for. */
int eng_flight_triggers(struct engine *f, uint64_t now) {
    uint32_t asked = 0;
    if (atomic_exchange_explicit(&dump_signalled, 0, memory_order_relaxed))
        asked++;
    if (atomic_exchange_explicit(&file_req, 0, memory_order_acquire))
        asked++;
    int (*hd)(void) = atomic_load_explicit(&eng_hooks.hang_dump, memory_order_acquire);
    if (hd && hd()) { /* hook: the hang watchdog fired; the watcher touches dump-all */
        asked++;
        atomic_store_explicit(&touch_due, 1, memory_order_release);
    }
    /* ACQUIRE: pairs with nsc_engine_request_dump's RELEASE add */
    asked += atomic_exchange_explicit(&f->dump_asks, 0, memory_order_acquire);
    if (asked) {
        atomic_store_explicit(&last_dump_ns, now, memory_order_relaxed);
        f->merging += asked - (f->dump_pending ? 0 : 1);
        f->dump_pending = 1;
    }
    int req = 0;
    if (f->dump_pending && (!f->dump_served_ns || now - f->dump_served_ns >= DUMP_GAP_NS)) {
        f->dump_pending = 0;
        f->dump_served_ns = now;
        /* relaxed: a count for the dump's log line; dump_req's RELEASE
         * orders it before the compressor's ACQUIRE exchange */
        atomic_fetch_add_explicit(&f->dumps_merged, f->merging, memory_order_relaxed);
        f->merging = 0;
        atomic_store_explicit(&f->dump_req, 1, memory_order_release);
        req = 1;
    }
    return req || atomic_load_explicit(&f->dump_req, memory_order_acquire);
}
