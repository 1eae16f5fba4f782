// SPDX-License-Identifier: Apache-2.0
/*
 * python_callers.h - `ncclscope stats --by-caller`: operations grouped by
 * the Python code that issued them (py_caller, python_view.h), with their
 * count, bytes and time, and each call site's share of the GPU time
 * in NCCL kernels: "train.py:88 train_step, AllReduce: 40%" in one command.
 *
 * An operation (Coll/P2p, reported by coll_track.h when complete) belongs
 * to the API call that is its parent (CollApi, P2pApi; NCCL API v5+), or,
 * when the parent is not an API event (v4 and older: a Group), to the last
 * API call of its thread. Shares are of GPU time where KernelCh was recorded
 * (operations without it are shown apart, with their host time), else of
 * enqueue to completion on the host where a ProxyOp completed them; an
 * operation with neither is enqueue-only and has no time or share: the
 * Coll's own stop ends its enqueue, not its work.
 */
#ifndef NSC_PYTHON_CALLERS_H
#define NSC_PYTHON_CALLERS_H

#include <stdint.h>
#include <stdio.h>

#include "coll_track.h"
#include "trace_decode.h"

struct nsc_py_callers;

struct nsc_py_callers *nsc_py_callers_new(void);
/* A new file: event ids and threads start over. */
void nsc_py_callers_file(struct nsc_py_callers *pc);
/* Every record of the file, in order. */
void nsc_py_callers_record(struct nsc_py_callers *pc, const struct nsc_decoder *d, uint32_t thread,
                           const struct nsc_rec *r);
/* A completed operation and its bytes (nccl-tests' convention). Returns
 * its call site's row, for nsc_py_callers_split (NULL: out of memory). */
void *nsc_py_callers_op(struct nsc_py_callers *pc, const struct nsc_op_done *op, uint64_t bytes);
/* The operation's GPU time split at the last rank's GPU start (stats_model.c):
 * once every file is read. */
void nsc_py_callers_split(void *row, uint64_t wait_ns, uint64_t xfer_ns);
/* The table, largest share first; json: one JSON object. */
void nsc_py_callers_print(const struct nsc_py_callers *pc, FILE *out, int json);
void nsc_py_callers_free(struct nsc_py_callers *pc);

#endif /* NSC_PYTHON_CALLERS_H */
