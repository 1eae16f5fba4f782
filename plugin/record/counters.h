// SPDX-License-Identifier: Apache-2.0
/*
 * counters.h - process-wide event counters that no single writer thread
 * owns (per-thread drops live in thread_state.h). Callbacks increment them
 * with relaxed atomic adds (they are statistics, read by the flusher for the
 * STATS block); they are rare by nature: each counts a caller's mistake.
 */
#ifndef NSC_COUNTERS_H
#define NSC_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

struct nsc_counters {
    _Atomic uint64_t invalid_context; /* startEvent/finalize with a context we did not create */
    _Atomic uint64_t invalid_handle;  /* stop/state with a handle we did not return */
    _Atomic uint64_t chain_lost;      /* calls a chained plugin got without its handle (chain.h) */
};

extern struct nsc_counters nsc_counters;

static inline void nsc_count(_Atomic uint64_t *c) {
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

#endif /* NSC_COUNTERS_H */
