// SPDX-License-Identifier: Apache-2.0
/*
 * test_comm_table.c - contexts and their generations (stale and garbage
 * contexts rejected, a second finalize harmless after the slot's reuse),
 * the table's reuse over 100,000 open/close cycles, and comm descriptions:
 * none lost between two takes however many comms came and went, each
 * reported once, what cannot be kept counted; 10,000 comms open at once,
 * and slots written only as far as the most comms open at once.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm_table.h"

static unsigned slot_of(const struct nsc_comm *c) { return (unsigned)(c - nsc_comms); }

static struct nsc_comm *open_n(uint64_t id, int rank) {
    char name[32];
    snprintf(name, sizeof(name), "c%llu", (unsigned long long)id);
    return nsc_comm_open(id, name, 1, 8, rank, 1000 + id);
}

/* Takes everything pending (in batches, as the flusher does). */
static unsigned take_all(struct nsc_comm_info *out, unsigned cap) {
    unsigned n = 0, k;
    struct nsc_comm_info batch[256];
    while ((k = nsc_comm_take_pending(batch, 256)) > 0) {
        for (unsigned i = 0; i < k && n < cap; i++)
            out[n++] = batch[i];
    }
    return n;
}

static struct nsc_comm_info taken[200000];

static void test_contexts(void) {
    CHECK(!nsc_comm_from_context(NULL));
    CHECK(!nsc_comm_from_context((void *)1));
    struct nsc_comm *a = open_n(1, 0);
    CHECK(a != NULL);
    void *ca = nsc_comm_context(a);
    CHECK(ca != NULL && nsc_comm_from_context(ca) == a);
    /* the slot's address is not a context (the old scheme's) */
    CHECK(!nsc_comm_from_context(a));
    /* another generation or another tag: rejected */
    uintptr_t v = (uintptr_t)ca;
    CHECK(!nsc_comm_from_context((void *)(v + (1ull << NSC_COMM_GEN_SHIFT))));
    CHECK(!nsc_comm_from_context((void *)(v - (2ull << NSC_COMM_GEN_SHIFT))));
    CHECK(!nsc_comm_from_context((void *)(v ^ (1ull << NSC_COMM_INDEX_BITS))));
    CHECK(!nsc_comm_from_context((void *)(v ^ 1))); /* a free neighbour slot */

    /* live by serial until its finalize claims it (the live metrics ask) */
    uint32_t sa = a->serial;
    CHECK(nsc_comm_serial_live(sa) == 1 && nsc_comm_serial_live(sa + 1) == 0);
    /* finalize: claimed once; the context is dead from then on */
    CHECK(nsc_comm_claim_context(ca) == a);
    CHECK(!nsc_comm_from_context(ca));
    CHECK(nsc_comm_serial_live(sa) == 0);
    CHECK(nsc_comm_active_count() == 1); /* taken until closed */
    CHECK(!nsc_comm_claim_context(ca));  /* a second finalize before close */
    nsc_comm_close(a);
    CHECK(nsc_comm_active_count() == 0);
    CHECK(!nsc_comm_claim_context(ca)); /* and after */
    nsc_comm_close(a);                  /* closing a free slot does nothing */
    CHECK(nsc_comm_active_count() == 0);

    /* reuse a's slot (next-fit: it comes round after every other slot) */
    unsigned s = slot_of(a);
    struct nsc_comm *b = NULL;
    for (uint64_t i = 0; i < 2 * NSC_MAX_COMMS && !b; i++) {
        struct nsc_comm *c = open_n(100 + i, 0);
        if (slot_of(c) == s)
            b = c;
        else
            nsc_comm_close(c);
    }
    CHECK(b == a);
    CHECK(nsc_comm_serial_live(sa) == 0 && nsc_comm_serial_live(b->serial) == 1);
    void *cb = nsc_comm_context(b);
    CHECK(cb != ca && nsc_comm_from_context(cb) == b);
    /* the stale context neither validates nor finalizes the new comm */
    CHECK(!nsc_comm_from_context(ca));
    CHECK(!nsc_comm_claim_context(ca));
    CHECK(nsc_comm_from_context(cb) == b && nsc_comm_active_count() == 1);
    /* closing without a claim (process exit) also ends the generation */
    nsc_comm_close(b);
    CHECK(!nsc_comm_from_context(cb) && nsc_comm_active_count() == 0);
    take_all(taken, 200000);
}

/* Random 64-bit values and pointer-like values are not taken for live
 * contexts (a table that trusted the pointer took garbage a third of the time). */
static void test_garbage(void) {
    struct nsc_comm *live[64];
    for (int i = 0; i < 64; i++)
        live[i] = open_n(500 + (uint64_t)i, 0);
    uint64_t x = 88172645463325252ull;
    unsigned accepted = 0;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        accepted += nsc_comm_from_context((void *)(uintptr_t)x) != NULL;
        accepted += nsc_comm_from_context((void *)(uintptr_t)(x & 0x00007ffffffffff0ull)) != NULL;
        accepted += nsc_comm_from_context((void *)(uintptr_t)(x & 0xffff)) != NULL;
    }
    CHECK(accepted == 0);
    for (int i = 0; i < 64; i++)
        nsc_comm_close(live[i]);
    take_all(taken, 200000);
}

/* The table has no cap that cycles reach: 100,000
 * open/close cycles, with long-lived comms beside them, a take every
 * 1,000; every description taken exactly once, every context dead after. */
static void test_cycles(void) {
    static void *ctxs[100000];
    static uint32_t serials[100000];
    struct nsc_comm *anchors[8];
    for (int i = 0; i < 8; i++)
        anchors[i] = open_n(900000 + (uint64_t)i, i);
    uint64_t over0 = nsc_comm_overflows();
    unsigned n = 0;
    int ok = 1;
    for (int i = 0; i < 100000; i++) {
        struct nsc_comm *c = open_n((uint64_t)i + 1000000, i % 8);
        if (!c) {
            ok = 0;
            break;
        }
        serials[i] = c->serial;
        ctxs[i] = nsc_comm_context(c);
        if (nsc_comm_claim_context(ctxs[i]) != c)
            ok = 0;
        nsc_comm_close(c);
        if (i % 1000 == 999)
            n += take_all(taken + n, 200000 - n);
    }
    CHECK(ok);
    n += take_all(taken + n, 200000 - n);
    CHECK(n == 100000 + 8);
    CHECK(nsc_comm_overflows() == over0);
    /* each cycle's description once, right fields; anchors once */
    static unsigned char seen[100000];
    unsigned anchors_seen = 0, right = 0;
    uint32_t s0 = serials[0];
    for (unsigned i = 0; i < n; i++) {
        if (taken[i].comm_id >= 900000 && taken[i].comm_id < 900008) {
            anchors_seen++;
            continue;
        }
        uint64_t k = taken[i].comm_id - 1000000;
        if (k < 100000 && taken[i].serial == s0 + k && !seen[k] &&
            taken[i].rank == (int)(k % 8) && taken[i].nranks == 8 &&
            taken[i].init_ticks == 1000 + taken[i].comm_id) {
            char name[32];
            snprintf(name, sizeof(name), "c%llu", (unsigned long long)taken[i].comm_id);
            if (strcmp(taken[i].name, name) == 0) {
                seen[k] = 1;
                right++;
            }
        }
    }
    CHECK(right == 100000 && anchors_seen == 8);
    unsigned alive = 0;
    for (int i = 0; i < 100000; i++)
        alive += nsc_comm_from_context(ctxs[i]) != NULL;
    CHECK(alive == 0);
    for (int i = 0; i < 8; i++) {
        CHECK(nsc_comm_from_context(nsc_comm_context(anchors[i])) == anchors[i]);
        nsc_comm_close(anchors[i]);
    }
    CHECK(nsc_comm_active_count() == 0);
    CHECK(take_all(taken, 200000) == 0); /* anchors were taken already */
}

/* 3,000 comms opened between two takes (up to 1,000 open
 * at once, ranks learnt for some after open, as v1-v3 do): all 3,000
 * descriptions come out, each once, with the rank learnt. */
static void test_burst(void) {
    uint64_t over0 = nsc_comm_overflows();
    CHECK(take_all(taken, 200000) == 0);
    static struct nsc_comm *open_now[1000];
    uint32_t first = 0;
    for (int i = 0; i < 3000; i++) {
        int rank = i % 3 == 0 ? -1 : i % 16;
        struct nsc_comm *c = open_n(2000000 + (uint64_t)i, rank);
        CHECK(c != NULL);
        if (i == 0)
            first = c->serial;
        if (rank < 0 && i % 2 == 0)
            nsc_comm_learn(c, nsc_comm_context(c), i % 16, 0, NULL); /* learnt; the odd ones never learn */
        if (open_now[i % 1000])
            nsc_comm_close(open_now[i % 1000]);
        open_now[i % 1000] = c;
    }
    unsigned n = take_all(taken, 200000);
    CHECK(n == 3000);
    static unsigned char seen[3000];
    unsigned right = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t k = taken[i].comm_id - 2000000;
        int want_rank = k % 3 == 0 ? (k % 2 == 0 ? (int)(k % 16) : -1) : (int)(k % 16);
        if (k < 3000 && !seen[k] && taken[i].serial == first + k && taken[i].rank == want_rank) {
            seen[k] = 1;
            right++;
        }
    }
    CHECK(right == 3000);
    CHECK(nsc_comm_overflows() == over0);
    /* a rank learnt after the take is pending again, alone */
    struct nsc_comm *late = open_n(3000000, -1);
    CHECK(take_all(taken, 200000) == 1);
    nsc_comm_learn(late, nsc_comm_context(late), 5, 0, NULL);
    nsc_comm_learn(late, nsc_comm_context(late), 6, 0, NULL); /* known now: ignored */
    CHECK(take_all(taken, 200000) == 1 && taken[0].serial == late->serial && taken[0].rank == 5);
    void *late_ctx = nsc_comm_context(late);
    nsc_comm_close(late);
    nsc_comm_learn_slow(late, late_ctx, 7, 0, NULL); /* closed: ignored */
    CHECK(take_all(taken, 200000) == 0);
    /* v1-v3: neither rank nor commHash from init; a ProxyOp tells the rank,
     * the first Coll the commHash and name, a later one changes nothing */
    struct nsc_comm *v1 = open_n(0, -1);
    CHECK(take_all(taken, 200000) == 1 && taken[0].comm_id == 0 && taken[0].rank == -1);
    nsc_comm_learn(v1, nsc_comm_context(v1), 3, 0, NULL);
    CHECK(take_all(taken, 200000) == 1 && taken[0].rank == 3 && taken[0].comm_id == 0);
    CHECK(atomic_load(&v1->learning) == 1);
    nsc_comm_learn(v1, nsc_comm_context(v1), 3, 0xabcdefull, "world");
    CHECK(take_all(taken, 200000) == 1 && taken[0].comm_id == 0xabcdefull &&
          !strcmp(taken[0].name, "world") && taken[0].rank == 3);
    CHECK(atomic_load(&v1->learning) == 0);
    nsc_comm_learn(v1, nsc_comm_context(v1), 4, 0x1234ull, "other"); /* known: ignored */
    CHECK(take_all(taken, 200000) == 0);
    /* a descriptor of a comm whose slot was reopened (a callback that passed
     * the context check just before the finalize): the new comm learns
     * nothing from it */
    void *old = nsc_comm_context(v1);
    nsc_comm_close(v1);
    CHECK(take_all(taken, 200000) == 0);
    struct nsc_comm *next = NULL;
    for (int k = 0; k < (int)NSC_MAX_COMMS && next != v1; k++) { /* the same slot again */
        if (next)
            nsc_comm_close(next);
        next = open_n(0, -1);
    }
    CHECK(next == v1);
    take_all(taken, 200000);
    nsc_comm_learn(next, old, 2, 0x5555ull, "stale");
    CHECK(take_all(taken, 200000) == 0 && next->info.comm_id == 0 && next->info.rank == -1);
    nsc_comm_learn(next, nsc_comm_context(next), 2, 0x6666ull, "new");
    CHECK(take_all(taken, 200000) == 1 && taken[0].comm_id == 0x6666ull && taken[0].rank == 2);
    nsc_comm_close(next);
    CHECK(take_all(taken, 200000) == 0);
    for (int i = 0; i < 1000; i++)
        nsc_comm_close(open_now[i]);
    CHECK(take_all(taken, 200000) == 0 && nsc_comm_active_count() == 0);
}

/* A flusher that cannot take (frozen disk) while comms churn: the retired
 * list keeps NSC_COMM_RETIRED_MAX closed comms' descriptions and counts
 * the rest; open comms' descriptions are never lost (their slot keeps
 * them). */
static void test_retired_limit(void) {
    uint64_t over0 = nsc_comm_overflows();
    struct nsc_comm *keep = open_n(4000000, 1);
    for (unsigned i = 0; i < NSC_COMM_RETIRED_MAX + 7; i++)
        nsc_comm_close(open_n(5000000 + (uint64_t)i, 0));
    CHECK(nsc_comm_overflows() - over0 == 7);
    unsigned n = take_all(taken, 200000);
    CHECK(n == NSC_COMM_RETIRED_MAX + 1);
    /* closed ones come first, in closing order; the oldest are kept */
    CHECK(taken[0].comm_id == 5000000 &&
          taken[NSC_COMM_RETIRED_MAX - 1].comm_id == 5000000 + NSC_COMM_RETIRED_MAX - 1);
    CHECK(taken[NSC_COMM_RETIRED_MAX].comm_id == 4000000);
    /* the list works again after a burst gave its memory back */
    nsc_comm_close(open_n(6000000, 0));
    CHECK(take_all(taken, 200000) == 1 && taken[0].comm_id == 6000000);
    nsc_comm_close(keep);
    CHECK(take_all(taken, 200000) == 0);
}

/* Takes that stop early (a flusher taking at most one batch) lose nothing. */
static void test_partial_takes(void) {
    for (int i = 0; i < 1000; i++)
        nsc_comm_close(open_n(7000000 + (uint64_t)i, 0));
    struct nsc_comm *o[10];
    for (int i = 0; i < 10; i++)
        o[i] = open_n(7100000 + (uint64_t)i, 0);
    struct nsc_comm_info b[100];
    unsigned n = nsc_comm_take_pending(b, 100);
    CHECK(n == 100 && b[0].comm_id == 7000000);
    /* more closes while 900 are still waiting (the list is compacted) */
    for (int i = 0; i < 300; i++)
        nsc_comm_close(open_n(7200000 + (uint64_t)i, 0));
    n += take_all(taken, 200000);
    CHECK(n == 1000 + 10 + 300);
    for (int i = 0; i < 10; i++)
        nsc_comm_close(o[i]);
}

/* A new session's file describes the comms still open; closed comms not
 * taken by the previous session are counted as lost. */
static void test_reset(void) {
    struct nsc_comm *a = open_n(8000000, 0), *b = open_n(8000001, 1);
    CHECK(take_all(taken, 200000) == 2);
    nsc_comm_close(open_n(8000002, 2));
    uint64_t over0 = nsc_comm_overflows();
    nsc_comm_reset_pending();
    CHECK(nsc_comm_overflows() - over0 == 1);
    unsigned n = take_all(taken, 200000);
    CHECK(n == 2 && taken[0].comm_id + taken[1].comm_id == 8000000 + 8000001);
    nsc_comm_close(a);
    nsc_comm_close(b);
    take_all(taken, 200000);
}

/* 10,000 comms open at once (elastic jobs, many subgroups): each gets its
 * own slot and a context that names it, every description comes out once;
 * the slots written are the first 10,000 and no more (the bound), and
 * closing half of them and opening 5,000 others reuses their slots instead
 * of writing new ones. Contexts past the bound never validate. */
static void test_many_open(void) {
    enum { MANY = 10000 };
    static struct nsc_comm *c[MANY];
    static void *ctx[MANY];
    static unsigned char seen[NSC_MAX_COMMS];
    take_all(taken, 200000);
    unsigned bound0 = nsc_comm_slot_bound();
    int ok = 1;
    for (unsigned i = 0; i < MANY && ok; i++) {
        c[i] = open_n(10000000 + i, (int)(i % 8));
        ok = c[i] != NULL;
        if (ok)
            ctx[i] = nsc_comm_context(c[i]);
    }
    CHECK(ok && nsc_comm_active_count() == MANY);
    if (!ok)
        return;
    unsigned right = 0, distinct = 0;
    for (unsigned i = 0; i < MANY; i++) {
        right += nsc_comm_from_context(ctx[i]) == c[i];
        unsigned s = slot_of(c[i]);
        distinct += s < NSC_MAX_COMMS && !seen[s];
        if (s < NSC_MAX_COMMS)
            seen[s] = 1;
    }
    CHECK(right == MANY && distinct == MANY);
    unsigned live = 0;
    for (unsigned i = 0; i < MANY; i++)
        live += nsc_comm_serial_live(c[i]->serial) == 1;
    CHECK(live == MANY);
    unsigned bound = nsc_comm_slot_bound();
    CHECK(bound == (bound0 > MANY ? bound0 : MANY));
    unsigned below = 0;
    for (unsigned i = 0; i < MANY; i++)
        below += slot_of(c[i]) < bound;
    CHECK(below == MANY);
    /* a context's index past the bound: never a live comm */
    uintptr_t v = (uintptr_t)ctx[0] & ~(uintptr_t)(NSC_MAX_COMMS - 1);
    unsigned past = 0;
    for (unsigned i = bound; i < NSC_MAX_COMMS; i++)
        past += nsc_comm_from_context((void *)(v | i)) != NULL;
    CHECK(past == 0);
    unsigned n = take_all(taken, 200000);
    unsigned found = 0;
    for (unsigned i = 0; i < n; i++)
        found += taken[i].comm_id >= 10000000 && taken[i].comm_id < 10000000 + MANY &&
                 taken[i].rank == (int)((taken[i].comm_id - 10000000) % 8);
    CHECK(n == MANY && found == MANY);
    /* half go, 5,000 others come: the same slots, the bound unchanged */
    static uint32_t gone[MANY / 2];
    for (unsigned i = 0; i < MANY; i += 2) {
        gone[i / 2] = c[i]->serial;
        nsc_comm_close(c[i]);
    }
    for (unsigned i = 0; i < MANY; i += 2) {
        c[i] = open_n(20000000 + i, 0);
        ok &= c[i] != NULL;
    }
    CHECK(ok && nsc_comm_slot_bound() == bound && nsc_comm_active_count() == MANY);
    unsigned stale = 0;
    for (unsigned i = 0; i < MANY; i += 2)
        stale += nsc_comm_from_context(ctx[i]) != NULL; /* their slots have new comms */
    CHECK(stale == 0);
    /* by serial: the closed half ended, the comms in their slots now live */
    unsigned right_live = 0;
    for (unsigned i = 0; i < MANY; i++)
        right_live += nsc_comm_serial_live(c[i]->serial) == 1 &&
                      (i % 2 || nsc_comm_serial_live(gone[i / 2]) == 0);
    CHECK(right_live == MANY);
    uint32_t first = c[1]->serial;
    for (unsigned i = 0; i < MANY; i++)
        if (c[i])
            nsc_comm_close(c[i]);
    CHECK(nsc_comm_serial_live(first) == 0);
    CHECK(nsc_comm_active_count() == 0);
    take_all(taken, 200000);
}

static void test_full_table(void) {
    static struct nsc_comm *c[NSC_MAX_COMMS];
    int ok = 1;
    for (unsigned i = 0; i < NSC_MAX_COMMS; i++)
        ok &= (c[i] = open_n(9000000 + i, 0)) != NULL;
    CHECK(ok && nsc_comm_active_count() == NSC_MAX_COMMS);
    CHECK(open_n(9999999, 0) == NULL);
    nsc_comm_close(c[17]);
    struct nsc_comm *again = open_n(9999998, 0);
    CHECK(again == c[17] && nsc_comm_from_context(nsc_comm_context(again)) == again);
    for (unsigned i = 0; i < NSC_MAX_COMMS; i++)
        nsc_comm_close(c[i]);
    CHECK(take_all(taken, 200000) == NSC_MAX_COMMS + 1 && nsc_comm_active_count() == 0);
}

int main(void) {
    test_contexts();
    test_garbage();
    test_cycles();
    test_burst();
    test_retired_limit();
    test_partial_takes();
    test_reset();
    test_many_open();
    test_full_table();
    return check_summary();
}
