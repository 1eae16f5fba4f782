// SPDX-License-Identifier: Apache-2.0
/*
 * slab.h - fixed-size slots for per-operation state (op_state.h), and the
 * handles that name them.
 *
 * Contract. Any thread may allocate (nsc_slab_alloc) and free
 * (nsc_slab_free) at the same time as any other; readers (the watchdog)
 * read any slot at any time. Nothing here takes a lock, makes a syscall or
 * allocates: the slots are one mapping made at session start, touched only
 * as the high-water mark grows.
 *
 * Layout (NSC_SLAB_SLOTS slots of 128 bytes, one mapping):
 *
 *     slot 0 .. high-1      used at least once; free ones in a thread's cache or
 *                           in a batch on a shared list (below, and slab.c)
 *     slot high .. N-1      never touched (the mapping's pages stay unbacked)
 *
 *     free list head: [ tag : 32 | first slot of the top batch + 1 : 32 ]   (0 = empty)
 *
 * Reuse rule. A slot's generation is its occupant's event id (`life` word,
 * below), unique in the process: a slot freed and taken again has another
 * id, so a handle or a parent link naming the old occupant never matches
 * the new one. Every attach to a slot compares the id inside the same CAS
 * that takes a reference (op_state.c), so a late child is recognised as an
 * orphan even when the slot was reused between its check and its update.
 *
 * Handles. A handle of an event that has a slot ("slab handle") is
 *
 *  63  62  61  60  59..56   55 ........ 42   41 ................ 0
 *  [D] [U] [S] [0] [type]   [slot: 14 bits]  [event id: 42 bits]
 *
 * D and U as in trace_format.h, S = 1. The id is the event's whole id (the
 * slab is used only while ids are below 2^42: 4.4e12 events; past that,
 * events get plain handles and the slab counts them as untracked), so a
 * slab handle's id and its record's id are the same number and the trace
 * does not depend on the slab. Plain handles (S = 0) are unchanged.
 */
#ifndef NSC_SLAB_H
#define NSC_SLAB_H

#include <stdatomic.h>
#include <stdint.h>

#include "hot_line.h"

#define NSC_SLAB_SLOT_BITS 14
#define NSC_SLAB_SLOTS (1u << NSC_SLAB_SLOT_BITS)
#define NSC_SLAB_SLOT_SIZE 128
#define NSC_SLAB_ID_BITS 42
#define NSC_SLAB_ID_MASK ((UINT64_C(1) << NSC_SLAB_ID_BITS) - 1)
#define NSC_HANDLE_SLAB (UINT64_C(1) << 61)

/* `life`: the occupant's id, a "done" bit (its own stop came) and the
 * number of references (children attached, updates in progress):
 *
 *     63..21 id (42 bits) | 20 done | 19..0 refs
 *
 * 0 while the slot is free. One word, so "is it still the occupant I
 * mean" and "take a reference" are one CAS. */
#define NSC_LIFE_DONE (UINT64_C(1) << 20)
#define NSC_LIFE_REFS (NSC_LIFE_DONE - 1)
#define NSC_LIFE_ID_SHIFT 21
#define NSC_LIFE(id) ((uint64_t)(id) << NSC_LIFE_ID_SHIFT)

/* Payload words the slab keeps while a slot is free and heads a batch on a
 * shared list (slab.c: the batch's other slots); no occupant's kind uses
 * them (op_state.c's table), so a pop may read them at any time. */
#define NSC_SLAB_W_BATCH0 10
#define NSC_SLAB_W_BATCH1 12

struct nsc_slab_slot {
    _Atomic uint64_t life;      /* see above */
    _Atomic uint32_t next_free; /* a free batch head's link to the next batch: index + 1 (0 = end) */
    _Atomic uint32_t kind;      /* op_state's slot kind, written before life (RELEASE) */
    _Atomic uint64_t w[14];     /* op_state's payload: every field an atomic word */
};
_Static_assert(sizeof(struct nsc_slab_slot) == NSC_SLAB_SLOT_SIZE, "slab slot");

struct nsc_slab_counts {
    uint64_t full;      /* allocations refused: every slot taken (record-only) */
    uint64_t orphans;   /* children whose parent's slot was reused or gone */
    uint64_t untracked; /* events past 2^42 ids (no slab handle possible) */
    uint32_t high;      /* slots ever used */
    uint32_t live;      /* slots taken now */
};

#define nsc_slab_slots (nsc_hot.slab_slots) /* NULL: slab off; on the hot line (hot_line.h) */

/* Session start (slow path). Returns 0, or -1 without memory (the slab
 * stays off: every event is record-only). The slab lives until the process
 * ends: slots are named by handles NCCL may still hold, and free slots sit in
 * threads' caches (below). */
int nsc_slab_create(void);
static inline int nsc_slab_on(void) {
    /* ACQUIRE: pairs with create's RELEASE store; the slots are zeroed. */
    return atomic_load_explicit((_Atomic(struct nsc_slab_slot *) *)&nsc_slab_slots,
                                memory_order_acquire) != 0;
}

/* A thread's own free slots. Most slots are taken and given back by the
 * same thread (a KernelCh or ProxyStep starts and stops on NCCL's proxy or
 * profiler thread), and a locked instruction on a shared free list costs as
 * much as the rest of such a callback: the cache makes alloc and free plain
 * loads and stores. It moves slots to and from the shared lists
 * NSC_SLAB_BATCH at a time, one CAS per batch, so slots freed on one thread
 * (an operation finished by its last child's stop) reach the thread that
 * allocates them (a batch travels as one: its first slot names the others,
 * so taking it reads one slot). Only its owner touches a cache; a thread that exits must
 * flush it (thread_state.c does). A live thread that stopped calling keeps
 * its cache's slots parked: at most NSC_SLAB_CACHE per thread state, so with
 * the default 256 thread states at most 3,840 of the 16,384 slots, never
 * lost to the trace (a full slab only makes events record-only). One line. */
#define NSC_SLAB_CACHE 15
#define NSC_SLAB_BATCH 8
struct nsc_slab_cache {
    uint32_t n;
    uint32_t idx[NSC_SLAB_CACHE];
};
_Static_assert(sizeof(struct nsc_slab_cache) == 64, "slab cache: one line");

/* A free slot's index, or -1 (full: counted). The slot's `life` is 0 and
 * owned by the caller until it publishes it. `c`: the calling thread's
 * cache, or NULL (a thread without one: the shared lists directly). */
int32_t nsc_slab_alloc(struct nsc_slab_cache *c);
/* Gives slot i back. Only the thread that moved its life to 0 (the CAS
 * that freed it) may call this, once. The payload is left as it is: the
 * next occupant writes every word before publishing `life`. */
void nsc_slab_free(struct nsc_slab_cache *c, uint32_t i);
/* Gives every slot of cache c to the shared lists (thread exit, tests). */
void nsc_slab_cache_flush(struct nsc_slab_cache *c);

void nsc_slab_count_orphan(void);
void nsc_slab_count_untracked(void);
void nsc_slab_counts(struct nsc_slab_counts *out);
/* Allocations refused so far (counts.full without the scan for `live`):
 * the watchdog's pressure signal. */
uint64_t nsc_slab_full_count(void);
/* Tests and debug builds: the free lists and the high-water mark agree
 * (every free slot is below high and listed once). Returns 0 when they do.
 * Only while no other thread allocates or frees, and every thread that did
 * has flushed its cache (exited, or nsc_slab_cache_flush). */
int nsc_slab_check_invariants(void);

/* Slot i was handed out at least once (a slab handle naming a slot above
 * the high-water mark is garbage). Relaxed: the handle reached the caller
 * through NCCL after the slot was taken. */
#define nsc_slab_high (nsc_hot.slab_high) /* on the hot line (hot_line.h) */
static inline int nsc_slab_slot_used(uint32_t i) {
    return i < atomic_load_explicit(&nsc_slab_high, memory_order_relaxed);
}

/* ---- handles ---- */
static inline int nsc_handle_is_slab(uint64_t h) { return (h & NSC_HANDLE_SLAB) != 0; }
static inline uint32_t nsc_handle_slot(uint64_t h) {
    return (uint32_t)(h >> NSC_SLAB_ID_BITS) & (NSC_SLAB_SLOTS - 1);
}
static inline uint64_t nsc_handle_make_slab(uint64_t plain, uint32_t slot) {
    return plain | NSC_HANDLE_SLAB | (uint64_t)slot << NSC_SLAB_ID_BITS;
}

#endif /* NSC_SLAB_H */
