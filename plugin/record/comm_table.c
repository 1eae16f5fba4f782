// SPDX-License-Identifier: Apache-2.0
/* comm_table.c - communicator slots, their contexts, and their descriptions
 * for the trace (slow path; comm_table.h has the contract). */
#include "comm_table.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "id_map.h"

/* Aligned: a slot's first words (gen, serial, rank, proxied), read by
 * every start, on one line. */
struct nsc_comm nsc_comms[NSC_MAX_COMMS] __attribute__((aligned(64)));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_serial = 1;
static unsigned active_count;
/* Slots [0, bound) have been taken at least once; active_count of them are
 * taken now. Written under the lock; RELAXED loads elsewhere (a bound for
 * passes over per-slot arrays: a slot above a stale bound is one just
 * opened, which the next pass sees; what a slot holds is validated by its
 * generation or serial, never by the bound). */
static _Atomic unsigned bound;
/* Next-fit below the bound: the search for a free slot starts after the
 * last slot taken, so a slot is reused as late as possible (a context kept
 * by mistake is rejected by its generation anyway; this only makes reuse
 * rarer). The bound grows only when every slot below it is taken, so the
 * slots ever written are as many as the most comms open at once. */
static unsigned cursor;
/* Descriptions of comms closed before the flusher took them, in closing
 * order: [head, n) are pending. */
static struct nsc_comm_info *retired;
static unsigned retired_head, retired_n, retired_cap;
static _Atomic uint64_t overflows;
/* serial -> slot of every taken slot, for nsc_comm_serial_live (lock).
 * Grows on the open path (init may allocate) and is given back when the
 * last comm closes. An insert that failed for memory leaves it incomplete
 * (`serials_lost`) until then: a serial it lacks is "not known" then, not
 * "ended". */
static struct nsc_id_map serials;
static int serials_ready, serials_lost;

static void count_overflow(uint64_t n) {
    /* Relaxed: a statistic; the flusher reads it whenever it writes STATS. */
    atomic_fetch_add_explicit(&overflows, n, memory_order_relaxed);
}

/* Keeps a closed comm's pending description (lock held). */
static void retire(const struct nsc_comm_info *info) {
    if (retired_n == retired_cap && retired_head > 0) { /* takes stopped early */
        memmove(retired, retired + retired_head, (retired_n - retired_head) * sizeof(*retired));
        retired_n -= retired_head;
        retired_head = 0;
    }
    if (retired_n == retired_cap) {
        unsigned cap = retired_cap ? retired_cap * 2 : 64;
        if (cap > NSC_COMM_RETIRED_MAX)
            cap = NSC_COMM_RETIRED_MAX;
        struct nsc_comm_info *p =
            cap > retired_cap ? realloc(retired, (size_t)cap * sizeof(*p)) : NULL;
        if (!p) {
            count_overflow(1);
            return;
        }
        retired = p;
        retired_cap = cap;
    }
    retired[retired_n++] = *info;
}

void *nsc_comm_context(const struct nsc_comm *c) {
    uint64_t g = atomic_load_explicit(&c->gen, memory_order_relaxed); /* our own slot */
    uint64_t v = (g & NSC_COMM_GEN_MASK) << NSC_COMM_GEN_SHIFT |
                 (uint64_t)NSC_COMM_CTX_TAG << NSC_COMM_INDEX_BITS | (uint64_t)(c - nsc_comms);
    return (void *)(uintptr_t)v;
}

struct nsc_comm *nsc_comm_open(uint64_t comm_id, const char *name, int nnodes, int nranks,
                               int rank, uint64_t init_ticks) {
    pthread_mutex_lock(&lock);
    struct nsc_comm *c = NULL;
    unsigned nb = atomic_load_explicit(&bound, memory_order_relaxed); /* ours: the lock */
    if (active_count < nb) { /* a free slot below the bound */
        for (unsigned k = 0; k < nb; k++) {
            unsigned i = (cursor + k) % nb;
            if (!nsc_comms[i].in_use) {
                c = &nsc_comms[i];
                cursor = i + 1;
                break;
            }
        }
    } else if (nb < NSC_MAX_COMMS) { /* every slot below is taken: one more */
        c = &nsc_comms[nb];
        cursor = nb + 1;
        atomic_store_explicit(&bound, nb + 1, memory_order_relaxed);
    }
    if (c) {
        c->serial = next_serial++;
        if (next_serial == 0) /* after 2^32 - 1 comms: 0 means "no comm" */
            next_serial = 1;
        atomic_store_explicit(&c->rank, rank, memory_order_relaxed);
        /* A comm across nodes has ProxyOps from its first operation: it
         * takes slots from the start, so a hang in that first operation (a
         * startup barrier, a new subgroup's first collective) is watched
         * too. Within a node it learns from its first ProxyOp. */
        atomic_store_explicit(&c->proxied, nnodes > 1, memory_order_relaxed);
        atomic_store_explicit(&c->learning, rank < 0 || !comm_id, memory_order_relaxed);
        memset(&c->info, 0, sizeof(c->info));
        c->info.serial = c->serial;
        c->info.rank = rank;
        c->info.nranks = nranks;
        c->info.nnodes = nnodes;
        c->info.comm_id = comm_id;
        c->info.init_ticks = init_ticks;
        snprintf(c->info.name, sizeof(c->info.name), "%s", name ? name : "");
        c->in_use = 1;
        c->dirty = 1;
        active_count++;
        if (!serials_ready)
            serials_ready = nsc_id_map_init(&serials, 64, sizeof(uint32_t), NSC_ID_MAP_GROW) == 0;
        uint32_t *slot = serials_ready ? nsc_id_map_insert(&serials, c->serial, NULL) : NULL;
        if (slot)
            *slot = (uint32_t)(c - nsc_comms);
        else
            serials_lost = 1;
        /* A free slot's generation is even; this makes it odd (open).
         * RELEASE: pairs with nsc_comm_from_context's ACQUIRE, which then
         * sees serial and info filled for this generation. */
        uint64_t g = atomic_load_explicit(&c->gen, memory_order_relaxed);
        atomic_store_explicit(&c->gen, g + 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return c;
}

struct nsc_comm *nsc_comm_claim_context(const void *ctx) {
    pthread_mutex_lock(&lock);
    struct nsc_comm *c = nsc_comm_from_context(ctx);
    if (c) {
        /* Ends the generation: a second claim with ctx fails here, and
         * callbacks still holding ctx are rejected. Relaxed: nothing is
         * published by ending it (the slot's fields stay as they are until
         * nsc_comm_close and the next open, both under the lock). */
        uint64_t g = atomic_load_explicit(&c->gen, memory_order_relaxed);
        atomic_store_explicit(&c->gen, g + 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock);
    return c;
}

void nsc_comm_close(struct nsc_comm *c) {
    pthread_mutex_lock(&lock);
    if (c->in_use) {
        uint64_t g = atomic_load_explicit(&c->gen, memory_order_relaxed);
        if (g & 1) /* no claim came first */
            atomic_store_explicit(&c->gen, g + 1, memory_order_relaxed);
        if (c->dirty)
            retire(&c->info);
        c->dirty = 0;
        c->in_use = 0;
        active_count--;
        if (serials_ready)
            nsc_id_map_remove(&serials, c->serial);
        if (!active_count && serials_ready) { /* nothing left for an unload to leak */
            nsc_id_map_destroy(&serials);
            serials_ready = serials_lost = 0;
        }
    }
    pthread_mutex_unlock(&lock);
}

unsigned nsc_comm_slot_bound(void) { return atomic_load_explicit(&bound, memory_order_relaxed); }

int nsc_comm_serial_live(uint32_t serial) {
    pthread_mutex_lock(&lock);
    const uint32_t *slot = serials_ready ? nsc_id_map_find(&serials, serial) : NULL;
    int live;
    if (slot) {
        const struct nsc_comm *c = &nsc_comms[*slot];
        /* Relaxed: gen changes only under the lock, which we hold. */
        live = c->in_use && c->serial == serial &&
               (atomic_load_explicit(&c->gen, memory_order_relaxed) & 1);
    } else {
        live = serials_lost ? -1 : 0;
    }
    pthread_mutex_unlock(&lock);
    return live;
}

unsigned nsc_comm_active_count(void) {
    pthread_mutex_lock(&lock);
    unsigned n = active_count;
    pthread_mutex_unlock(&lock);
    return n;
}

void nsc_comm_learn_slow(struct nsc_comm *c, const void *ctx, int rank, uint64_t comm_id,
                         const char *name) {
    pthread_mutex_lock(&lock);
    /* The opening ctx names is still the slot's (and not finalizing). */
    uint64_t g = atomic_load_explicit(&c->gen, memory_order_relaxed);
    int live = (g & 1) && (g & NSC_COMM_GEN_MASK) == (uint64_t)(uintptr_t)ctx >> NSC_COMM_GEN_SHIFT;
    if (c->in_use && live && atomic_load_explicit(&c->learning, memory_order_relaxed)) {
        if (atomic_load_explicit(&c->rank, memory_order_relaxed) < 0 && rank >= 0) {
            atomic_store_explicit(&c->rank, rank, memory_order_relaxed);
            c->info.rank = rank;
            c->dirty = 1;
        }
        if (!c->info.comm_id && comm_id) {
            c->info.comm_id = comm_id;
            snprintf(c->info.name, sizeof(c->info.name), "%s", name ? name : "");
            c->dirty = 1;
        }
        if (c->info.rank >= 0 && c->info.comm_id)
            atomic_store_explicit(&c->learning, 0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock);
}

unsigned nsc_comm_take_pending(struct nsc_comm_info *out, unsigned max) {
    pthread_mutex_lock(&lock);
    unsigned n = retired_n - retired_head;
    if (n > max)
        n = max;
    if (n) {
        memcpy(out, retired + retired_head, (size_t)n * sizeof(*out));
        retired_head += n;
    }
    if (retired_head == retired_n && retired) {
        /* Drained: give the memory back (a burst is over, or the session's
         * last take ran; nothing is left for an unload to leak). */
        free(retired);
        retired = NULL;
        retired_head = retired_n = retired_cap = 0;
    }
    /* Then open comms, by a pass over the slots ever taken: one flag test
     * per slot below the bound per call, a few calls per chunk. */
    unsigned nb = atomic_load_explicit(&bound, memory_order_relaxed);
    for (unsigned i = 0; i < nb && n < max; i++)
        if (nsc_comms[i].dirty) {
            out[n++] = nsc_comms[i].info;
            nsc_comms[i].dirty = 0;
        }
    pthread_mutex_unlock(&lock);
    return n;
}

void nsc_comm_reset_pending(void) {
    pthread_mutex_lock(&lock);
    count_overflow(retired_n - retired_head);
    free(retired);
    retired = NULL;
    retired_head = retired_n = retired_cap = 0;
    unsigned nb = atomic_load_explicit(&bound, memory_order_relaxed);
    for (unsigned i = 0; i < nb; i++)
        nsc_comms[i].dirty = nsc_comms[i].in_use;
    pthread_mutex_unlock(&lock);
}

uint64_t nsc_comm_overflows(void) { return atomic_load_explicit(&overflows, memory_order_relaxed); }

unsigned nsc_comm_describe_open(struct nsc_comm_info *out, unsigned max) {
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    unsigned nb = atomic_load_explicit(&bound, memory_order_relaxed);
    for (unsigned i = 0; i < nb && n < max; i++)
        if (nsc_comms[i].in_use)
            out[n++] = nsc_comms[i].info;
    pthread_mutex_unlock(&lock);
    return n;
}
