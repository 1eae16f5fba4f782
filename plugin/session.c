// SPDX-License-Identifier: Apache-2.0
/* session.c - init/finalize bookkeeping, fork and unload handling. */
#include "session.h"
#include "op_state.h"
#include "watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "clock.h"
#include "config.h"
#include "control.h"
#include "event_types.h"
#include "engine.h"
#include "intern.h"
#include "live_metrics.h"
#include "kernel_sample.h"
#include "log.h"
#include "ops_thread.h"
#include "recorder.h"
#include "thread_state.h"
#include "version.h"

int nsc_session_pid;
_Atomic int nsc_session_live;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int session_open;
static int forked_child;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct nsc_config cfg;
static unsigned sessions_started; /* names the files of later sessions */

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void) {
    forked_child = 1;
    atomic_store_explicit(&nsc_session_live, 0, memory_order_relaxed);
    nsc_opst_set_tracking(0); /* the child has no watchdog thread to scan the slab */
    nsc_thread_disable_after_fork();
    pthread_mutex_unlock(&lock);
}
static void register_atfork(void) { pthread_atfork(before_fork, after_fork_parent, after_fork_child); }

/* The control API and the string table are used before any session (a
 * mark, Python names) and from any thread: their mutexes are held across
 * every fork() from load on, so a child never inherits one locked by a
 * thread it does not have.
 * Registered at load, before the session's handlers: fork runs prepare
 * handlers in reverse order, so the session mutex is taken first, then
 * control's, then the table's: the order the code nests them in. */
static void locks_prepare(void) {
    nsc_ctl_atfork_prepare();
    nsc_intern_atfork_prepare();
}
static void locks_parent(void) {
    nsc_intern_atfork_parent();
    nsc_ctl_atfork_parent();
}
static void locks_child(void) {
    nsc_intern_atfork_child();
    nsc_ctl_atfork_child();
}
__attribute__((constructor)) static void on_load(void) { pthread_atfork(locks_prepare, locks_parent, locks_child); }

static int open_session(int api_version) {
    char err[512];
    if (nsc_config_load(&cfg, err, sizeof(err)) != 0) {
        nsc_log_warn("ncclscope disabled: %s", err);
        return -1;
    }
    if (!cfg.enabled) {
        nsc_log_info("ncclscope disabled by NCCLSCOPE_ENABLE=0");
        return -1;
    }
    pthread_once(&atfork_once, register_atfork);
    struct nsc_session s;
    memset(&s, 0, sizeof(s));
    s.clock_source = nsc_clock_init(cfg.clock);
    s.ticks_per_sec = nsc_clock_ticks_per_sec();
    nsc_clock_anchor(&s.start);
    s.format_version = NSC_FORMAT_VERSION;
    s.api_version = (uint32_t)api_version;
    s.pid = (uint32_t)getpid();
    s.ring_records = cfg.ring_records;
    s.max_threads = cfg.max_threads;
    s.flush_ms = cfg.flush_ms;
    if (gethostname(s.host, sizeof(s.host) - 1) != 0)
        snprintf(s.host, sizeof(s.host), "unknown");
    snprintf(s.plugin_version, sizeof(s.plugin_version), "%s", NSC_VERSION);
    /* What is recorded: NCCLSCOPE_EVENTS, or what the control API set
     * earlier in the process (control.h). */
    char stem[160];
    snprintf(stem, sizeof(stem), "%s-%u", s.host, s.pid);
    s.event_mask = nsc_ctl_session_open(cfg.event_mask, api_version);
    /* KernelCh for one operation in N, where it is recorded at all: the
     * SESSION mask keeps KernelCh (its events are recorded when they come)
     * and each operation's record says whether it was sampled. */
    nsc_ksample_configure((s.event_mask >> NSC_ET_KERNEL_CH) & 1 ? cfg.kernel_sample : 1,
                          cfg.kernel_sample_ms, s.ticks_per_sec);
    nsc_ctl_set_dump(nsc_session_request_dump);
    nsc_ctl_files_open(cfg.dir, stem);
    nsc_thread_configure(cfg.max_threads, cfg.ring_records);
    nsc_comm_reset_pending();
    nsc_session_pid = (int)s.pid;
    nsc_opst_set_api(api_version);
    if (cfg.chain[0]) { /* a plugin that cannot be chained does not stop us */
        if (nsc_chain_load(cfg.chain, api_version, err, sizeof(err)) != 0)
            nsc_log_warn("ncclscope: %s; running without it", err);
        else
            nsc_log_info("ncclscope: %s", err);
    }
    if (nsc_live_create(&cfg, &s, err, sizeof(err)) != 0)
        nsc_log_warn("ncclscope: %s; no metrics", err);
    if (nsc_engine_start(&cfg, &s, sessions_started, err, sizeof(err)) != 0) {
        nsc_log_warn("ncclscope disabled: %s", err);
        nsc_live_destroy();
        nsc_ctl_session_close();
        return -1;
    }
    nsc_ops_start(&cfg);
    nsc_watchdog_start(&cfg); /* a watchdog that cannot start does not stop us (logged) */
    char names[256];
    nsc_log_info("ncclscope %s: NCCL profiler API v%d, events %s, clock %s, writing %s",
                 NSC_VERSION, api_version, nsc_mask_format(s.event_mask, names, sizeof(names)),
                 s.clock_source == NSC_CLOCK_TSC ? "tsc" : "monotonic", nsc_engine_path());
    sessions_started++;
    session_open = 1;
    /* RELEASE: pairs with python_api.c's ACQUIRE; the engine is running */
    atomic_store_explicit(&nsc_session_live, 1, memory_order_release);
    return 0;
}

struct nsc_comm *nsc_session_comm_open(int api_version, uint64_t comm_id, const char *name,
                                       int nnodes, int nranks, int rank, nsc_abi_logger logfn,
                                       uint32_t *mask) {
    nsc_log_set_logger(logfn);
    pthread_mutex_lock(&lock);
    struct nsc_comm *c = NULL;
    if (forked_child || !(session_open || open_session(api_version) == 0))
        *mask = 0;
    else {
        c = nsc_comm_open(comm_id, name, nnodes, nranks, rank, nsc_clock_ticks());
        if (c) /* hook: the watchdog's per-comm state starts over (op_state.h) */
            nsc_opst_comm_open((uint32_t)(c - nsc_comms), c->serial);
        if (!c)
            nsc_log_warn("ncclscope: more than %d communicators at once; not profiling comm %llx",
                         NSC_MAX_COMMS, (unsigned long long)comm_id);
        else
            *mask = nsc_mask_for_api(cfg.event_mask, api_version);
    }
    pthread_mutex_unlock(&lock);
    if (c)
        nsc_record_marker(NSC_REC_COMM_INIT, c->serial);
    return c;
}

/* The flusher first (it drains everything), then the ops thread (the last
 * metrics), then what they used. Under the session mutex. */
static void close_session(void) {
    atomic_store_explicit(&nsc_session_live, 0, memory_order_relaxed);
    nsc_watchdog_stop(); /* before the engine: a HANG block it built still reaches the file */
    int joined = nsc_engine_stop();
    if (nsc_ops_stop() && joined)
        nsc_live_destroy(); /* else a thread left behind may still use it */
    nsc_watchdog_release(); /* the HANG blocks kept (under its lock: a writer left behind is safe) */
    nsc_ctl_session_close();
    session_open = 0;
}

int nsc_session_request_dump(void) {
    pthread_mutex_lock(&lock);
    int rc = session_open && !forked_child ? nsc_engine_request_dump() : -1;
    pthread_mutex_unlock(&lock);
    return rc;
}

void nsc_session_comm_close(struct nsc_comm *c) {
    nsc_record_marker(NSC_REC_COMM_FINALIZE, c->serial);
    pthread_mutex_lock(&lock);
    nsc_comm_close(c);
    if (session_open && !forked_child && nsc_comm_active_count() == 0)
        close_session();
    pthread_mutex_unlock(&lock);
}

/* Runs at dlclose, and at exit for a process that never finalized its
 * communicators: write out what the rings hold and stop the engine. Memory
 * is freed only when no session was open (NCCL finalized everything and is
 * unloading us); at exit other threads may still be inside a callback. */
__attribute__((destructor)) static void on_unload(void) {
    pthread_mutex_lock(&lock);
    int was_open = session_open;
    if (session_open && !forked_child)
        close_session();
    pthread_mutex_unlock(&lock);
    nsc_thread_free_all(!was_open && !forked_child);
    if (!was_open && !forked_child) {
        nsc_intern_free_all();
        nsc_chain_unload();
    }
}
