// SPDX-License-Identifier: Apache-2.0
/*
 * chain.h - a second profiler plugin behind ncclscope (NCCLSCOPE_CHAIN):
 * NCCL has one profiler slot (NVIDIA/nccl #1981), so ncclscope loads the
 * other plugin itself and forwards every call to it with its own contexts
 * and handles, as NCCL would.
 *
 *   - Loading: at the first session, dlopen(RTLD_NOW | RTLD_LOCAL); its
 *     ncclProfiler_vN for the version NCCL chose for us, else the next older
 *     one, down to v1 (what NCCL does with a plugin); descriptors and state
 *     arguments are translated to that version by nccl/host.c, the same
 *     code the replay tools use. Loaded once per process.
 *   - Contexts: one per communicator, from the chained plugin's own init
 *     (same arguments and logger); finalize is forwarded before ours.
 *   - Masks: the chained plugin's mask is or'ed into what NCCL gets
 *     (control.h); it receives only the types it asked for. It may change
 *     its mask at run time through the int we gave it: the ops thread
 *     re-reads it.
 *   - Handles: ours are event ids (docs/design.md). The chained plugin's
 *     handle for an event is kept in a process-wide table indexed by the
 *     id's low bits, the id stored beside it (a seqlock whose sequence is
 *     the id itself: ids are never reused, so no ABA); stop, state and a
 *     child's parentObj look it up. A slot is overwritten by the event 2^20
 *     ids later; an event that outlives that (or loses a slot to a
 *     simultaneous writer) is counted as `chain_lost` (STATS): its children
 *     reach the chained plugin with a NULL parent, its stop and states are
 *     not forwarded (NCCL never calls them with a NULL handle).
 *
 * Who calls what: nsc_chain_load and _unload under the session mutex;
 * comm_open/comm_close from that comm's init and finalize (its slot is
 * theirs alone then); start/stop/state from any callback thread, lock-free
 * (one CAS per start, a few loads per stop); nsc_chain_refresh_mask under
 * the control mutex (ops thread, init).
 */
#ifndef NSC_CHAIN_H
#define NSC_CHAIN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm_table.h"
#include "hot_line.h"
#include "nccl_abi.h"

struct nsc_chain_comm {
    void *ctx;               /* the chained plugin's context, NULL: not chained */
    _Atomic uint32_t mask;   /* the types it asked for (its version's), 0 when ctx is NULL */
    int cell;                /* the int its init got; it may rewrite it at run time */
};

/* 1 once a chained plugin is loaded (stays 1 while it is). RELAXED loads:
 * set under the session mutex before the first context exists; NCCL's own
 * synchronisation orders init's return before any callback. */
#define nsc_chain_on (nsc_hot.chain_on) /* on the hot line (hot_line.h) */
extern struct nsc_chain_comm nsc_chain_comms[NSC_MAX_COMMS];

static inline int nsc_chain_active(void) {
    return atomic_load_explicit(&nsc_chain_on, memory_order_relaxed);
}

/* The types the chained plugin wants from comm c (0 without one). */
static inline uint32_t nsc_chain_mask(const struct nsc_comm *c) {
    if (__builtin_expect(!nsc_chain_active(), 1))
        return 0;
    return atomic_load_explicit(&nsc_chain_comms[c - nsc_comms].mask, memory_order_relaxed);
}

/* Loads the plugin for API version api_version (first session only; later
 * ones keep it). Returns 0, or -1 with a message (ncclscope then runs
 * without it). */
int nsc_chain_load(const char *path, int api_version, char *err, size_t errlen);
/* Library unload with no session open: finalizes nothing, unloads it. */
void nsc_chain_unload(void);

/* init of comm c (after ours succeeded): calls the chained plugin's init. */
void nsc_chain_comm_open(const struct nsc_comm *c, uint64_t comm_id, const char *name,
                         int nnodes, int nranks, int rank, nsc_abi_logger logfn);
/* finalize of comm c: calls the chained plugin's finalize. */
void nsc_chain_comm_close(const struct nsc_comm *c);
/* Ops thread: re-reads comm slot i's mask cell; returns the mask. */
uint32_t nsc_chain_refresh_mask(unsigned slot);

/* startEvent: forwards descriptor d (dsize valid bytes of NCCL 2.31's
 * layout; v1-v4 descriptors lifted into it, a Coll's/P2p's Group in
 * parentObj) of the event whose handle (ours) is `handle`. api_version is
 * ours. */
void nsc_chain_start(const struct nsc_comm *c, uint64_t handle, const nsc_abi_descr_v7 *d,
                     size_t dsize, int api_version);
void nsc_chain_stop(const void *handle);
void nsc_chain_state(const void *handle, int state, uint64_t arg);

#endif /* NSC_CHAIN_H */
