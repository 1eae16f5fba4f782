// SPDX-License-Identifier: Apache-2.0
/* triggers.c - what asks flight mode for a dump: the dump signal
 * (NCCLSCOPE_DUMP_SIGNAL), $NCCLSCOPE_DIR/dump-now, $NCCLSCOPE_DIR/dump-all
 * and the hang watchdog (engine.h's hang_dump hook). Drainer 0 polls them
 * once per pass (eng_flight_mode.poll); the signal handler only sets a flag. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine_int.h"

/* Set by the NCCLSCOPE_DUMP_SIGNAL handler (async-signal-safe: a lock-free
 * atomic store), turned into a dump request by drainer 0. */
static volatile _Atomic int dump_signalled;
static struct sigaction old_dump_action;
static int dump_signal_installed;

static void on_dump_signal(int sig) {
    (void)sig;
    atomic_store_explicit(&dump_signalled, 1, memory_order_relaxed);
}

void eng_dump_signal_install(const struct nsc_config *cfg) {
    if (!cfg->dump_signal || dump_signal_installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    dump_signal_installed = sigaction(cfg->dump_signal, &sa, &old_dump_action) == 0;
}

/* Flight mode, drainer 0: the triggers that need a thread of ours to look
 * (the dump signal's flag, $NCCLSCOPE_DIR/dump-now, checked once per flush
 * interval) become a dump request; the job sealed next carries it to a
 * compressor. Returns 1 when a dump was requested now. */
static uint64_t next_file_check_ns;
/* $NCCLSCOPE_DIR/dump-all: the job's trigger. Never removed: every process
 * writing into the directory (a job's ranks on this host; on a shared
 * filesystem, every host) dumps once each time its modification time
 * changes. A file already there when we first look is an earlier job's and
 * only sets the baseline. */
static struct timespec dump_all_seen;
static int dump_all_looked;
static uint64_t dump_last_ns; /* when a dump was last requested here */


static int dump_all_path(const struct engine *f, char *p, size_t n) {
    return snprintf(p, n, "%s/dump-all", f->cfg.dir) < (int)n;
}

static int dump_all_changed(const struct engine *f) {
    char p[1100];
    struct stat st;
    struct timespec m = {0, 0};
    if (!dump_all_path(f, p, sizeof(p)))
        return 0;
    if (stat(p, &st) == 0)
        m = st.st_mtim;
    int changed = dump_all_looked && (m.tv_sec != dump_all_seen.tv_sec ||
                                      m.tv_nsec != dump_all_seen.tv_nsec) && m.tv_sec;
    dump_all_seen = m;
    dump_all_looked = 1;
    return changed;
}

/* The hang watchdog fired here: the other ranks' windows matter as much
 * as ours (the rank that skipped a collective has nothing in flight and
 * would never dump). Touch dump-all and take its new time as seen. */
static void dump_all_touch(const struct engine *f) {
    char p[1100];
    if (!dump_all_path(f, p, sizeof(p)) || nsc_writer_mkdir(f->cfg.dir) != 0)
        return;
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return;
    futimens(fd, NULL);
    struct stat st;
    if (fstat(fd, &st) == 0) {
        dump_all_seen = st.st_mtim;
        dump_all_looked = 1;
    }
    close(fd);
}

int eng_flight_triggers(struct engine *f, uint64_t now) {
    int req = 0;
    if (atomic_exchange_explicit(&dump_signalled, 0, memory_order_relaxed))
        req = 1;
    int (*hd)(void) = atomic_load_explicit(&eng_hooks.hang_dump, memory_order_acquire);
    if (hd && hd()) { /* hook: the hang watchdog fired */
        req = 1;
        dump_all_touch(f);
    }
    if (now >= next_file_check_ns) {
        next_file_check_ns = now + (uint64_t)f->cfg.flush_ms * 1000000ull;
        char p[1100];
        /* unlink is the check: one dump per file that appears */
        if (snprintf(p, sizeof(p), "%s/dump-now", f->cfg.dir) < (int)sizeof(p) && unlink(p) == 0)
            req = 1;
        /* Ranks fire a moment apart, each touching dump-all: a change
         * within 10 s of a dump of ours belongs to the same episode. */
        if (dump_all_changed(f) && (!dump_last_ns || now - dump_last_ns > 10000000000ull))
            req = 1;
    }
    if (req)
        dump_last_ns = now;
    if (req)
        atomic_store_explicit(&f->dump_req, 1, memory_order_release);
    return req || atomic_load_explicit(&f->dump_req, memory_order_acquire);
}
