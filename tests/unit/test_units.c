// SPDX-License-Identifier: Apache-2.0
/*
 * test_units.c - unit tests of the ring, the mask parser, handles and the
 * JSON-independent pieces. Prints "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>

#include "block_payload.h"
#include "event_types.h"
#include "nccl_abi.h"
#include "record_pack.h"
#include "recorder.h"
#include "ring.h"

static int passed, failed;
#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (c)                                                                                 \
            passed++;                                                                          \
        else {                                                                                 \
            failed++;                                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);            \
        }                                                                                      \
    } while (0)
/* For checks in loops: counts one failure, not thousands of passes. */
#define CHECK_QUIET(c)                                                                         \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            failed++;                                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);           \
        }                                                                                      \
    } while (0)

/* The paged ring through the consumer API the flusher uses: pages come
 * from the pool, a ring holds at most its cap, drained pages go back. */
static void test_ring(void) {
    CHECK(page_pool_create(4 * NSC_PAGE_BYTES) == 0);
    uint32_t pool = page_pool_pages();
    CHECK(pool >= 4);
    struct nsc_ring r, r2;
    CHECK(ring_create(&r, 2 * NSC_PAGE_RECORDS) == 0); /* cap: 2 pages */
    CHECK(ring_create(&r2, 0) == 0);                    /* never records */
    CHECK(ring_reserve(&r2, 1) == UINT64_MAX);
    uint64_t pos, cap = 2 * NSC_PAGE_RECORDS;
    for (uint64_t i = 0; i < cap; i++) {
        uint64_t p = ring_reserve(&r, 1);
        CHECK_QUIET(p == i);
        ring_slot(&r, p)->h.id = i + 100;
        ring_commit(&r, p, 1);
    }
    CHECK(page_pool_in_use() == 2);
    CHECK(ring_reserve(&r, 1) == UINT64_MAX); /* at the cap */
    CHECK(ring_readable(&r, &pos) == cap && pos == 0);
    CHECK(ring_slot(&r, 0)->h.id == 100 && ring_slot(&r, NSC_PAGE_RECORDS + 5)->h.id == NSC_PAGE_RECORDS + 105);
    ring_consume(&r, pos, NSC_PAGE_RECORDS - 1); /* the first page is not drained yet */
    CHECK(page_pool_in_use() == 2);
    CHECK(ring_reserve(&r, 1) == UINT64_MAX);
    ring_consume(&r, NSC_PAGE_RECORDS - 1, 1); /* now it is: back to the pool */
    CHECK(page_pool_in_use() == 1);
    /* two positions across a page boundary */
    uint64_t p = ring_reserve(&r, 2);
    CHECK(p == cap);
    ring_slot(&r, p)->h.id = 200;
    ring_slot(&r, p + 1)->h.id = 201;
    ring_commit(&r, p, 2);
    CHECK(ring_readable(&r, &pos) == NSC_PAGE_RECORDS + 2 && pos == NSC_PAGE_RECORDS);
    CHECK(ring_slot(&r, cap)->h.id == 200 && ring_slot(&r, cap + 1)->h.id == 201);
    ring_consume(&r, pos, NSC_PAGE_RECORDS + 2);
    CHECK(ring_readable(&r, &pos) == 0);
    CHECK(page_pool_in_use() == 1); /* the page holding the next position */
    ring_release_idle(&r);
    CHECK(page_pool_in_use() == 0);
    /* the budget is shared: one ring cannot take more than the pool has */
    struct nsc_ring big;
    CHECK(ring_create(&big, 64 * NSC_PAGE_RECORDS) == 0);
    uint64_t got = 0;
    while (ring_reserve(&big, 1) != UINT64_MAX) {
        ring_commit(&big, got, 1);
        got++;
    }
    CHECK(got == (uint64_t)pool * NSC_PAGE_RECORDS);
    CHECK(page_pool_peak() == pool);
    ring_consume(&big, 0, got); /* whole pages: every one goes back */
    CHECK(page_pool_in_use() == 0);
    ring_release_idle(&big);
    CHECK(page_pool_in_use() == 0);
    ring_destroy(&big);
    ring_destroy(&r);
    ring_destroy(&r2);
}

static void test_mask(void) {
    uint32_t m;
    char err[256];
    CHECK(nsc_mask_parse("all", &m, err, sizeof(err)) == 0 && m == NSC_MASK_ALL);
    CHECK(nsc_mask_parse("coll,p2p", &m, err, sizeof(err)) == 0 &&
          m == ((1u << NSC_ET_COLL) | (1u << NSC_ET_P2P)));
    CHECK(nsc_mask_parse("all,-kernelch,-ProxyStep", &m, err, sizeof(err)) == 0 &&
          m == (NSC_MASK_ALL & ~(1u << NSC_ET_KERNEL_CH) & ~(1u << NSC_ET_PROXY_STEP)));
    CHECK(nsc_mask_parse("0x40", &m, err, sizeof(err)) == 0 && m == 0x40);
    CHECK(nsc_mask_parse("kernel", &m, err, sizeof(err)) == 0 &&
          m == ((1u << NSC_ET_KERNEL_CH) | (1u << NSC_ET_KERNEL_LAUNCH) |
                (1u << NSC_ET_KERNEL_PHASE)));
    /* KernelPhase (API v7) is a GPU-timer event: off by default; KernelCh is
     * in the default mask (on a sample of the operations), not in lean */
    CHECK(nsc_mask_parse("default", &m, err, sizeof(err)) == 0 &&
          !(m & (1u << NSC_ET_KERNEL_PHASE)) && (m & (1u << NSC_ET_KERNEL_CH)));
    CHECK(nsc_mask_parse("lean", &m, err, sizeof(err)) == 0 &&
          m == (NSC_MASK_DEFAULT & ~(1u << NSC_ET_KERNEL_CH)));
    CHECK(nsc_mask_parse("KernelPhase", &m, err, sizeof(err)) == 0 && m == 0x8000);
    CHECK(NSC_MASK_ALL == 0xffff);
    /* what each API version can deliver; KernelPhase brings KernelCh */
    CHECK(nsc_mask_for_api(NSC_MASK_ALL, 7) == 0xffff);
    CHECK(nsc_mask_for_api(NSC_MASK_ALL, 6) == 0x7fff);
    CHECK(nsc_mask_for_api(NSC_MASK_ALL, 5) == 0xfff);
    CHECK(nsc_mask_for_api(NSC_MASK_ALL, 4) == 0xff && nsc_mask_for_api(NSC_MASK_ALL, 3) == 0xff);
    CHECK(nsc_mask_for_api(NSC_MASK_ALL, 1) == 0x3f && nsc_mask_for_api(NSC_MASK_ALL, 2) == 0x3f);
    CHECK(nsc_mask_for_api(0x8002, 7) == 0x8042 && nsc_mask_for_api(0x8002, 6) == 0x2);
    CHECK(nsc_mask_parse("coll,bogus", &m, err, sizeof(err)) == -1 && strstr(err, "bogus"));
    CHECK(nsc_mask_parse("0x10000000", &m, err, sizeof(err)) == -1);
    char buf[256];
    CHECK(strcmp(nsc_mask_format((1u << NSC_ET_COLL) | (1u << NSC_ET_CE_BATCH), buf, sizeof(buf)),
                 "Coll,CeBatch") == 0);
    CHECK(nsc_etype_from_bit(1u << 14) == NSC_ET_CE_BATCH && nsc_etype_from_bit(3) == -1);
    CHECK(nsc_etype_from_bit(1u << 15) == NSC_ET_KERNEL_PHASE && nsc_etype_from_bit(1u << 16) == -1);
    CHECK(strcmp(nsc_etype_name(NSC_ET_KERNEL_PHASE), "KernelPhase") == 0 &&
          nsc_etype_name(NSC_ET_COUNT) == NULL);
    CHECK(strcmp(nsc_state_name(22), "KernelChStop") == 0 && nsc_state_name(99) == NULL);
    CHECK(strcmp(nsc_state_name(31), "KernelPhaseStop") == 0 && nsc_state_name(32) == NULL);
}

static void test_handles(void) {
    uint16_t flags = 0;
    uint64_t h = 42 | ((uint64_t)NSC_ET_COLL << NSC_HANDLE_ETYPE_SHIFT);
    CHECK(nsc_handle_valid(h));
    CHECK(nsc_parent_id((void *)(uintptr_t)h, &flags) == 42 && flags == 0);
    CHECK(nsc_parent_id((void *)(uintptr_t)(h | NSC_HANDLE_DROPPED), &flags) == 42);
    /* a value we could not have made (bits 60..62 are never set in a handle;
     * with KernelPhase every type nibble 0..15 is a type) is flagged, not
     * followed */
    CHECK(nsc_parent_id((void *)(uintptr_t)0x1f00000000001234ull, &flags) == 0 &&
          (flags & NSC_RF_BAD_PARENT));
    uint64_t kp = 7 | ((uint64_t)NSC_ET_KERNEL_PHASE << NSC_HANDLE_ETYPE_SHIFT);
    CHECK(nsc_handle_valid(kp));
    CHECK(!nsc_handle_valid(0) && !nsc_handle_valid(1ull << 61));
    /* Garbage handles for stop/state: of a million random 64-bit values,
     * user-space pointers and small integers, only small integers below the
     * ids handed out so far could pass (they are well-formed ids). */
    struct nsc_thread t;
    memset(&t, 0, sizeof(t));
    uint64_t first = nsc_thread_refill_ids(&t); /* ids [first, first + 4096) issued */
    CHECK(nsc_handle_issued(first | ((uint64_t)NSC_ET_COLL << NSC_HANDLE_ETYPE_SHIFT)));
    CHECK(!nsc_handle_issued((first + 1000000) | ((uint64_t)NSC_ET_COLL << NSC_HANDLE_ETYPE_SHIFT)));
    uint64_t x = 0x9e3779b97f4a7c15ull, accepted = 0;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        accepted += nsc_handle_issued(x);
        accepted += nsc_handle_issued(0x00007f0000000000ull | (x & 0xffffffffffull)); /* mmap/stack */
        accepted += nsc_handle_issued(0x0000550000000000ull | (x & 0xffffffffffull)); /* heap */
    }
    CHECK(accepted == 0);
}

static const char *fake_text(uint32_t id) {
    static char buf[32];
    if (id % 5 == 0)
        return NULL;
    snprintf(buf, sizeof(buf), "string-%u", id);
    return buf;
}

/* STRINGS and STATS payloads: what the plugin encodes, the readers decode. */
static void test_block_payload(void) {
    unsigned char buf[200];
    uint32_t id = 0, seen = 0, expect = 1;
    int ok = 1;
    while (id < 40) {
        uint32_t before = id;
        size_t len = nsc_strings_encode(buf, sizeof(buf), &id, 40, fake_text);
        CHECK_QUIET(id > before && len <= sizeof(buf));
        const unsigned char *p = buf, *end = buf + len;
        uint32_t eid;
        const char *t;
        uint16_t tl;
        while (p < end && nsc_strings_next(&p, end, &eid, &t, &tl)) {
            const char *want = fake_text(eid);
            ok &= eid == expect++ && tl == (want ? strlen(want) : 0) && (!want || !memcmp(t, want, tl));
            seen++;
        }
        ok &= p == end;
    }
    CHECK(ok && seen == 39);
    /* a cut entry is refused */
    uint32_t one = 7;
    size_t len = nsc_strings_encode(buf, sizeof(buf), &one, 8, fake_text);
    const unsigned char *p = buf;
    uint32_t eid;
    const char *t;
    uint16_t tl;
    CHECK(len > 6 && !nsc_strings_next(&p, buf + len - 1, &eid, &t, &tl));
    /* STATS: a v3 block, and a v2 block (40-byte header, header_size 0) */
    unsigned char st[sizeof(struct nsc_stats_header) + 2 * sizeof(struct nsc_thread_stats)];
    struct nsc_stats_header h = {.nthreads = 2, .header_size = sizeof(h), .lost_write = 9,
                                 .write_errno = 28};
    memset(st, 0, sizeof(st));
    memcpy(st, &h, sizeof(h));
    struct nsc_stats_header out;
    const unsigned char *threads;
    const char *why;
    CHECK(nsc_stats_size(2) == sizeof(st));
    CHECK(nsc_stats_decode(st, sizeof(st), &out, &threads, &why) == 0 && out.lost_write == 9 &&
          out.write_errno == 28 && threads == st + sizeof(h));
    struct nsc_stats_header h2 = {.nthreads = 1, .header_size = 0, .string_overflow = 3};
    unsigned char v2[NSC_STATS_HEADER_V2 + sizeof(struct nsc_thread_stats)];
    memcpy(v2, &h2, NSC_STATS_HEADER_V2);
    CHECK(nsc_stats_decode(v2, sizeof(v2), &out, &threads, &why) == 0 && out.string_overflow == 3 &&
          out.lost_write == 0 && out.header_size == NSC_STATS_HEADER_V2);
    CHECK(nsc_stats_decode(v2, sizeof(v2) - 1, &out, &threads, &why) == -1);
    CHECK(nsc_stats_decode(v2, 12, &out, &threads, &why) == -1);
}

/* Packed records decode to exactly the 64 bytes that went in, whatever
 * the bytes are (random records, and realistic ones with small deltas). */
static void test_record_pack(void) {
    static struct nsc_pack_state enc, dec;
    nsc_pack_reset(&enc);
    nsc_pack_reset(&dec);
    unsigned char buf[NSC_PACK_MAX * 600], *p = buf;
    static struct nsc_rec in[600];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 600; i++) {
        struct nsc_rec *r = &in[i];
        unsigned char *b = (unsigned char *)r;
        for (size_t k = 0; k < sizeof(*r); k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[k] = (unsigned char)x;
        }
        if (i % 3) { /* realistic: small kinds, rising ticks, ids near each other */
            r->h.kind = (uint8_t)(1 + i % 4);
            r->h.etype = (uint8_t)(i % NSC_ET_COUNT);
            r->h.ticks = 1000000 + (uint64_t)i * 1234;
            r->h.id = 500 + (uint64_t)i / 2;
            r->u.start.parent = i % 2 ? r->h.id - 3 : 0;
        }
        r->h.kind &= 7;
        r->h.etype &= 15;
        /* kinds are 0..8; MARK (0, etype 15) and PY (8, other etypes) both
         * pack as 0 */
        if (r->h.kind == 0 && r->h.etype != NSC_MARK_ETYPE)
            r->h.kind = NSC_REC_PY;
        p = nsc_pack_record(&enc, r, p);
        CHECK((size_t)(p - buf) <= (size_t)(i + 1) * NSC_PACK_MAX);
    }
    const unsigned char *q = buf;
    int same = 1;
    for (int i = 0; i < 600; i++) {
        struct nsc_rec out;
        if (nsc_unpack_record(&dec, &q, p, &out) != 0 || memcmp(&out, &in[i], sizeof(out)) != 0)
            same = 0;
    }
    CHECK(same);
    CHECK(q == p);
    /* cut short: every truncation fails cleanly instead of reading past the end */
    int clean = 1;
    for (size_t cut = 0; cut < 40; cut++) {
        nsc_pack_reset(&dec);
        const unsigned char *c = buf;
        struct nsc_rec out;
        const unsigned char *end = buf + cut;
        while (c < end && nsc_unpack_record(&dec, &c, end, &out) == 0)
            ;
        if (c > end)
            clean = 0;
    }
    CHECK(clean);
}

/* API v7's record fields (format 3) survive packing, each where
 * trace_format.h puts it: KernelPhase and its stop, the tags, the variant. */
static void test_v7_records(void) {
    static struct nsc_pack_state enc, dec;
    nsc_pack_reset(&enc);
    nsc_pack_reset(&dec);
    struct nsc_rec in[8];
    memset(in, 0, sizeof(in));
    in[0].h = (struct nsc_rec_hdr){NSC_REC_START, NSC_ET_COLL, NSC_RF_HAS_EXT, 1, 100, 10};
    in[0].u.start.d.coll.func = 3;
    in[1].h = (struct nsc_rec_hdr){NSC_REC_EXT, NSC_ET_COLL, 0, 0, 0, 10};
    in[1].u.ext.coll.user_tag = 0x5a0000002aull;
    in[1].u.ext.coll.variant = 7;
    in[1].u.ext.coll.is_sym = 1;
    in[2].h = (struct nsc_rec_hdr){NSC_REC_START, NSC_ET_KERNEL_PHASE, 0, 1, 200, 11};
    in[2].u.start.parent = 9;
    in[2].u.start.d.kernel_phase.ptimer = 5000000100ull;
    in[2].u.start.d.kernel_phase.name = 8;
    in[2].u.start.d.kernel_phase.ch = 1;
    in[2].u.start.d.kernel_phase.phase = 2;
    in[3].h = (struct nsc_rec_hdr){NSC_REC_STATE, NSC_ET_KERNEL_PHASE, 0, 31, 210, 11};
    in[3].u.state.arg = 5000000400ull;
    in[4].h = (struct nsc_rec_hdr){NSC_REC_STOP, NSC_ET_KERNEL_PHASE, 0, 0, 220, 11};
    in[5].h = (struct nsc_rec_hdr){NSC_REC_START, NSC_ET_CE_COLL, NSC_RF_HAS_EXT, 1, 300, 12};
    in[5].u.start.d.ce_coll.user_tag_hi = 0x01234567u;
    in[6].h = (struct nsc_rec_hdr){NSC_REC_EXT, NSC_ET_CE_COLL, 0, 0, 0, 12};
    in[6].u.ext.ce_coll.user_tag_lo = 0x89ab0008u;
    in[7].h = (struct nsc_rec_hdr){NSC_REC_START, NSC_ET_P2P_API, 0, 1, 400, 13};
    in[7].u.start.d.p2p_api.user_tag = 0x5a00000001ull;
    unsigned char buf[NSC_PACK_MAX * 8], *p = buf;
    for (int i = 0; i < 8; i++)
        p = nsc_pack_record(&enc, &in[i], p);
    const unsigned char *q = buf;
    struct nsc_rec out[8];
    int same = 1;
    for (int i = 0; i < 8; i++)
        if (nsc_unpack_record(&dec, &q, p, &out[i]) != 0 || memcmp(&out[i], &in[i], sizeof(in[i])))
            same = 0;
    CHECK(same && q == p);
    CHECK(out[1].u.ext.coll.user_tag == 0x5a0000002aull && out[1].u.ext.coll.variant == 7 &&
          out[1].u.ext.coll.is_sym == 1);
    CHECK(out[2].h.etype == NSC_ET_KERNEL_PHASE && out[2].u.start.d.kernel_phase.phase == 2 &&
          out[2].u.start.d.kernel_phase.ptimer == 5000000100ull);
    CHECK(out[3].h.aux == NSC_ABI_KERNEL_PHASE_STOP && out[3].u.state.arg == 5000000400ull);
    CHECK(nsc_ce_coll_user_tag(&out[5].u.start.d, &out[6].u.ext) == 0x0123456789ab0008ull);
    CHECK(nsc_ce_coll_user_tag(&out[5].u.start.d, NULL) == 0x0123456700000000ull);
    CHECK(out[7].u.start.d.p2p_api.user_tag == 0x5a00000001ull);
}

int main(void) {
    test_ring();
    test_block_payload();
    test_record_pack();
    test_v7_records();
    test_mask();
    test_handles();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
