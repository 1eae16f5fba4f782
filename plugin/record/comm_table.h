// SPDX-License-Identifier: Apache-2.0
/*
 * comm_table.h - the communicators ncclscope profiles: one slot per live
 * communicator in a static array, and the contexts handed to NCCL for them.
 *
 * Capacity. NSC_MAX_COMMS (16,384) slots are reserved, as zero-filled
 * static memory: the system backs a page of it only once something writes
 * there. Slots are taken from the low end (below), so what is written, and
 * what the per-slot arrays beside this one (op_state.c, chain.c,
 * control.c, watchdog.c) write, is the slots below the most comms ever open
 * at once: memory follows the live comms' peak, not the reservation, and
 * nothing is ever freed, so a reader on NCCL's threads needs neither a lock
 * nor a grace period (docs/design.md "Communicator table").
 *
 * Contexts. NCCL never dereferences the context init returns; it passes it
 * back to every callback and to finalize. Ours is not a pointer but an
 * encoded integer (bits, low to high):
 *
 *     0..13   slot index (NSC_MAX_COMMS = 16,384 slots)
 *     14..19  NSC_COMM_CTX_TAG, so that small integers and most pointers
 *             (another plugin's context) are rejected at once
 *     20..63  the slot's generation when it was opened (44 low bits: a
 *             slot would have to be reopened 2^43 times to come round)
 *
 * A slot's generation is odd while its communicator is open and is bumped
 * when it is opened and when finalize begins, so a context is accepted only
 * while exactly that opening is live: a context kept past its finalize (a
 * second finalize, a late callback) is rejected even after the slot has
 * been reused. nsc_comm_from_context() decodes, indexes the array (always
 * in bounds) and compares one atomic load: it never dereferences anything
 * the caller passed.
 *
 * Who calls what, concurrently:
 *   - nsc_comm_from_context(): any callback, any thread (hot path, no lock);
 *   - nsc_comm_open(), nsc_comm_claim_context(), nsc_comm_close(),
 *     nsc_comm_learn_slow(), nsc_comm_reset_pending(): init, finalize
 *     and the first descriptors of v1-v3 (slow path, the table's mutex);
 *   - nsc_comm_take_pending(), nsc_comm_overflows(): the flusher (the same
 *     mutex for take, held only to copy; never across I/O);
 *   - nsc_comm_serial_live(): the live metrics, on the flusher (the same
 *     mutex);
 *   - nsc_comm_slot_bound(): anyone (one atomic load; background threads
 *     bound their passes over per-slot arrays with it).
 *
 * Descriptions for the trace. A slot is marked dirty when its description
 * changes (open; rank, commHash or name learnt later); the flusher's take copies dirty
 * slots and clears the mark, so updates coalesce and nothing is queued per
 * event. A slot closed while still dirty first moves its description to a
 * retired list, which the next take drains before anything else: a closed
 * comm's description reaches the file even when its slot is reused at once.
 * The retired list grows on demand up to NSC_COMM_RETIRED_MAX entries
 * (8 MiB; only reached when the flusher cannot take for a long while, e.g.
 * a frozen disk, while comms keep being created and destroyed); what does
 * not fit is counted by nsc_comm_overflows().
 */
#ifndef NSC_COMM_TABLE_H
#define NSC_COMM_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

#define NSC_COMM_INDEX_BITS 14
#define NSC_MAX_COMMS (1u << NSC_COMM_INDEX_BITS)
#define NSC_COMM_CTX_TAG 0x2bu /* 6 bits */
#define NSC_COMM_GEN_SHIFT (NSC_COMM_INDEX_BITS + 6)
#define NSC_COMM_GEN_MASK ((UINT64_C(1) << (64 - NSC_COMM_GEN_SHIFT)) - 1)
#define NSC_COMM_RETIRED_MAX 65536u

_Static_assert(sizeof(void *) == 8, "contexts encode 64 bits");

struct nsc_comm {
    _Atomic uint64_t gen;  /* odd while open (see above) */
    uint32_t serial;       /* what records name; unique in the process */
    _Atomic int32_t rank;  /* -1 until known (v1-v3 learn it from descriptors) */
    /* 1 once a ProxyOp of this process named one of the comm's operations
     * as its parent, or from the open when the comm spans nodes (op_state.h:
     * until then, without KernelCh, operations take no slab slot: nothing
     * could show their progress). Set at open; RELAXED, set once, read at
     * every Coll and P2p start (this line). A ProxyOp that passed the
     * context check just before a finalize may set it on the slot's next
     * comm: that comm then takes slots it did not need, nothing worse. */
    _Atomic uint32_t proxied;
    /* 1 while the rank or the commHash is unknown (v1-v3: their init does
     * not tell them; descriptors do). RELAXED, cleared once under the lock. */
    _Atomic uint32_t learning;
    struct nsc_comm_info info;
    uint32_t in_use;       /* lock: taken, until nsc_comm_close */
    uint32_t dirty;        /* lock: info changed since the flusher last took it */
    /* KernelCh sampling (kernel_sample.h): where NCCL re-reads its mask
     * (NULL: not sampling), operations since the last sampled one, whether
     * the comm wants the next one sampled, and the last sample's ticks.
     * Written by the enqueuing thread: a line apart from the one above,
     * which every callback reads. */
    _Atomic(int *) ks_word;
    _Atomic uint32_t ks_since;
    _Atomic uint32_t ks_want;
    _Atomic uint64_t ks_last;
    char pad[256 - 24 - sizeof(struct nsc_comm_info) - 8 - 24];
};
_Static_assert(sizeof(struct nsc_comm) == 256, "comm slot");
_Static_assert(offsetof(struct nsc_comm, info) == 24, "gen, serial, rank, proxied, learning first");
_Static_assert(offsetof(struct nsc_comm, ks_word) >= 128, "the sampler's words off the read line");

extern struct nsc_comm nsc_comms[NSC_MAX_COMMS];

/* The slot of a live context, or NULL (not ours, stale, garbage). */
static inline struct nsc_comm *nsc_comm_from_context(const void *ctx) {
    uint64_t v = (uint64_t)(uintptr_t)ctx;
    if (((v >> NSC_COMM_INDEX_BITS) & 0x3f) != NSC_COMM_CTX_TAG)
        return 0;
    struct nsc_comm *c = &nsc_comms[v & (NSC_MAX_COMMS - 1)];
    /* ACQUIRE: pairs with the RELEASE in nsc_comm_open; the slot's fields
     * (serial, info) are set for the generation we compare against. */
    uint64_t g = atomic_load_explicit(&c->gen, memory_order_acquire);
    return (g & 1) && (g & NSC_COMM_GEN_MASK) == (v >> NSC_COMM_GEN_SHIFT) ? c : 0;
}

/* The context to give NCCL for a slot nsc_comm_open just returned. */
void *nsc_comm_context(const struct nsc_comm *c);

/* Takes a free slot and fills it (serial assigned here); its description
 * is pending for the flusher. NULL when NSC_MAX_COMMS are open. The slot
 * is a free one below nsc_comm_slot_bound() when there is one (next-fit
 * among them), else the slot at the bound, which then grows by one. */
struct nsc_comm *nsc_comm_open(uint64_t comm_id, const char *name, int nnodes, int nranks,
                               int rank, uint64_t init_ticks);
/* Finalize's first step: validates ctx like nsc_comm_from_context and, for
 * exactly one caller, ends the generation (callbacks with ctx are rejected
 * from now on). Returns the slot, still taken until nsc_comm_close; NULL
 * for a context that is not live (a second finalize, garbage). */
struct nsc_comm *nsc_comm_claim_context(const void *ctx);
/* Frees the slot (ends the generation first if no claim did). A pending
 * description is kept for the flusher. Closing a free slot does nothing. */
void nsc_comm_close(struct nsc_comm *c);
/* Number of taken slots. */
unsigned nsc_comm_active_count(void);
/* Whether the comm with this serial is open and not finalizing: 1 until
 * its finalize claims its context (before the finalize's record is
 * written), 0 from then on (and for a serial never opened), -1 when the
 * table cannot say (memory was short when a comm still open was opened).
 * For the live metrics, which learn comms from their descriptions and
 * from their records in either order (live_metrics.c). The table's lock. */
int nsc_comm_serial_live(uint32_t serial);
/* One past the highest slot ever taken: the most comms open at once so
 * far. Every slot at or above it has never been written. Only grows. */
unsigned nsc_comm_slot_bound(void);

/* v1-v3: NCCL's init tells neither the rank nor the commHash and name;
 * Coll and P2p descriptors tell all three, a ProxyOp the rank (comm_id 0,
 * name NULL: not told). What is unknown is learnt once; the comm's
 * description then changes (dirty). ctx: the context the descriptor came
 * with; learnt only while that opening is live (a callback that passed the
 * check just before a finalize must not name the slot's next comm). Cheap
 * once known (one relaxed load). */
void nsc_comm_learn_slow(struct nsc_comm *c, const void *ctx, int rank, uint64_t comm_id,
                         const char *name);
static inline void nsc_comm_learn(struct nsc_comm *c, const void *ctx, int rank,
                                  uint64_t comm_id, const char *name) {
    if (__builtin_expect(atomic_load_explicit(&c->learning, memory_order_relaxed), 0))
        nsc_comm_learn_slow(c, ctx, rank, comm_id, name);
}

/* The flusher takes descriptions not yet taken (closed comms' first, then
 * open comms' new or changed ones) into out[0..max); returns how many.
 * Call until it returns 0: every description pending when the first call
 * began has then been taken. */
unsigned nsc_comm_take_pending(struct nsc_comm_info *out, unsigned max);
/* Session start: forgets closed comms' descriptions not taken (they belong
 * to the previous file; counted as overflows) and marks every open comm's
 * description pending, so the new file describes the comms it may name. */
void nsc_comm_reset_pending(void);
/* Rotation (segments.h): copies the description of every open comm into
 * out[0..max) without touching what is pending; returns how many. */
unsigned nsc_comm_describe_open(struct nsc_comm_info *out, unsigned max);
/* Comm descriptions that could not be kept (retired list full, out of
 * memory, or dropped at a session start), since the process started. */
uint64_t nsc_comm_overflows(void);

/* Our pid, for the PXN check on ProxyOp descriptors (a ProxyOp whose pid
 * is another's belongs to that process's context). Written by the session
 * under its mutex before any context exists, read-only afterwards. */
extern int nsc_session_pid;

#endif /* NSC_COMM_TABLE_H */
