// SPDX-License-Identifier: Apache-2.0
/*
 * op_state.h - what every collective and point-to-point operation of the
 * process is doing now, kept in slab slots (slab.h) for the hang watchdog
 * (watchdog.h): per operation its channels started and done (KernelCh),
 * its ProxyOps (peer, channel, direction, steps posted and done) and their
 * ProxySteps' states; per communicator the last operation enqueued and the
 * last completed, and how many are in flight.
 *
 * Who calls what, concurrently:
 *   - nsc_opst_start/_stop/_state: NCCL's threads, from the callbacks,
 *     after the record is written, a stop's before it (nccl_api.c says
 *     why; the trace never depends on this state).
 *     No lock, no allocation: a CAS to take a slot, a CAS per reference.
 *   - nsc_opst_scan: the watchdog thread only (one at a time). It completes
 *     operations whose completion it must infer (KernelCh not recorded), and
 *     reclaims the slots of finalized communicators.
 *   - nsc_opst_comm_open: init (the comm table's mutex), before the comm's
 *     context is published.
 *
 * Slots and references. Coll and P2p take an OP slot; ProxyOp a PROXY slot
 * that references its OP; ProxyStep a STEP slot that names its PROXY (slot
 * and id, no reference: the watchdog checks the id when it tallies);
 * KernelCh a KCH slot that names its OP (no reference either: its OP cannot
 * complete before every channel is done; op_state.c, kch_done). A child takes its reference with
 * one CAS that also checks the parent's id (slab.h: `life`), so a child of
 * an operation whose slot was completed and reused is an orphan, counted,
 * never attached to the new occupant. Whoever frees a child's slot (its stop,
 * or the watchdog reclaiming a finalized comm) releases its parent.
 *
 * Completion of an operation: its own stop came, no child is open, and, when
 * KernelCh is recorded, every one of its nChannels channels stopped
 * (KernelChStop). Without KernelCh the watchdog completes it 100 ms after
 * the last of those. A slab that is full makes the event record-only: its
 * handle is a plain one, the slab counts it (STATS: HANG block counters).
 */
#ifndef NSC_OP_STATE_H
#define NSC_OP_STATE_H

#include <stdint.h>

#include "comm_table.h"
#include "event_types.h"
#include "hot_line.h"
#include "nccl_abi.h"
#include "slab.h"

enum nsc_opst_kind { NSC_OPST_FREE = 0, NSC_OPST_OP = 1, NSC_OPST_PROXY = 2, NSC_OPST_STEP = 3,
                     NSC_OPST_KCH = 4 };

/* What a ProxyStep waits for, from its last state (docs/format.md, HANG). */
enum nsc_step_wait { NSC_WAIT_POSTED = 0, NSC_WAIT_GPU = 1, NSC_WAIT_PEER = 2, NSC_WAIT_NET = 3,
                     NSC_WAIT_FLUSH = 4, NSC_WAIT_COUNT = 5 };
/* A step's wait from its last state word (0: no state yet, else the
 * ncclProfilerEventState + 1). */
static inline unsigned nsc_step_wait_of(uint64_t st) {
    if (!st)
        return NSC_WAIT_POSTED;
    switch ((int)st - 1) {
    case NSC_ABI_PROXY_STEP_SEND_GPU_WAIT:
    case NSC_ABI_PROXY_STEP_RECV_GPU_WAIT:
        return NSC_WAIT_GPU;
    case NSC_ABI_PROXY_STEP_SEND_PEER_WAIT_V4:
        return NSC_WAIT_PEER;
    case NSC_ABI_PROXY_STEP_SEND_WAIT:
    case NSC_ABI_PROXY_STEP_RECV_WAIT:
        return NSC_WAIT_NET;
    case NSC_ABI_PROXY_STEP_RECV_FLUSH_WAIT:
        return NSC_WAIT_FLUSH;
    default:
        return NSC_WAIT_POSTED;
    }
}

/* The handle to give NCCL for an event just started (`h`, a plain handle
 * from the recorder): a slab handle when the event's type is tracked and a
 * slot was free, `h` otherwise. `kernel_tracked`: KernelCh is recorded now. */
uint64_t nsc_opst_start_slow(struct nsc_comm *c, unsigned et, const nsc_abi_descr_v7 *d,
                             uint64_t h, uint64_t ticks, const char *func);
static inline uint64_t nsc_opst_start(struct nsc_comm *c, unsigned et, const nsc_abi_descr_v7 *d,
                                      uint64_t h, uint64_t ticks, const char *func) {
    /* Coll 1, P2p 2, ProxyOp 3, ProxyStep 4, KernelCh 6 (event_types.h).
     * ACQUIRE: pairs with nsc_opst_set_tracking's RELEASE (the slab exists). */
    if (!((0x5eu >> et) & 1) || !h ||
        !atomic_load_explicit(&nsc_hot.opst_tracking, memory_order_acquire))
        return h;
    /* An operation whose progress nothing would show takes no slot: without
     * KernelCh for it (not sampled: kernel_sample.h), only its ProxyOps could (a comm on NVLink or shared
     * memory has none), and NCCL starts and stops a Coll back to back after
     * its kernel's launch (hostStreamPlanTask, 2.23-2.30), with only the
     * proxy upload between: such a slot could never be seen in flight. It
     * cost the issuing thread two lines and three locked instructions per
     * operation for nothing (docs/design.md, "Operations nothing could
     * watch"). A comm across nodes takes slots from its open; one within a
     * node learns that it has ProxyOps from the first one
     * (nsc_opst_start_slow), and its later operations take slots. */
    if ((et == NSC_ET_COLL || et == NSC_ET_P2P) && !(h & NSC_HANDLE_SAMPLED) &&
        !atomic_load_explicit(&c->proxied, memory_order_relaxed))
        return h;
    return nsc_opst_start_slow(c, et, d, h, ticks, func);
}
/* New operations take slots (1) or not (0): the watchdog sets it once its
 * thread runs and the slab exists, and clears it before it stops, so that
 * no session without a scanner (a later one with NCCLSCOPE_HANG_SECONDS=0)
 * fills the slab with operations nobody completes. Slots already taken
 * keep working (stops, states, children) until their scan-less end. */
void nsc_opst_set_tracking(int on);
/* The API version NCCL chose (session open, before any context exists).
 * v1-v3 give a Coll's nMaxChannels, not the channels whose KernelCh will
 * come (NCCL 2.26 spreads a small collective over fewer): their operations
 * are completed as without KernelCh, after the grace. A KernelCh takes no
 * reference, so one still open does not hold its operation: on NCCL
 * 2.23-2.26 the watchdog sees a hang only through ProxyOps (not a hung
 * kernel on one node). */
void nsc_opst_set_api(int api_version);
/* ticks 0: read the clock only where a time is kept. */
void nsc_opst_stop(uint64_t h, uint64_t ticks);
void nsc_opst_state(uint64_t h, int state, uint64_t arg, uint64_t ticks);

/* A comm's slot was (re)opened: its per-comm state starts over. */
void nsc_opst_comm_open(uint32_t comm_index, uint32_t serial);

/* ---- the watchdog's view ---- */

struct nsc_opst_proxy {
    uint64_t op_id;          /* the operation it belongs to */
    uint64_t self_id;        /* its own event id */
    int32_t peer, nsteps;
    uint8_t ch, is_send, done;
    uint32_t steps_open;     /* ProxySteps started and not stopped */
    int32_t lowest_open;     /* the lowest step number among them (-1: none) */
    uint32_t waiting[NSC_WAIT_COUNT]; /* open steps by what they wait for */
};

struct nsc_opst_op {
    uint64_t id, seq, start_ticks, stop_ticks;
    uint32_t serial, comm_index;
    uint8_t etype, nch, stopped, kernel_tracked;
    int32_t peer;
    uint16_t func;           /* string id */
    uint64_t ch_started, ch_done; /* channel bitmasks */
    uint32_t proxies, proxies_done;
};

struct nsc_opst_comm {
    uint32_t serial, comm_index;
    uint64_t enq_seq, done_seq, done_ticks, started, completed;
    uint16_t enq_func, done_func;
    uint8_t enq_etype, done_etype, any_done;
};

/* One pass over the slots (watchdog thread). `now` record-clock ticks,
 * `grace` ticks before an operation without KernelCh counts as complete.
 * Fills ops[0..*nops), proxies[0..*nproxies) (up to the capacities; what
 * does not fit is left out, counted in *left_out) when the arrays are
 * given. Returns how many operations it retired (completed after their
 * grace, or overtaken by a later one of their comm): the rate at which
 * operations hold slots until a scan frees them. */
uint32_t nsc_opst_scan(uint64_t now, uint64_t grace, struct nsc_opst_op *ops, uint32_t *nops,
                   uint32_t ops_cap, struct nsc_opst_proxy *proxies, uint32_t *nproxies,
                   uint32_t proxies_cap, uint32_t *left_out);
/* A light scan (watchdog thread, between full ones): it only completes
 * operations without KernelCh whose grace passed; no sweep of children, no
 * reclaiming of finalized comms' slots, which keep the pace of full scans.
 * Returns what nsc_opst_scan returns. */
uint32_t nsc_opst_scan_light(uint64_t now, uint64_t grace);
/* The per-comm state of comm slot i if it is open with a consistent
 * snapshot; 0 otherwise. */
int nsc_opst_comm_read(uint32_t i, struct nsc_opst_comm *out);

#endif /* NSC_OP_STATE_H */
