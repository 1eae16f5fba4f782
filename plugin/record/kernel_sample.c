// SPDX-License-Identifier: Apache-2.0
/* kernel_sample.c - the sampler's settings and each communicator's start
 * and end (kernel_sample.h says how the sample is taken). */
#include "kernel_sample.h"

struct nsc_ksample nsc_ksample;

void nsc_ksample_configure(uint32_t every, uint32_t period_ms, uint64_t ticks_per_sec) {
    nsc_ksample.every = every ? every : 1;
    nsc_ksample.period_ticks =
        period_ms ? (uint64_t)((double)ticks_per_sec * period_ms / 1000.0) : UINT64_MAX;
    if (!nsc_ksample.period_ticks)
        nsc_ksample.period_ticks = 1;
    /* Comms of an earlier session are closed: nothing wants a sample. */
    atomic_store_explicit(&nsc_ksample.wanting, 0, memory_order_relaxed);
    atomic_store_explicit(&nsc_ksample.on, every > 1, memory_order_relaxed);
}

void nsc_ksample_comm_open(struct nsc_comm *c, int *nccl_mask) {
    atomic_store_explicit(&c->ks_since, 0, memory_order_relaxed);
    atomic_store_explicit(&c->ks_last, 0, memory_order_relaxed);
    int on = nsc_ksample_on();
    atomic_store_explicit(&c->ks_want, (uint32_t)on, memory_order_relaxed);
    if (on)
        atomic_fetch_add_explicit(&nsc_ksample.wanting, 1, memory_order_relaxed);
    atomic_store_explicit(&c->ks_word, on ? nccl_mask : NULL, memory_order_relaxed);
}

void nsc_ksample_comm_close(struct nsc_comm *c) {
    atomic_store_explicit(&c->ks_word, NULL, memory_order_relaxed);
    if (atomic_exchange_explicit(&c->ks_want, 0, memory_order_relaxed))
        atomic_fetch_add_explicit(&nsc_ksample.wanting, -1, memory_order_relaxed);
}
