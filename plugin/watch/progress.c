// SPDX-License-Identifier: Apache-2.0
/* progress.c - per (comm, collective) the seqNumbers entered, from the
 * drainers' records (progress.h has the contract). */
#include "progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "event_types.h"

/* Open addressing over twice the pairs; removal (a comm's finalize)
 * rebuilds the table, which is rare (one comm at a time). */
#define CAP (2u * NSC_PROG_PAIRS)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct nsc_prog_pair table[CAP];
static uint32_t used;
static _Atomic uint64_t unfollowed;

static uint32_t home(uint32_t serial, uint16_t func) {
    uint64_t k = ((uint64_t)serial << 16 | func) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(k >> 40) & (CAP - 1);
}

static struct nsc_prog_pair *get(uint32_t serial, uint16_t func) {
    uint32_t i = home(serial, func);
    while (table[i].serial && (table[i].serial != serial || table[i].func != func))
        i = (i + 1) & (CAP - 1);
    if (table[i].serial)
        return &table[i];
    if (used >= NSC_PROG_PAIRS)
        return NULL;
    used++;
    memset(&table[i], 0, sizeof(table[i]));
    table[i].serial = serial;
    table[i].func = func;
    return &table[i];
}

/* A finalized comm's pairs leave; the others are placed again. */
static void drop_comm(uint32_t serial) {
    static struct nsc_prog_pair keep[NSC_PROG_PAIRS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < CAP; i++)
        if (table[i].serial && table[i].serial != serial && n < NSC_PROG_PAIRS)
            keep[n++] = table[i];
    if (n == used)
        return;
    memset(table, 0, sizeof(table));
    used = 0;
    for (uint32_t k = 0; k < n; k++) {
        struct nsc_prog_pair *p = get(keep[k].serial, keep[k].func);
        if (p)
            *p = keep[k];
    }
}

void nsc_prog_record(const struct nsc_rec *r) {
    if (r->h.kind == NSC_REC_COMM_FINALIZE) {
        pthread_mutex_lock(&mu);
        drop_comm(r->h.aux);
        pthread_mutex_unlock(&mu);
        return;
    }
    if (r->h.kind != NSC_REC_START || r->h.etype != NSC_ET_COLL || !r->u.start.d.coll.func)
        return;
    uint64_t seq = r->u.start.d.coll.seq;
    pthread_mutex_lock(&mu);
    struct nsc_prog_pair *p = get(r->h.aux, r->u.start.d.coll.func);
    if (!p) {
        pthread_mutex_unlock(&mu);
        atomic_fetch_add_explicit(&unfollowed, 1, memory_order_relaxed);
        return;
    }
    if (!p->nhist || r->h.ticks < p->first_ticks) {
        p->first_ticks = r->h.ticks;
        p->first_seq = seq;
    }
    /* Several drainers (and threads) may deliver a comm's records out of
     * order: the highest seqNumber wins, the history keeps what came. */
    if (!p->nhist || seq > p->seq) {
        p->seq = seq;
        p->ticks = r->h.ticks;
    }
    p->hseq[p->hpos] = seq;
    p->hticks[p->hpos] = r->h.ticks;
    p->hpos = (p->hpos + 1) % NSC_PROG_HIST;
    if (p->nhist < NSC_PROG_HIST)
        p->nhist++;
    pthread_mutex_unlock(&mu);
}

uint32_t nsc_prog_snapshot(struct nsc_prog_pair *out, uint32_t cap) {
    uint32_t n = 0;
    pthread_mutex_lock(&mu);
    for (uint32_t i = 0; i < CAP && n < cap; i++)
        if (table[i].serial)
            out[n++] = table[i];
    pthread_mutex_unlock(&mu);
    return n;
}

uint64_t nsc_prog_unfollowed(void) { return atomic_load_explicit(&unfollowed, memory_order_relaxed); }

uint64_t nsc_prog_entered_by(const struct nsc_prog_pair *p, uint64_t seq) {
    if (!p->nhist || seq > p->seq)
        return 0;
    /* Its own START when kept; else it was entered before every kept
     * seqNumber above it (a comm enqueues a function's collectives in
     * seqNumber order): the earliest of those bounds it from above, which
     * is the side a suspect may err on (later, never earlier). */
    uint64_t own = UINT64_MAX, bound = UINT64_MAX;
    for (uint32_t k = 0; k < p->nhist; k++) {
        if (p->hseq[k] == seq && p->hticks[k] < own)
            own = p->hticks[k];
        if (p->hseq[k] > seq && p->hticks[k] < bound)
            bound = p->hticks[k];
    }
    uint64_t t = own != UINT64_MAX ? own : bound;
    return t == UINT64_MAX ? p->ticks : t ? t : 1;
}
