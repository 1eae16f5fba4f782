// SPDX-License-Identifier: Apache-2.0
/*
 * host.h - loads a profiler plugin the way NCCL does and calls it through
 * any API version, translating NCCL's internal (v7-layout, NCCL 2.31)
 * descriptors into the version's own the way NCCL's adapters do: v4 and
 * older receive a Coll's/P2p's Group as parent, older versions never see
 * event types, states or fields they do not define (v6 no KernelPhase, user
 * tags or kernel variants; v5 no CE events either), v1 receives enums
 * instead of strings.
 *
 * Used by the replay tools, the tests and the benchmark harness. Calls may
 * come from many threads at once, as NCCL's do.
 */
#ifndef NSC_HOST_H
#define NSC_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_abi.h"

struct nsc_host {
    void *lib;
    int version;         /* the ncclProfiler_vN found */
    const void *table;
    const char *name;    /* the plugin's name field */
    /* The word a host that passes no mask to nsc_host_init hands every
     * init, as NCCL does with its one global: the plugin may write it at
     * any time while a comm lives (run-time control, KernelCh sampling). */
    int nccl_mask;
};

/* dlopen(RTLD_NOW|RTLD_LOCAL), then ncclProfiler_v7, v6, ... v1 unless
 * force_version (1..7) names one. Returns 0 or -1 with a message. */
int nsc_host_load(struct nsc_host *h, const char *path, int force_version, char *err, size_t errlen);
void nsc_host_unload(struct nsc_host *h);

/* Event types bit mask this host's version can deliver. */
uint32_t nsc_host_type_mask(const struct nsc_host *h);

/* mask: where the plugin writes the event mask and NCCL would re-read it;
 * NULL: the host's own word (h->nccl_mask). It must outlive the comm. */
int nsc_host_init(struct nsc_host *h, void **ctx, uint64_t comm_id, int *mask, const char *name,
                  int nnodes, int nranks, int rank);
/* Returns 1 when the event was delivered, 0 when this version cannot carry
 * it (the handle is then NULL, as NCCL leaves it). */
int nsc_host_start(const struct nsc_host *h, void *ctx, void **handle, const nsc_abi_descr_v7 *d);
void nsc_host_stop(const struct nsc_host *h, void *handle);
/* Returns 1 when delivered, 0 when this version does not define the state. */
int nsc_host_state(const struct nsc_host *h, void *handle, int state, uint64_t arg);
void nsc_host_finalize(const struct nsc_host *h, void *ctx);

#endif /* NSC_HOST_H */
