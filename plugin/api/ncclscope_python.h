// SPDX-License-Identifier: Apache-2.0
/*
 * ncclscope_python.h - the ABI between the plugin and the ncclscope Python
 * extension (python/ncclscope/_native.c). The plugin exports one table,
 * `ncclscope_py_v1`; the extension finds it with dlsym in the plugin NCCL
 * loads (or in a copy it loads itself, docs/python.md), so Python records go
 * into the same per-thread rings as NCCL's events and one file holds both.
 *
 * Who calls what:
 *   - intern: any thread, slow path (the string table's mutex): once per
 *     distinct location or stack; the extension caches the ids;
 *   - set_caller: the calling thread only (a thread-local store, and a
 *     relaxed store of the process-wide latest when it changes);
 *   - record: the calling thread; the recorder's fast path (no lock, no
 *     syscall, no allocation once the thread has a ring);
 *   - session_open/close: slow paths (the session mutex): the package's
 *     own session, which NCCL's communicators join when its plugin is this
 *     one (the file learns NCCL's API version at its first init);
 *   - tracing: any thread, a relaxed store.
 * NCCL's callbacks pay one thread-local load per GroupApi/CollApi/P2pApi
 * START for all of this (and, when it is 0, one relaxed load of the
 * process-wide latest caller): plugin/python_caller.h.
 *
 * Versioning: `size` grows when members are appended; a caller checks that
 * it covers the members it uses. A change to existing members is a new
 * table (ncclscope_py_v2).
 */
#ifndef NCCLSCOPE_PYTHON_H
#define NCCLSCOPE_PYTHON_H

#include <stdint.h>

#define NCCLSCOPE_PY_SYMBOL "ncclscope_py_v1"

struct ncclscope_py_v1 {
    uint32_t size;    /* sizeof(struct ncclscope_py_v1) of the plugin */
    uint32_t version; /* 1 */
    /* A code location ("file:line function") or a caller stack (locations,
     * innermost first, one per line) as a string id: 2..65535, or 1 when
     * the string table is full (the trace reads "?"; counted), 0 for NULL.
     * Texts are kept to their first 255 bytes. */
    uint32_t (*intern)(const char *text);
    /* Makes `stack` (an id from intern, 0 = none) the Python caller of the
     * calling thread's next GroupApi/CollApi/P2pApi STARTs, and, when not 0,
     * the process's latest caller, which STARTs take on threads that never
     * set one (flagged NSC_RF_PY_PROCESS): a thread that set one, even 0,
     * runs Python and takes only its own. Returns the previous. */
    uint32_t (*set_caller)(uint32_t stack);
    /* Records a Python event (enum nsc_py_what) on the calling thread:
     * location id `loc`, argument `arg`. Returns 1 when written, 0 when no
     * session is open (nothing is kept), -1 when the ring was full (the
     * drop is counted in the trace's STATS). */
    int (*record)(uint32_t what, uint32_t loc, uint64_t arg);
    /* 1 while a session is open (NCCL's or one from session_open). */
    int (*session_live)(void);
    /* Opens a session of the Python package's own (a communicator named
     * `name`, one rank, in the trace's COMMS), or joins the open one;
     * NCCL's communicators, if any come, join it, and its SESSION block
     * takes NCCL's API version at the first (trace_format.h). Returns a handle
     * for session_close, or NULL (disabled by the configuration, bad
     * settings: the plugin says why through its log). */
    void *(*session_open)(const char *name);
    /* Ends what session_open began: the session ends with the last
     * communicator, the file gets its END. */
    void (*session_close)(void *handle);
    /* Forgets the process's latest caller (tracing stopped). */
    void (*forget_latest)(void);
    /* ---- appended: a caller checks that `size` covers it ---- */
    /* The package traces (1) or stopped (0). NCCL's first init says on
     * stderr when NCCLSCOPE_PYTHON asks for Python tracing and the package
     * does not trace (its .pth hook never ran). */
    void (*tracing)(int on);
};

#endif /* NCCLSCOPE_PYTHON_H */
