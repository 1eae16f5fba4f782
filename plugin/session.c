// SPDX-License-Identifier: Apache-2.0
/* session.c - init/finalize bookkeeping, fork and unload handling. */
#include "session.h"
#include "op_state.h"
#include "watchdog.h"
#include "suspect.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
_Atomic int nsc_py_tracing;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int session_open;
static int forked_child;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct nsc_config cfg;
static unsigned sessions_started; /* names the files of later sessions */
/* The open session's NCCL profiler API version: NSC_SESSION_API_NONE while
 * no NCCL init came (a session the Python package opened) */
static int session_api;
#define NEWEST_API 7 /* nccl_abi.h: the newest profiler API we speak */

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

/* NCCLSCOPE_PYTHON names a mode, but no ncclscope Python package traces
 * in this process: the variable is read by the package's .pth hook, which
 * Python runs only from a site directory (an installed package), never
 * from PYTHONPATH. Said once per process on stderr itself: NCCL shows its
 * logger's warnings only with NCCL_DEBUG set, and this is a set-up that
 * records silently less than asked. */
static void python_not_tracing(void) {
    static int said;
    const char *v = getenv("NCCLSCOPE_PYTHON");
    if (said || !v || atomic_load_explicit(&nsc_py_tracing, memory_order_relaxed))
        return;
    static const char *const off[] = {"", "0", "off", "no", "none"};
    for (unsigned i = 0; i < sizeof(off) / sizeof(off[0]); i++)
        if (strcasecmp(v, off[i]) == 0)
            return;
    said = 1;
    char shown[64];
    snprintf(shown, sizeof(shown), "%s", v);
    for (char *p = shown; *p; p++) /* one line */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    fprintf(stderr,
            "ncclscope: NCCLSCOPE_PYTHON=%s does nothing here: the ncclscope Python package is not "
            "tracing in this process (its .pth hook runs only where the package is installed, "
            "not from PYTHONPATH); run `python -m ncclscope.run ... script.py`, `torchrun ... "
            "-m ncclscope.run train.py`, or install the package (meson install)\n",
            shown);
}

/* What depends on NCCL's profiler API version: what is recorded (limited to
 * what the version delivers), the watchdog's and the metrics' reading of
 * KernelCh, a chained plugin of that version, and the file's SESSION. At
 * the session's opening when NCCL opens it, at NCCL's first init when the
 * Python package opened it (the file then says version 0 until now,
 * trace_format.h). Returns the event mask. */
static uint32_t nccl_version_known(int api_version, int joined) {
    char err[512];
    session_api = api_version;
    uint32_t mask = nsc_ctl_session_open(cfg.event_mask, api_version);
    /* KernelCh for one operation in N, where it is recorded at all: the
     * SESSION mask keeps KernelCh (its events are recorded when they come)
     * and each operation's record says whether it was sampled. Before any
     * comm is open: comms want their first operation sampled. */
    nsc_ksample_configure((mask >> NSC_ET_KERNEL_CH) & 1 ? cfg.kernel_sample : 1,
                          cfg.kernel_sample_ms, nsc_clock_ticks_per_sec());
    nsc_opst_set_api(api_version);
    if (cfg.chain[0]) { /* a plugin that cannot be chained does not stop us */
        if (nsc_chain_load(cfg.chain, api_version, err, sizeof(err)) != 0)
            nsc_log_warn("ncclscope: %s; running without it", err);
        else
            nsc_log_info("ncclscope: %s", err);
    }
    if (joined) {
        nsc_live_set_api(api_version);
        nsc_engine_nccl_joined((uint32_t)api_version, mask);
        nsc_log_info("ncclscope: NCCL joined the Python package's session: profiler API v%d",
                     api_version);
    }
    python_not_tracing();
    return mask;
}

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
    /* Without NCCL (yet): the configured events as the newest API would
     * deliver them, and no chained plugin, until NCCL's init says its
     * version. */
    if (api_version != NSC_SESSION_API_NONE)
        s.event_mask = nccl_version_known(api_version, 0);
    else {
        session_api = NSC_SESSION_API_NONE;
        s.event_mask = nsc_ctl_session_open(cfg.event_mask, NEWEST_API);
        nsc_opst_set_api(NSC_SESSION_API_NONE);
    }
    nsc_ctl_set_dump(nsc_session_request_dump);
    nsc_ctl_files_open(cfg.dir, stem);
    nsc_thread_configure(cfg.max_threads, cfg.ring_records);
    nsc_comm_reset_pending();
    nsc_session_pid = (int)s.pid;
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
    nsc_suspect_start(&cfg, stem); /* nor a suspect level (logged) */
    nsc_live_set_extra(nsc_suspect_metrics); /* its series in the metrics file */
    char names[256];
    char api[48];
    if (api_version != NSC_SESSION_API_NONE)
        snprintf(api, sizeof(api), "NCCL profiler API v%d", api_version);
    else
        snprintf(api, sizeof(api), "opened by the Python package");
    nsc_log_info("ncclscope %s: %s, events %s, clock %s, writing %s", NSC_VERSION, api,
                 nsc_mask_format(s.event_mask, names, sizeof(names)),
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
        /* NCCL's first init in a session the Python package opened: before
         * the comm's first record, so the file says NCCL's version before
         * any of them reaches it (engine.h). */
        if (session_api == NSC_SESSION_API_NONE && api_version != NSC_SESSION_API_NONE)
            nccl_version_known(api_version, 1);
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
    nsc_suspect_stop_request(); /* before the engine, as the watchdog; no wait here */
    nsc_watchdog_stop(); /* before the engine: a HANG block it built still reaches the file */
    int joined = nsc_engine_stop();
    nsc_suspect_stop(); /* its wait ran beside the engine's; the thread removes its file */
    nsc_engine_reap_writers(); /* its channel closed: the writer may have left now */
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
