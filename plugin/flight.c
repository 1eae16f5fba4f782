/* flight.c - the flight recorder's window of kept chunks (see flight.h). */
#include "flight.h"

#include <stdlib.h>
#include <string.h>

struct chunk {
    struct chunk *next;
    struct nsc_anchor anchor;
    uint64_t records;
    size_t stored, raw_len;
    uint16_t flags;
    unsigned char block[]; /* block header room, then the payload */
};

struct nsc_flight {
    struct chunk *head, *tail; /* oldest .. newest */
    uint64_t budget, bytes, records, dropped;
};

struct nsc_flight *nsc_flight_create(uint64_t budget_bytes) {
    struct nsc_flight *w = calloc(1, sizeof(*w));
    if (w)
        w->budget = budget_bytes;
    return w;
}

static void drop_oldest(struct nsc_flight *w) {
    struct chunk *c = w->head;
    w->head = c->next;
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
    while (w->head)
        drop_oldest(w);
    free(w);
}

int nsc_flight_keep(struct nsc_flight *w, const struct nsc_anchor *a, const void *payload,
                    size_t stored, size_t raw_len, uint16_t flags, uint64_t records) {
    size_t need = sizeof(struct chunk) + sizeof(struct nsc_block_header) + stored;
    if (need > w->budget) {
        w->dropped += records;
        return -1;
    }
    while (w->head && w->bytes + need > w->budget)
        drop_oldest(w);
    struct chunk *c = malloc(need); /* a compressor's thread, not a callback */
    if (!c) {
        w->dropped += records;
        return -1;
    }
    c->next = NULL;
    c->anchor = *a;
    c->records = records;
    c->stored = stored;
    c->raw_len = raw_len;
    c->flags = flags;
    memcpy(c->block + sizeof(struct nsc_block_header), payload, stored);
    if (w->tail)
        w->tail->next = c;
    else
        w->head = c;
    w->tail = c;
    w->bytes += need;
    w->records += records;
    return 0;
}

int nsc_flight_each(struct nsc_flight *w, nsc_flight_fn fn, void *ud) {
    for (struct chunk *c = w->head; c; c = c->next) {
        int rc = fn(ud, &c->anchor, c->block, c->flags, c->stored, c->raw_len);
        if (rc)
            return rc;
    }
    return 0;
}

uint64_t nsc_flight_records(const struct nsc_flight *w) { return w->records; }
uint64_t nsc_flight_dropped(const struct nsc_flight *w) { return w->dropped; }
