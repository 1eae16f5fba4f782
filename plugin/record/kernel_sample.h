// SPDX-License-Identifier: Apache-2.0
/*
 * kernel_sample.h - KernelCh for a sample of the operations: GPU times and
 * completion at a cost the default settings can carry.
 *
 * Why. KernelCh is the only event that says an operation ran and ended on
 * the GPU (a Coll's stop means "enqueued"), and on one node without the
 * network it is the only completion there is. Asking NCCL for it on every
 * operation costs NCCL itself time on each one (its kernel writes GPU
 * timers that its proxy thread polls: docs/benchmarks.md has the figures),
 * most of all on small operations issued back to back.
 *
 * How. NCCL hands init a pointer to the int it re-reads at every enqueue
 * (one global in NCCL, valid for the life of the process) and copies it
 * into each operation. So the KernelCh bit is ours to turn on for one
 * enqueue and off again: a communicator wants a sample after N - 1
 * operations without one (NCCLSCOPE_KERNEL_SAMPLE) or once its last sample
 * is older than the period (NCCLSCOPE_KERNEL_SAMPLE_MS, so that a job of
 * few, long operations gets nearly all of them), and the bit is set while
 * any communicator wants one. Each operation's API event (CollApi, P2pApi;
 * API v1-v4: the plan's Group) reads the word NCCL just copied: that is
 * whether this enqueue was sampled (the handle's NSC_HANDLE_SAMPLED, which
 * its Coll or P2p turns into the record's NSC_RF_SAMPLED), and the moment
 * to decide about the next one. The decision for operation k is taken at
 * operation k, so it lands on operation k + 1 (the first operation of a
 * communicator is sampled: its open wants one).
 *
 * Concurrency. The per-communicator words are written by the thread that
 * enqueues for that communicator (NCCL serialises a comm's enqueues); the
 * count of communicators that want a sample is a relaxed atomic changed
 * only when one starts or stops wanting. The bit is set and cleared by
 * atomic or/and, never by storing the word, so a control command's new
 * word (control.c) is never undone; two threads may still set and clear
 * it in the wrong order (one clearing what the other set): the next
 * enqueue of any comm compares what it read with what is wanted and
 * changes it again, so that costs at most one operation's sample. Nothing
 * here takes a lock, calls the system or allocates.
 */
#ifndef NSC_KERNEL_SAMPLE_H
#define NSC_KERNEL_SAMPLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm_table.h"
#include "event_types.h"
#include "trace_format.h"

struct nsc_ksample {
    _Atomic int on;         /* sampling, not every operation (session open) */
    uint32_t every;         /* N: one operation in N at least */
    uint64_t period_ticks;  /* and one per period (record clock) */
    _Atomic int32_t wanting; /* communicators that want the next enqueue sampled */
};
extern struct nsc_ksample nsc_ksample __attribute__((visibility("hidden")));

#define NSC_KSAMPLE_BIT (1 << NSC_ET_KERNEL_CH)

/* Session open: sampling on (every > 1; every 0 means never, 1 means every
 * operation, which is the mask's KernelCh bit alone) or off. */
void nsc_ksample_configure(uint32_t every, uint32_t period_ms, uint64_t ticks_per_sec);
static inline int nsc_ksample_on(void) {
    return atomic_load_explicit(&nsc_ksample.on, memory_order_relaxed);
}
/* The KernelCh bit the word should have now (NSC_KSAMPLE_BIT or 0). */
static inline int nsc_ksample_wanted_bit(void) {
    return atomic_load_explicit(&nsc_ksample.wanting, memory_order_relaxed) > 0 ? NSC_KSAMPLE_BIT
                                                                                : 0;
}

/* init, under the control lock, before the context reaches NCCL: where
 * NCCL re-reads its mask; the comm wants its first operation sampled. */
void nsc_ksample_comm_open(struct nsc_comm *c, int *nccl_mask);
/* finalize: the comm stops wanting (its want must not hold the bit on). */
void nsc_ksample_comm_close(struct nsc_comm *c);

/* An operation's API event (see the top), on the enqueuing thread, with
 * recording on. Returns whether NCCL enqueued this one with KernelCh.
 * `keep_bit`: a chained plugin asks for KernelCh on every operation, so the
 * word keeps the bit and the sample is ours alone: an operation is sampled
 * when the one before decided so, and its other KernelCh are not recorded
 * (the trace is the one without the chained plugin). */
static inline int nsc_ksample_enqueue(struct nsc_comm *c, uint64_t ticks, int keep_bit) {
    int *w = atomic_load_explicit(&c->ks_word, memory_order_relaxed);
    if (!w)
        return 0;
    int m = __atomic_load_n(w, __ATOMIC_RELAXED);
    int sampled = keep_bit ? (int)atomic_load_explicit(&c->ks_want, memory_order_relaxed)
                           : (m & NSC_KSAMPLE_BIT) != 0;
    uint32_t since = atomic_load_explicit(&c->ks_since, memory_order_relaxed);
    uint64_t last = atomic_load_explicit(&c->ks_last, memory_order_relaxed);
    if (sampled) {
        since = 0;
        last = ticks;
        atomic_store_explicit(&c->ks_last, ticks, memory_order_relaxed);
    } else {
        since++;
    }
    atomic_store_explicit(&c->ks_since, since, memory_order_relaxed);
    int want = since + 1 >= nsc_ksample.every || ticks - last >= nsc_ksample.period_ticks;
    if (want != (int)atomic_load_explicit(&c->ks_want, memory_order_relaxed)) {
        atomic_store_explicit(&c->ks_want, (uint32_t)want, memory_order_relaxed);
        atomic_fetch_add_explicit(&nsc_ksample.wanting, want ? 1 : -1, memory_order_relaxed);
    }
    int bit = keep_bit ? NSC_KSAMPLE_BIT : nsc_ksample_wanted_bit();
    /* Only the bit, by a read-modify-write: the control commands store
     * whole words (control.c), and a store of `m` with the bit changed
     * would put back the bits of a word they replaced a moment ago. Issued
     * only when the bit differs (twice per sample). */
    if ((m & NSC_KSAMPLE_BIT) != bit) {
        if (bit)
            __atomic_fetch_or(w, NSC_KSAMPLE_BIT, __ATOMIC_RELAXED);
        else
            __atomic_fetch_and(w, ~NSC_KSAMPLE_BIT, __ATOMIC_RELAXED);
    }
    return sampled;
}

#endif /* NSC_KERNEL_SAMPLE_H */
