// SPDX-License-Identifier: Apache-2.0
/* flight.c - the flight recorder's window of kept chunks (see flight.h). */
#include "flight.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct chunk {
    struct chunk *_Atomic next;
    struct nsc_anchor anchor;
    uint64_t records;
    size_t stored, raw_len;
    uint16_t flags;
    unsigned char block[]; /* block header room, then the payload */
};

/* The list is read by one more reader: the crash handler (nsc_flight_each_
 * in_signal), on whatever thread crashed, while the writing compressor may
 * run on. Links are published with RELEASE and read with ACQUIRE, and a
 * frozen window takes nothing and frees nothing, so the handler walks
 * chunks that stay put (but for a chunk being freed at the very moment of
 * the freeze: then the dump's last blocks may be damaged, which readers
 * detect by the frame checksum). */
struct nsc_flight {
    struct chunk *_Atomic head;
    struct chunk *tail; /* oldest .. newest */
    uint64_t budget, bytes, records, dropped;
    _Atomic int frozen;
};

struct nsc_flight *nsc_flight_create(uint64_t budget_bytes) {
    struct nsc_flight *w = calloc(1, sizeof(*w));
    if (w)
        w->budget = budget_bytes;
    return w;
}

static void drop_oldest(struct nsc_flight *w) {
    struct chunk *c = atomic_load_explicit(&w->head, memory_order_relaxed);
    atomic_store_explicit(&w->head, atomic_load_explicit(&c->next, memory_order_relaxed),
                          memory_order_release);
    if (!w->head)
        w->tail = NULL;
    w->bytes -= sizeof(*c) + sizeof(struct nsc_block_header) + c->stored;
    w->records -= c->records;
    w->dropped += c->records;
    free(c);
}

void nsc_flight_destroy(struct nsc_flight *w) {
    if (!w)
        return;
    while (atomic_load_explicit(&w->head, memory_order_relaxed))
        drop_oldest(w);
    free(w);
}

int nsc_flight_keep(struct nsc_flight *w, const struct nsc_anchor *a, const void *payload,
                    size_t stored, size_t raw_len, uint16_t flags, uint64_t records) {
    size_t need = sizeof(struct chunk) + sizeof(struct nsc_block_header) + stored;
    if (atomic_load_explicit(&w->frozen, memory_order_acquire))
        return -2; /* not counted: the caller keeps the chunk for the dump */
    if (need > w->budget) {
        w->dropped += records;
        return -1;
    }
    while (atomic_load_explicit(&w->head, memory_order_relaxed) && w->bytes + need > w->budget)
        drop_oldest(w);
    struct chunk *c = malloc(need); /* a compressor's thread, not a callback */
    if (!c) {
        w->dropped += records;
        return -1;
    }
    atomic_store_explicit(&c->next, NULL, memory_order_relaxed);
    c->anchor = *a;
    c->records = records;
    c->stored = stored;
    c->raw_len = raw_len;
    c->flags = flags;
    memcpy(c->block + sizeof(struct nsc_block_header), payload, stored);
    /* RELEASE: the chunk's bytes before the link that makes it reachable */
    if (atomic_load_explicit(&w->head, memory_order_relaxed))
        atomic_store_explicit(&w->tail->next, c, memory_order_release);
    else
        atomic_store_explicit(&w->head, c, memory_order_release);
    w->tail = c;
    w->bytes += need;
    w->records += records;
    return 0;
}

int nsc_flight_each(struct nsc_flight *w, nsc_flight_fn fn, void *ud) {
    for (struct chunk *c = atomic_load_explicit(&w->head, memory_order_acquire); c;
         c = atomic_load_explicit(&c->next, memory_order_acquire)) {
        int rc = fn(ud, &c->anchor, c->block, c->flags, c->stored, c->raw_len);
        if (rc)
            return rc;
    }
    return 0;
}

uint64_t nsc_flight_records(const struct nsc_flight *w) { return w->records; }
uint64_t nsc_flight_dropped(const struct nsc_flight *w) { return w->dropped; }

void nsc_flight_freeze(struct nsc_flight *w) {
    atomic_store_explicit(&w->frozen, 1, memory_order_release);
}

void nsc_flight_thaw(struct nsc_flight *w) {
    atomic_store_explicit(&w->frozen, 0, memory_order_release);
}
