/*
 * comm_table.h - the contexts ncclscope hands NCCL: one slot per live
 * communicator in a static array.
 *
 * A context NCCL passes back is trusted only if it points exactly at a slot
 * of this array and the slot is active: nsc_comm_from_context() checks that
 * with arithmetic on the address before reading anything through it, so a
 * context we did not create (another plugin's, a stale or garbage pointer)
 * is rejected without being dereferenced.
 *
 * Slots are taken and released in init/finalize (slow path, under the
 * session mutex). `active` is stored with RELEASE after the slot is filled
 * and loaded with ACQUIRE by callbacks.
 */
#ifndef NSC_COMM_TABLE_H
#define NSC_COMM_TABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace_format.h"

#define NSC_MAX_COMMS 1024

struct nsc_comm {
    _Atomic uint32_t active;
    uint32_t serial;
    _Atomic int32_t rank; /* -1 until known (v1-v3 learn it from descriptors) */
    uint32_t pad;
    struct nsc_comm_info info;
    char pad2[256 - 16 - sizeof(struct nsc_comm_info)];
};
_Static_assert(sizeof(struct nsc_comm) == 256, "comm slot is a power of two");

extern struct nsc_comm nsc_comms[NSC_MAX_COMMS];

static inline struct nsc_comm *nsc_comm_from_context(const void *ctx) {
    uintptr_t off = (uintptr_t)ctx - (uintptr_t)nsc_comms;
    if (off >= sizeof(nsc_comms) || (off & (sizeof(struct nsc_comm) - 1)) != 0)
        return 0;
    struct nsc_comm *c = (struct nsc_comm *)ctx;
    /* ACQUIRE: pairs with the RELEASE in nsc_comm_open; the slot's fields are set. */
    return atomic_load_explicit(&c->active, memory_order_acquire) ? c : 0;
}

/* Takes a free slot and fills it (serial assigned here). NULL when full. */
struct nsc_comm *nsc_comm_open(uint64_t comm_id, const char *name, int nnodes, int nranks,
                               int rank, uint64_t init_ticks);
void nsc_comm_close(struct nsc_comm *c);
/* Number of active comms. */
unsigned nsc_comm_active_count(void);

/* v1-v3: NCCL's init does not tell the rank; the first descriptor does.
 * Cheap when already known (one relaxed load). */
void nsc_comm_learn_rank_slow(struct nsc_comm *c, int rank);
static inline void nsc_comm_learn_rank(struct nsc_comm *c, int rank) {
    if (__builtin_expect(atomic_load_explicit(&c->rank, memory_order_relaxed) < 0, 0))
        nsc_comm_learn_rank_slow(c, rank);
}

/* The flusher takes the comm descriptions published since its last call
 * (new comms and rank updates) into out[0..max); returns how many. */
unsigned nsc_comm_take_pending(struct nsc_comm_info *out, unsigned max);
/* Forgets pending descriptions (session start). */
void nsc_comm_reset_pending(void);

#endif /* NSC_COMM_TABLE_H */
