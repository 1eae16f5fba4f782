/*
 * test_units.c - unit tests of the ring, the mask parser, handles and the
 * JSON-independent pieces. Prints "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>

#include "event_types.h"
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

static void test_ring(void) {
    struct nsc_ring r;
    CHECK(ring_create(&r, 3) == -1); /* not a power of two */
    CHECK(ring_create(&r, 8) == 0);
    uint64_t pos;
    /* fill: 8 slots, the 9th fails */
    for (int i = 0; i < 8; i++) {
        uint64_t p = ring_reserve(&r, 1);
        CHECK(p == (uint64_t)i);
        ring_slot(&r, p)->h.id = (uint64_t)i + 100;
        ring_commit(&r, p, 1);
    }
    CHECK(ring_reserve(&r, 1) == UINT64_MAX);
    CHECK(ring_readable(&r, &pos) == 8 && pos == 0);
    struct nsc_rec out[8];
    ring_copy_out(&r, pos, 5, out);
    CHECK(out[0].h.id == 100 && out[4].h.id == 104);
    ring_consume(&r, pos, 5);
    /* two contiguous positions across the wrap */
    uint64_t p = ring_reserve(&r, 2);
    CHECK(p == 8);
    ring_slot(&r, p)->h.id = 200;
    ring_slot(&r, p + 1)->h.id = 201;
    ring_commit(&r, p, 2);
    CHECK(ring_reserve(&r, 4) == UINT64_MAX); /* 3 free */
    CHECK(ring_readable(&r, &pos) == 5 && pos == 5);
    ring_copy_out(&r, pos, 5, out);
    CHECK(out[2].h.id == 107 && out[3].h.id == 200 && out[4].h.id == 201);
    ring_consume(&r, pos, 5);
    CHECK(ring_readable(&r, &pos) == 0);
    ring_destroy(&r);
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
          m == ((1u << NSC_ET_KERNEL_CH) | (1u << NSC_ET_KERNEL_LAUNCH)));
    CHECK(nsc_mask_parse("coll,bogus", &m, err, sizeof(err)) == -1 && strstr(err, "bogus"));
    CHECK(nsc_mask_parse("0x10000000", &m, err, sizeof(err)) == -1);
    char buf[256];
    CHECK(strcmp(nsc_mask_format((1u << NSC_ET_COLL) | (1u << NSC_ET_CE_BATCH), buf, sizeof(buf)),
                 "Coll,CeBatch") == 0);
    CHECK(nsc_etype_from_bit(1u << 14) == NSC_ET_CE_BATCH && nsc_etype_from_bit(3) == -1);
    CHECK(strcmp(nsc_state_name(22), "KernelChStop") == 0 && nsc_state_name(99) == NULL);
}

static void test_handles(void) {
    uint16_t flags = 0;
    uint64_t h = 42 | ((uint64_t)NSC_ET_COLL << NSC_HANDLE_ETYPE_SHIFT);
    CHECK(nsc_handle_valid(h));
    CHECK(nsc_parent_id((void *)(uintptr_t)h, &flags) == 42 && flags == 0);
    CHECK(nsc_parent_id((void *)(uintptr_t)(h | NSC_HANDLE_DROPPED), &flags) == 42);
    /* a real pointer (bits 60..62 set on no x86-64 user address, but the
     * type nibble 15 is invalid) is flagged, not followed */
    CHECK(nsc_parent_id((void *)(uintptr_t)0x0f00000000001234ull, &flags) == 0 &&
          (flags & NSC_RF_BAD_PARENT));
    CHECK(!nsc_handle_valid(0) && !nsc_handle_valid(1ull << 61));
}

int main(void) {
    test_ring();
    test_mask();
    test_handles();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
