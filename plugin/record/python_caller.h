// SPDX-License-Identifier: Apache-2.0
/*
 * python_caller.h - the Python caller of the NCCL API calls a thread makes:
 * the only thing NCCL's callbacks read of the Python package.
 *
 * The Python extension sets the calling thread's stack id before a call
 * into torch.distributed and friends and clears it after (python_api.c,
 * set_caller); GroupApi, CollApi and P2pApi STARTs copy it into their
 * descriptor (py_stack). A thread that never set one (PyTorch's autograd
 * threads run DDP's all-reduces, XLA's threads JAX's collectives) takes the
 * process's latest caller instead, and the START says so
 * (NSC_RF_PY_PROCESS); a Python thread between two calls takes none.
 *
 * Cost in a callback: one initial-exec TLS load; when it is 0, one relaxed
 * load of a word the Python side writes once per API call, and only when
 * the caller changes.
 */
#ifndef NSC_PYTHON_CALLER_H
#define NSC_PYTHON_CALLER_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace_format.h"

/* Bits 0..15: the thread's caller stack id (0: none now); bit 16: the
 * thread runs Python (it has set a caller before), so it never takes the
 * process's. */
#define NSC_PY_THREAD_BIT 0x10000u
extern __thread uint32_t nsc_py_caller_tls __attribute__((tls_model("initial-exec")));
/* The latest non-zero caller any thread set; 0 until the Python package
 * sets one. Relaxed: a hint copied into records, ordered with nothing. */
extern _Atomic uint32_t nsc_py_caller_latest;

/* The stack id for a GroupApi/CollApi/P2pApi START of this thread (0 =
 * none); sets NSC_RF_PY_PROCESS in *flags when it is the process's. */
static inline uint16_t nsc_py_caller(uint16_t *flags) {
    uint32_t s = nsc_py_caller_tls;
    if (__builtin_expect(s != 0, 0))
        return (uint16_t)s; /* a Python thread: its own caller, or none */
    uint32_t p = atomic_load_explicit(&nsc_py_caller_latest, memory_order_relaxed);
    if (__builtin_expect(p != 0, 0))
        *flags |= NSC_RF_PY_PROCESS;
    return (uint16_t)p;
}

#endif /* NSC_PYTHON_CALLER_H */
