// SPDX-License-Identifier: Apache-2.0
/*
 * comm_lookup.c - what a callback pays to check its context: the comm
 * table's nsc_comm_from_context() (decode, one slot, one load of its
 * generation), beside the two designs it was chosen over, at 1,000 and
 * 10,000 open communicators:
 *
 *   table      the plugin's own (plugin/record/comm_table.h): a static
 *              array, slots taken from the low end;
 *   two-level  a directory of chunk pointers, chunks of 256 slots
 *              allocated when opened and never freed: the same check
 *              behind one more dependent load (the directory entry);
 *   urcu-lfht  liburcu's lock-free hash table (bp flavour, as LTTng-UST
 *              uses), keyed by the context, read under rcu_read_lock
 *              (built only where liburcu-bp and liburcu-cds are found).
 *
 *   ncclscope-comm-lookup [--samples N]
 *
 * Each figure is the median of N single lookups (default 301), each
 * between two fenced TSC reads (their own cost subtracted), in ns, the
 * designs' samples interleaved:
 *   warm  the same context looked up just before (its lines in L1);
 *   cold  every cache level and the TLB flushed first, by reading a
 *         buffer of twice the last-level cache (what a thread meets
 *         after its GPU work evicted everything).
 * Contexts are picked at random among the open ones. The urcu figures
 * include the reader's registration only in its first lookup (done before
 * the samples): what a thread pays once is not in them.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_table.h"
#include "cycle_timer.h"

#ifdef NSC_BENCH_URCU
#define _LGPL_SOURCE /* the read lock inlined, as LTTng-UST builds it */
#include <urcu-bp.h>
#include <urcu/rculfhash.h>
#endif

#define EVICT_BYTES (64u << 20) /* twice the 32 MiB L3 of the machines measured */

static unsigned char *evict_buf;
static volatile uint64_t sink;

static void evict(void) {
    uint64_t s = 0;
    for (size_t i = 0; i < EVICT_BYTES; i += 64)
        s += evict_buf[i];
    sink += s;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static int by_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- the two-level model: the table's slots and check, behind a directory ---- */

#define CHUNK_BITS 8
#define NCHUNKS (NSC_MAX_COMMS >> CHUNK_BITS)
static struct nsc_comm *_Atomic dir[NCHUNKS];

static struct nsc_comm *two_level_lookup(const void *ctx) {
    uint64_t v = (uint64_t)(uintptr_t)ctx;
    if (((v >> NSC_COMM_INDEX_BITS) & 0x3f) != NSC_COMM_CTX_TAG)
        return 0;
    unsigned i = (unsigned)(v & (NSC_MAX_COMMS - 1));
    /* ACQUIRE: pairs with the opener's RELEASE of a new chunk. */
    struct nsc_comm *chunk = atomic_load_explicit(&dir[i >> CHUNK_BITS], memory_order_acquire);
    if (!chunk)
        return 0;
    struct nsc_comm *c = &chunk[i & ((1u << CHUNK_BITS) - 1)];
    uint64_t g = atomic_load_explicit(&c->gen, memory_order_acquire);
    return (g & 1) && (g & NSC_COMM_GEN_MASK) == (v >> NSC_COMM_GEN_SHIFT) ? c : 0;
}

/* Fills the model's slots [0, n) with the generations of the table's. */
static int two_level_fill(const void *const *ctxs, unsigned n) {
    for (unsigned k = 0; k < n; k++) {
        uint64_t v = (uint64_t)(uintptr_t)ctxs[k];
        unsigned i = (unsigned)(v & (NSC_MAX_COMMS - 1));
        struct nsc_comm *chunk = atomic_load_explicit(&dir[i >> CHUNK_BITS], memory_order_relaxed);
        if (!chunk) {
            chunk = aligned_alloc(64, sizeof(*chunk) << CHUNK_BITS);
            if (!chunk)
                return -1;
            memset(chunk, 0, sizeof(*chunk) << CHUNK_BITS);
            atomic_store_explicit(&dir[i >> CHUNK_BITS], chunk, memory_order_release);
        }
        atomic_store_explicit(&chunk[i & ((1u << CHUNK_BITS) - 1)].gen,
                              (v >> NSC_COMM_GEN_SHIFT) | 1, memory_order_release);
    }
    return 0;
}

/* ---- liburcu's lock-free hash table ---- */

#ifdef NSC_BENCH_URCU
struct ht_node {
    struct cds_lfht_node node;
    uint64_t key;
    struct nsc_comm *comm;
};
static struct cds_lfht *ht;

static int ht_match(struct cds_lfht_node *n, const void *key) {
    return caa_container_of(n, struct ht_node, node)->key == *(const uint64_t *)key;
}

static struct nsc_comm *urcu_lookup(const void *ctx) {
    uint64_t key = (uint64_t)(uintptr_t)ctx;
    struct cds_lfht_iter it;
    struct nsc_comm *c = NULL;
    urcu_bp_read_lock();
    cds_lfht_lookup(ht, key * 0x9e3779b97f4a7c15ull, ht_match, &key, &it);
    struct cds_lfht_node *n = cds_lfht_iter_get_node(&it);
    if (n)
        c = caa_container_of(n, struct ht_node, node)->comm;
    urcu_bp_read_unlock();
    return c;
}

static int urcu_fill(void *const *ctxs, unsigned n) {
    ht = cds_lfht_new_flavor(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                             &urcu_bp_flavor, NULL);
    if (!ht)
        return -1;
    urcu_bp_read_lock();
    for (unsigned k = 0; k < n; k++) {
        struct ht_node *h = calloc(1, sizeof(*h));
        if (!h)
            return -1;
        h->key = (uint64_t)(uintptr_t)ctxs[k];
        h->comm = nsc_comm_from_context(ctxs[k]);
        cds_lfht_node_init(&h->node);
        cds_lfht_add(ht, h->key * 0x9e3779b97f4a7c15ull, &h->node);
    }
    urcu_bp_read_unlock();
    return 0;
}
#endif

/* ---- measuring ---- */

typedef struct nsc_comm *(*lookup_fn)(const void *);

static struct nsc_comm *table_lookup(const void *ctx) { return nsc_comm_from_context(ctx); }

static double median_ns(uint64_t *t, unsigned n) {
    qsort(t, n, sizeof(*t), by_u64);
    return (double)t[n / 2] * cycle_ns_per_tick();
}

struct variant {
    const char *name;
    lookup_fn f;
    uint64_t *warm, *cold;
};

/* Every variant's samples interleaved (variant after variant for each
 * sample), so what else runs on the machine meanwhile weighs on all alike. */
static void measure(struct variant *v, unsigned nv, void *const *ctxs, unsigned n,
                    unsigned samples, uint64_t overhead) {
    unsigned wrong = 0;
    for (unsigned k = 0; k < nv; k++) {
        v[k].warm = malloc(samples * sizeof(uint64_t));
        v[k].cold = malloc(samples * sizeof(uint64_t));
        if (!v[k].warm || !v[k].cold) {
            fprintf(stderr, "comm_lookup: out of memory\n");
            exit(1);
        }
    }
    for (unsigned s = 0; s < samples; s++)
        for (unsigned k = 0; k < nv; k++) {
            const void *ctx = ctxs[next_rand() % n];
            wrong += v[k].f(ctx) == NULL; /* and now it is warm */
            uint64_t t0 = cycle_fenced();
            struct nsc_comm *c = v[k].f(ctx);
            uint64_t t1 = cycle_fenced();
            wrong += c == NULL;
            v[k].warm[s] = t1 - t0 > overhead ? t1 - t0 - overhead : 0;
            ctx = ctxs[next_rand() % n];
            evict();
            t0 = cycle_fenced();
            c = v[k].f(ctx);
            t1 = cycle_fenced();
            wrong += c == NULL;
            v[k].cold[s] = t1 - t0 > overhead ? t1 - t0 - overhead : 0;
        }
    for (unsigned k = 0; k < nv; k++) {
        printf("%-10s %6u comms  warm %7.1f ns  cold %7.1f ns\n", v[k].name, n,
               median_ns(v[k].warm, samples), median_ns(v[k].cold, samples));
        free(v[k].warm);
        free(v[k].cold);
    }
    fflush(stdout);
    if (wrong) {
        fprintf(stderr, "comm_lookup: %u lookups of open comms failed\n", wrong);
        exit(1);
    }
}

int main(int argc, char **argv) {
    unsigned samples = 301;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            samples = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: ncclscope-comm-lookup [--samples N]\n");
            return 1;
        }
    }
    if (samples < 1)
        samples = 1;
    evict_buf = malloc(EVICT_BYTES);
    void **ctxs = malloc(10000 * sizeof(*ctxs));
    if (!evict_buf || !ctxs) {
        fprintf(stderr, "comm_lookup: out of memory\n");
        return 1;
    }
    memset(evict_buf, 1, EVICT_BYTES);
    cycle_calibrate();
    uint64_t overhead = cycle_fence_overhead();
    printf("table capacity %u comms; median of %u lookups each, fence overhead %.1f ns subtracted\n",
           NSC_MAX_COMMS, samples, (double)overhead * cycle_ns_per_tick());
    fflush(stdout);
    unsigned nopen = 0;
    static const unsigned sizes[] = {1000, 10000};
    for (unsigned z = 0; z < 2; z++) {
        for (; nopen < sizes[z]; nopen++) {
            struct nsc_comm *c = nsc_comm_open(0x1000 + nopen, "bench", 1, 8, 0, nopen);
            if (!c)
                break;
            ctxs[nopen] = nsc_comm_context(c);
        }
        if (nopen < sizes[z]) {
            printf("table      %6u comms  not measured: the table holds %u\n", sizes[z], nopen);
            fflush(stdout);
            break;
        }
        struct variant v[3] = {{"table", table_lookup, 0, 0}, {"two-level", two_level_lookup, 0, 0}};
        unsigned nv = 2;
        if (two_level_fill((const void *const *)ctxs, nopen) != 0)
            return 1;
#ifdef NSC_BENCH_URCU
        if (ht)
            cds_lfht_destroy(ht, NULL); /* nodes leak: a benchmark */
        if (urcu_fill(ctxs, nopen) != 0)
            return 1;
        urcu_lookup(ctxs[0]); /* the reader's registration, once per thread */
        v[nv++] = (struct variant){"urcu-lfht", urcu_lookup, 0, 0};
#endif
        measure(v, nv, ctxs, nopen, samples, overhead);
    }
    return 0;
}
