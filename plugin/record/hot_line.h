// SPDX-License-Identifier: Apache-2.0
/*
 * hot_line.h - the process-wide words that every callback reads, together
 * on one cache line of their own: the record clock's choice (clock.h), the
 * event-id counter (thread_state.h), which a STOP or STATE compares the
 * handle against, the mask being recorded (control.h), whether a plugin is
 * chained (chain.h), and the slab's base and high-water mark (slab.h).
 * Inside NCCL the caches between two callbacks are cold; every distinct
 * line a callback touches costs a trip to L2 or L3, so the words read on
 * every call share one, and nothing written often shares it (the counter
 * is written once per NSC_ID_BLOCK ids a thread takes, the high-water mark
 * once per 8 slots until the slab's working set is reached, the others at
 * session start, set_mask, stop/start). Those words were on four other
 * lines, each shared with a lock or a table. Defined in clock.c.
 */
#ifndef NSC_HOT_LINE_H
#define NSC_HOT_LINE_H

#include <stdatomic.h>
#include <stdint.h>

struct nsc_slab_slot;

/* Aligned, so padded to a whole line: nothing else lands on it. */
struct nsc_hot_line {
    _Atomic uint64_t next_id; /* ids below it have been handed out (thread_state.h) */
    int clock_use_tsc;        /* set once before recording starts (clock.h) */
    /* Benchmarks only (ncclscope_bench_passthrough, control.c): nonzero
     * makes every start return a token and do nothing else, as the empty
     * plugin does; on this line because every start reads it anyway. */
    _Atomic int passthrough;
    /* Operations take slab slots (op_state.h): set while a hang watchdog
     * runs to scan them, after the slab exists (RELEASE), cleared when it
     * stops; on this line because every start of a tracked type reads it. */
    _Atomic int opst_tracking;
    _Atomic uint32_t record_mask;  /* nsc_ctl_record_mask (below; written by control.c) */
    _Atomic int chain_on;          /* nsc_chain_on (chain.h) */
    _Atomic uint32_t slab_high;    /* nsc_slab_high (slab.h) */
    struct nsc_slab_slot *slab_slots; /* nsc_slab_slots (slab.h), read through an atomic cast */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct nsc_hot_line) == 64, "one line");

extern struct nsc_hot_line nsc_hot __attribute__((visibility("hidden")));

/* The NCCL type bits recorded now: the session's mask, or 0 while stopped.
 * RELAXED: a start that reads the old value a moment after stop() is
 * recorded as if it came just before it; nothing else is published through
 * this word. */
#define nsc_ctl_record_mask (nsc_hot.record_mask) /* on the hot line (hot_line.h) */

static inline uint32_t nsc_ctl_recording(void) {
    return atomic_load_explicit(&nsc_ctl_record_mask, memory_order_relaxed);
}

#endif /* NSC_HOT_LINE_H */
