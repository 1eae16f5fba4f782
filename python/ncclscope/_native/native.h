// SPDX-License-Identifier: Apache-2.0
/*
 * native.h - the ncclscope Python extension's shared state.
 *
 *   module.c    the Python-visible functions: load the plugin, start, stop,
 *               status; the configuration
 *   codeinfo.c  what we decided about a code object or a C callable (traced?
 *               a target? library code? its location id), cached on the code
 *               object itself (co_extra) and in a small table for C callables
 *   callers.c   the caller stack of a call into a target (caller mode)
 *   events.c    what every backend calls on an event: the per-thread shadow
 *               stack, the rate limit, the records
 *   monitor.c   backend: sys.monitoring (PEP 669, Python 3.12+)
 *   profile.c   backend: the C-level profile function (sys.setprofile's),
 *               every Python version
 *
 * Threads: every entry point runs with the GIL held (sys.monitoring
 * callbacks, profile functions, module functions), which serialises the
 * shared state here; per-thread state (shadow stacks, caller depth) is
 * thread-local. Free-threaded builds (3.13t) are not supported: module.c
 * refuses to start there.
 *
 * Nothing here raises into the traced program: a failure inside an event
 * (no memory, a filter that raised) clears the error, counts it and goes on.
 */
#ifndef NCCLSCOPE_NATIVE_H
#define NCCLSCOPE_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdint.h>

#include "ncclscope_python.h"
#include "trace_format.h"

enum nsp_mode { NSP_OFF = 0, NSP_CALLER = 1, NSP_FUNCTIONS = 2 };
enum nsp_backend { NSP_MONITORING = 1, NSP_SETPROFILE = 2 };

struct nsp_config {
    enum nsp_mode mode;
    enum nsp_backend backend;
    int c_calls;            /* functions: record calls into C functions */
    uint32_t rate_limit;    /* functions: calls recorded per function per second (0: all) */
    int depth;              /* caller: frames in a caller stack */
    PyObject *is_traced;    /* functions: callable(module name) -> bool */
    PyObject *is_target;    /* caller: callable(name, type name) -> bool */
    char **library;         /* caller: path prefixes of code that is not the caller */
    int nlibrary;
    char *cwd;              /* caller: paths below it are written relative */
    size_t cwd_len;
};

/* Counters for status(); written under the GIL. */
struct nsp_counters {
    uint64_t records;       /* written into the ring */
    uint64_t not_kept;      /* no session open: nothing kept */
    uint64_t ring_full;     /* the plugin dropped them (and counted them in the trace) */
    uint64_t rate_limited;  /* calls not recorded (per-function rate limit) */
    uint64_t callers;       /* calls into targets that set a caller */
    uint64_t stacks;        /* distinct caller stacks interned */
    uint64_t errors;        /* failures inside events (cleared, not raised) */
    uint64_t unmatched;     /* exits whose entry was not seen */
};

extern const struct ncclscope_py_v1 *nsp_api; /* NULL until load() */
extern struct nsp_config nsp_cfg;
extern struct nsp_counters nsp_count;
extern uint32_t nsp_gen; /* bumped at every start: cached decisions older than it are redone */

/* ---- codeinfo.c ---- */
struct nsp_code {
    uint32_t gen;           /* nsp_gen when decided; 0: never */
    uint32_t loc;           /* location string id (functions mode) */
    uint8_t traced;         /* functions: its calls are recorded */
    uint8_t target;         /* caller: calls into it set the caller */
    uint8_t library;        /* caller: skipped when looking for the caller */
    uint8_t pending;        /* on the list of rate-limit counts to flush */
    uint32_t window;        /* rate limit: current 1 s window (coarse seconds) */
    uint32_t in_window;     /* calls recorded in it */
    uint64_t skipped;       /* calls not recorded, not yet reported */
    struct nsp_code *next_pending, *prev_pending;
};

int nsp_codeinfo_init(void);
/* The decisions for code object co, made at first sight under the current
 * configuration; frame (borrowed) is one executing co, for its module name,
 * or NULL for the current frame (which then must run co). NULL on failure
 * (counted). */
struct nsp_code *nsp_code_of(PyCodeObject *co, PyFrameObject *frame);
/* The same for a callable that is not a Python function (a C function, a
 * callable object); NULL for a Python function or method (their own code
 * objects speak for them). */
struct nsp_code *nsp_callable_of(PyObject *callable);
/* Whether code co is library code (caller mode); cheap after first sight. */
int nsp_code_is_library(PyCodeObject *co);
/* Rate limit: 1 when this call of c is recorded. */
int nsp_rate_ok(struct nsp_code *c);
/* Writes SKIPPED records for counts not yet reported. */
void nsp_flush_skipped(void);
/* Forgets C-callable decisions and cached references (stop). */
void nsp_codeinfo_clear(void);

/* ---- callers.c ---- */
/* Sets the calling thread's caller from the frames outward from `frame`
 * (borrowed; the code calling the target). */
void nsp_caller_enter(PyFrameObject *frame);
void nsp_caller_exit(void);
void nsp_callers_clear(void);

/* ---- events.c (functions mode) ---- */
void nsp_fn_enter(const void *token, struct nsp_code *c, uint8_t what);
/* Returns 1 when it matched an entry. */
int nsp_fn_exit(const void *token, uint8_t what, int by_exception);
void nsp_events_reset(void); /* start/stop: every thread's shadow stack is stale */

/* ---- backends: monitor.c, profile.c (same names, one runs at a time) ---- */
int nsp_monitor_start(char *err, size_t errlen);
void nsp_monitor_stop(void);
int nsp_profile_start(char *err, size_t errlen);
void nsp_profile_stop(void);
PyObject *nsp_profile_thread_hook(PyObject *self, PyObject *args); /* threading.setprofile */

/* Guards against events raised by our own slow paths (filters, interning). */
extern _Thread_local int nsp_busy;

/* Records what with location loc; counts the outcome. */
static inline void nsp_record(uint32_t what, uint32_t loc, uint64_t arg) {
    int r = nsp_api->record(what, loc, arg);
    if (r == 1)
        nsp_count.records++;
    else if (r == 0)
        nsp_count.not_kept++;
    else
        nsp_count.ring_full++;
}

#endif /* NCCLSCOPE_NATIVE_H */
