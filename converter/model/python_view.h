// SPDX-License-Identifier: Apache-2.0
/*
 * python_view.h - the converter's Python parts (records of the ncclscope
 * Python package, docs/python.md; format: docs/format.md "Python records").
 *
 *   - Python slices: PY records of each thread paired like a call stack.
 *     Every slice goes on the thread's track in the file's "python" process;
 *     a slice during which the thread made NCCL calls goes also on that
 *     thread's track in each of those communicators' processes, around the
 *     NCCL API events it made, so they nest under the Python call that made
 *     them.
 *   - the Python stack a GroupApi, CollApi or P2pApi START names (its
 *     py_caller / py_stack arguments: timeline/event_args.c).
 *
 * Streaming like the rest of convert.c: per thread, the Python calls open
 * now; a slice is handed to the caller when its exit is read.
 */
#ifndef NSC_PYTHON_VIEW_H
#define NSC_PYTHON_VIEW_H

#include <stdint.h>

#include "trace_decode.h"

/* The comm serial standing for the file's Python process (comm serials
 * are small: a process with 65,535 communicators collides). */
#define NSC_PY_SERIAL 0xffffu

struct nsc_py_slice {
    uint32_t thread;      /* writer thread index in the file */
    uint32_t serial;      /* draw in this comm's process, or NSC_PY_SERIAL */
    uint64_t start_ns, end_ns;
    const char *location; /* "file:line function" or "module.function" (C) */
    int c_call, by_exception, unfinished;
};

typedef void (*nsc_py_slice_fn)(void *ud, const struct nsc_py_slice *s);

struct nsc_pyview;

struct nsc_pyview *nsc_pyview_new(nsc_py_slice_fn fn, void *ud);
/* Every record of the file in order, with its time on the merged timeline. */
void nsc_pyview_record(struct nsc_pyview *v, const struct nsc_decoder *d, uint32_t thread,
                       const struct nsc_rec *r, uint64_t ns);
/* Calls still open at the file's end: drawn to end_ns, unfinished. */
void nsc_pyview_finish(struct nsc_pyview *v, const struct nsc_decoder *d, uint64_t end_ns);
/* For the metadata: calls drawn, calls not recorded (rate limit), exits
 * whose call was not in the trace. */
void nsc_pyview_counts(const struct nsc_pyview *v, uint64_t *calls, uint64_t *skipped,
                       uint64_t *unmatched);
void nsc_pyview_free(struct nsc_pyview *v);

/* The py_stack string id of a GroupApi/CollApi/P2pApi START (0: none). */
uint32_t nsc_py_stack_id(const struct nsc_rec *r);
#endif /* NSC_PYTHON_VIEW_H */
