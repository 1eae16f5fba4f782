// SPDX-License-Identifier: Apache-2.0
/*
 * recorder.h - the fast path shared by every API version's callbacks:
 * turning a start, stop or state call into records in the calling thread's
 * ring. Inline on purpose (habit: fast path in the header, slow paths in
 * .c files): no lock, no syscall, no allocation once the thread's state
 * exists.
 *
 * Handles given to NCCL are event ids with the type in bits 56..59 and
 * NSC_HANDLE_DROPPED in bit 63 (trace_format.h): nothing is ever
 * dereferenced through a handle or a parentObj, so a handle stays a valid
 * parent forever after its stop, and a parentObj from another process (PXN)
 * is just a number. docs/design.md explains why no slot is recycled.
 */
#ifndef NSC_RECORDER_H
#define NSC_RECORDER_H

#include <string.h>

#include "clock.h"
#include "comm_table.h"
#include "event_types.h"
#include "counters.h"
#include "slab.h"
#include "thread_state.h"
#include "trace_format.h"

/* Bits a handle of ours may have set (slab.h: bit 61 marks a slab handle,
 * whose bits 42..55 are its slot). */
#define NSC_HANDLE_VALID_BITS                                                                  \
    (NSC_HANDLE_DROPPED | NSC_HANDLE_UNRECORDED | NSC_HANDLE_SLAB | NSC_HANDLE_SAMPLED |       \
     (0xfull << NSC_HANDLE_ETYPE_SHIFT) | NSC_ID_MASK)

/* The event id of a handle: the low 42 bits of a slab handle, 56 of others. */
static inline uint64_t nsc_handle_id(uint64_t h) {
    return h & (nsc_handle_is_slab(h) ? NSC_SLAB_ID_MASK : NSC_ID_MASK);
}

/* NSC_HANDLE_SAMPLED is set on Group, Coll, P2p, GroupApi, CollApi and
 * P2pApi handles only (kernel_sample.h). */
#define NSC_HANDLE_SAMPLED_TYPES 0x707u
static inline int nsc_handle_valid(uint64_t h) {
    unsigned et = (unsigned)(h >> NSC_HANDLE_ETYPE_SHIFT) & 0xf;
    return h != 0 && (h & ~NSC_HANDLE_VALID_BITS) == 0 && et < NSC_ET_COUNT &&
           (!(h & NSC_HANDLE_SAMPLED) || (NSC_HANDLE_SAMPLED_TYPES >> et & 1)) &&
           nsc_handle_id(h) != 0;
}

/* A handle this process issued: well-formed, and its id below the ids
 * handed out so far. A garbage value (a pointer, a random number) almost
 * never passes: ids are small next to the 2^56 id space. The block of ids
 * holding h was taken (relaxed RMW) before h reached NCCL, and NCCL passing h
 * to this thread orders that before our load. Not used for parentObj, which
 * may come from another process (PXN). */
static inline int nsc_handle_issued(uint64_t h) {
    return nsc_handle_valid(h) &&
           nsc_handle_id(h) < atomic_load_explicit(&nsc_next_id, memory_order_relaxed) &&
           (!nsc_handle_is_slab(h) || nsc_slab_slot_used(nsc_handle_slot(h)));
}

/* Parent id of a parentObj of ours (0 for NULL). A value we could not have
 * made is flagged, not followed. */
static inline uint64_t nsc_parent_id(const void *parent_obj, uint16_t *flags) {
    uint64_t p = (uint64_t)(uintptr_t)parent_obj;
    if (!p)
        return 0;
    if (!nsc_handle_valid(p)) {
        *flags |= NSC_RF_BAD_PARENT;
        return 0;
    }
    /* A parent only a chained plugin took: as if NCCL had passed NULL. */
    return p & NSC_HANDLE_UNRECORDED ? 0 : nsc_handle_id(p);
}

/* A START being built: the record(s) reserved in the ring. */
struct nsc_start {
    struct nsc_thread *t;
    struct nsc_rec *rec;
    struct nsc_rec *ext; /* NULL unless requested */
    uint64_t pos;
    uint64_t id;
    unsigned n;
};

/* Reserves 1 or 2 records for a START of type etype and fills the header.
 * Returns 0, or -1 when the ring is full (the drop is counted; *handle is
 * still a valid, unique id marked dropped, so children keep their link). */
static inline int nsc_start_begin(struct nsc_start *s, struct nsc_comm *c, unsigned etype,
                                  uint64_t parent, uint16_t flags, int with_ext,
                                  uint64_t ticks, void **handle) {
    struct nsc_thread *t = s->t;
    uint64_t id = nsc_thread_next_id(t);
    uint64_t h = id | ((uint64_t)etype << NSC_HANDLE_ETYPE_SHIFT);
    unsigned n = with_ext ? 2u : 1u;
    uint64_t pos = ring_reserve(&t->ring, n);
    if (__builtin_expect(pos == UINT64_MAX, 0)) {
        nsc_thread_count_drop(t, n, 1);
        *handle = (void *)(uintptr_t)(h | NSC_HANDLE_DROPPED);
        return -1;
    }
    struct nsc_rec *r = ring_wslot(&t->ring, pos);
    memset(r, 0, sizeof(*r));
    r->h.kind = NSC_REC_START;
    r->h.etype = (uint8_t)etype;
    r->h.flags = (uint16_t)(flags | (with_ext ? NSC_RF_HAS_EXT : 0));
    r->h.aux = c->serial;
    r->h.ticks = ticks;
    r->h.id = id;
    r->u.start.parent = parent;
    s->rec = r;
    s->ext = NULL;
    if (with_ext) {
        struct nsc_rec *e = ring_wslot(&t->ring, pos + 1);
        memset(e, 0, sizeof(*e));
        e->h.kind = NSC_REC_EXT;
        e->h.etype = (uint8_t)etype;
        e->h.id = id;
        s->ext = e;
    }
    s->pos = pos;
    s->id = id;
    s->n = n;
    *handle = (void *)(uintptr_t)h;
    return 0;
}

static inline void nsc_start_commit(struct nsc_start *s) { ring_commit(&s->t->ring, s->pos, s->n); }

/* One record that is not a START: a STOP or STATE of the event behind
 * handle h (0 for a marker), or a marker. Shared by stop, state and the
 * markers so that they reserve, fill and publish the same way. */
static inline void nsc_record_one(struct nsc_thread *t, uint8_t kind, uint64_t h, uint32_t aux,
                                  uint64_t arg, uint64_t ticks) {
    uint64_t pos = ring_reserve(&t->ring, 1);
    if (__builtin_expect(pos == UINT64_MAX, 0)) {
        nsc_thread_count_drop(t, 1, 0);
        return;
    }
    struct nsc_rec *r = ring_wslot(&t->ring, pos);
    memset(r, 0, sizeof(*r));
    r->h.kind = kind;
    r->h.etype = (uint8_t)((h >> NSC_HANDLE_ETYPE_SHIFT) & 0xf);
    r->h.aux = aux;
    r->h.ticks = ticks;
    r->h.id = nsc_handle_id(h);
    r->u.state.arg = arg;
    ring_commit(&t->ring, pos, 1);
}

/* stopEvent (kind STOP) and recordEventState (kind STATE) for every version,
 * at `ticks` (the caller read the clock: a stop hands the same time to the
 * watchdog's hook before it writes the record, nccl_api.c says why). */
static inline void nsc_record_end_at(void *handle, uint8_t kind, uint32_t state, uint64_t arg,
                                     uint64_t ticks) {
    uint64_t h = (uint64_t)(uintptr_t)handle;
    if (!h)
        return;
    if (__builtin_expect(!nsc_handle_issued(h), 0)) {
        nsc_count(&nsc_counters.invalid_handle);
        return;
    }
    struct nsc_thread *t = nsc_thread_get();
    if (__builtin_expect(h & (NSC_HANDLE_DROPPED | NSC_HANDLE_UNRECORDED), 0)) {
        if (h & NSC_HANDLE_DROPPED)
            nsc_thread_count_drop(t, 1, 0);
        return; /* unrecorded: only a chained plugin has it (chain.h) */
    }
    nsc_record_one(t, kind, h, state, arg, ticks);
}

/* The same, reading the clock. Returns the call's timestamp (0 when it had
 * none: a NULL handle). */
static inline uint64_t nsc_record_end(void *handle, uint8_t kind, uint32_t state, uint64_t arg) {
    uint64_t h = (uint64_t)(uintptr_t)handle;
    if (!h)
        return 0;
    uint64_t ticks = nsc_clock_ticks();
    if (__builtin_expect(!nsc_handle_issued(h), 0)) {
        nsc_count(&nsc_counters.invalid_handle);
        return ticks;
    }
    struct nsc_thread *t = nsc_thread_get();
    if (__builtin_expect(h & (NSC_HANDLE_DROPPED | NSC_HANDLE_UNRECORDED), 0)) {
        if (h & NSC_HANDLE_DROPPED)
            nsc_thread_count_drop(t, 1, 0);
        return ticks; /* unrecorded: only a chained plugin has it (chain.h) */
    }
    nsc_record_one(t, kind, h, state, arg, ticks);
    return ticks;
}

static inline uint64_t nsc_record_stop(void *handle) {
    return nsc_record_end(handle, NSC_REC_STOP, 0, 0);
}

static inline void nsc_record_state(void *handle, int state, uint64_t arg) {
    nsc_record_end(handle, NSC_REC_STATE, (uint32_t)state, arg);
}

/* A marker record (comm init/finalize) from the calling thread. */
static inline void nsc_record_marker(enum nsc_rec_kind kind, uint32_t aux) {
    nsc_record_one(nsc_thread_get(), (uint8_t)kind, 0, aux, 0, nsc_clock_ticks());
}

#endif /* NSC_RECORDER_H */
