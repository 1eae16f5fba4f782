// SPDX-License-Identifier: Apache-2.0
/*
 * python_api.c - the entry points of the ncclscope Python extension
 * (ncclscope_python.h): strings for code locations and caller stacks, the
 * per-thread Python caller NCCL's API STARTs copy (python_caller.h), and
 * Python events written as PY records into the calling thread's ring
 * through the recorder's own fast path (recorder.h).
 *
 * Records are written only while a session is open: between sessions the
 * rings are not drained, and a record kept there would surface in the next
 * session's file out of its time.
 */
#include <string.h>

#include "control.h"
#include "ncclscope_python.h"
#include "python_caller.h"
#include "recorder.h"
#include "session.h"

#define EXPORT __attribute__((visibility("default")))

__thread uint32_t nsc_py_caller_tls __attribute__((tls_model("initial-exec")));
_Atomic uint32_t nsc_py_caller_latest;

static uint32_t py_intern(const char *text) {
    if (!text)
        return 0;
    /* By content (Python's texts are transient buffers); the extension
     * keeps the ids. User text: it leaves NCCL's names their room. */
    return nsc_ctl_intern_user(text);
}

static uint32_t py_set_caller(uint32_t stack) {
    uint32_t prev = nsc_py_caller_tls & 0xffffu;
    nsc_py_caller_tls = NSC_PY_THREAD_BIT | (stack & 0xffffu);
    /* Written only when it changes: the word stays shared in the caches of
     * the threads that read it in their callbacks. */
    if (stack && atomic_load_explicit(&nsc_py_caller_latest, memory_order_relaxed) != stack)
        atomic_store_explicit(&nsc_py_caller_latest, stack, memory_order_relaxed);
    return prev;
}

static void py_forget_latest(void) {
    atomic_store_explicit(&nsc_py_caller_latest, 0, memory_order_relaxed);
}

static int py_session_live(void) {
    return atomic_load_explicit(&nsc_session_live, memory_order_acquire);
}

static int py_record(uint32_t what, uint32_t loc, uint64_t arg) {
    if (what > 15)
        return 0;
    uint64_t ticks = nsc_clock_ticks();
    /* ACQUIRE: pairs with the RELEASE in session.c once the flusher runs. */
    if (!atomic_load_explicit(&nsc_session_live, memory_order_acquire))
        return 0;
    struct nsc_thread *t = nsc_thread_get();
    /* Only the owner writes its drop counter (the sentinel's is shared: it
     * never records, so every call there is a drop). */
    uint64_t before = atomic_load_explicit(&t->drops_ring, memory_order_relaxed);
    /* A handle with the "type" in bits 56..59 and id 0: the record's etype
     * is `what`, its id 0, like a marker's. */
    nsc_record_one(t, NSC_REC_PY, (uint64_t)what << NSC_HANDLE_ETYPE_SHIFT, loc, arg, ticks);
    if (t->shared)
        return -1;
    return atomic_load_explicit(&t->drops_ring, memory_order_relaxed) == before ? 1 : -1;
}

static void *py_session_open(const char *name) {
    uint32_t mask = 0;
    /* No NCCL event comes through this comm: the session says API version
     * 0 until NCCL's first init joins it (trace_format.h). */
    struct nsc_comm *c = nsc_session_comm_open(NSC_SESSION_API_NONE, 0, name ? name : "python", 1,
                                               1, 0, NULL, &mask);
    return c ? nsc_comm_context(c) : NULL;
}

static void py_session_close(void *handle) {
    struct nsc_comm *c = handle ? nsc_comm_claim_context(handle) : NULL;
    if (c)
        nsc_session_comm_close(c);
}

static void py_tracing(int on) { atomic_store_explicit(&nsc_py_tracing, on != 0, memory_order_relaxed); }

EXPORT const struct ncclscope_py_v1 ncclscope_py_v1 = {
    .size = sizeof(struct ncclscope_py_v1),
    .version = 1,
    .intern = py_intern,
    .set_caller = py_set_caller,
    .record = py_record,
    .session_live = py_session_live,
    .session_open = py_session_open,
    .session_close = py_session_close,
    .forget_latest = py_forget_latest,
    .tracing = py_tracing,
};
