// SPDX-License-Identifier: Apache-2.0
/*
 * test_intern.c - the string table: equal texts share an id, texts are
 * kept to 255 bytes, the table holds every id a 16-bit field can carry,
 * and past its capacity every use of a string that did not fit is counted
 * (a silent table made 1,907 of 6,000 names' events "?" with no count).
 * User text (marks, Python names) leaves NCCL's names their reserve.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "intern.h"

#define NAMES (NSC_INTERN_MAX - 2 + 100) /* 100 more than fit */
static char names[NAMES][16];

static void test_basic(void) {
    struct nsc_intern_cache c;
    memset(&c, 0, sizeof(c));
    CHECK(nsc_intern(&c, NULL) == 0);
    char a1[] = "AllReduce", a2[] = "AllReduce";
    uint16_t id = nsc_intern(&c, a1);
    CHECK(id >= 2 && nsc_intern(&c, a2) == id && nsc_intern(&c, a1) == id);
    CHECK(strcmp(nsc_intern_text(id), "AllReduce") == 0);
    CHECK(nsc_intern_count() == (uint32_t)id + 1);
    CHECK(strcmp(nsc_intern_text(NSC_INTERN_OVERFLOW), "?") == 0);
    /* texts are kept to 255 bytes; those equal that far share an id */
    static char long1[400], long2[400], long3[400];
    memset(long1, 'x', 399);
    memset(long2, 'x', 399);
    long2[300] = 'y';
    uint16_t l1 = nsc_intern(&c, long1), l2 = nsc_intern(&c, long2);
    CHECK(l1 > id && l1 == l2 && strlen(nsc_intern_text(l1)) == 255);
    memcpy(long3, long2, sizeof(long3)); /* a new pointer: the cache is by address */
    long3[100] = 'y';
    CHECK(nsc_intern(&c, long3) != l1);
    CHECK(nsc_intern_overflows() == 0);
    nsc_intern_free_all();
    CHECK(nsc_intern_count() == 2);
}

static void test_capacity(void) {
    struct nsc_intern_cache c1, c2;
    memset(&c1, 0, sizeof(c1));
    memset(&c2, 0, sizeof(c2));
    for (int i = 0; i < NAMES; i++)
        snprintf(names[i], sizeof(names[i]), "func%d", i);
    /* every id a uint16_t holds, each string its own, in order */
    int distinct = 1;
    for (int i = 0; i < NSC_INTERN_MAX - 2; i++)
        distinct &= nsc_intern(&c1, names[i]) == (uint16_t)(i + 2);
    CHECK(distinct);
    CHECK(nsc_intern_count() == NSC_INTERN_MAX && nsc_intern_overflows() == 0);
    CHECK(strcmp(nsc_intern_text(NSC_INTERN_MAX - 1), names[NSC_INTERN_MAX - 3]) == 0);
    /* known strings still resolve, through the index (another cache) */
    CHECK(nsc_intern(&c2, names[12345]) == 12347 && nsc_intern_overflows() == 0);

    /* 100 more: "?", and each use counted, through the slow path (first
     * use per cache) and the fast path (cached) alike */
    const char *extra = names[NSC_INTERN_MAX - 2];
    CHECK(nsc_intern(&c1, extra) == NSC_INTERN_OVERFLOW && nsc_intern_overflows() == 1);
    for (int i = 0; i < 10; i++)
        CHECK(nsc_intern(&c1, extra) == NSC_INTERN_OVERFLOW);
    CHECK(nsc_intern_overflows() == 11);
    CHECK(nsc_intern(&c2, extra) == NSC_INTERN_OVERFLOW && nsc_intern_overflows() == 12);
    /* 100 names used 3 times each: 300 uses, 300 counted */
    uint64_t before = nsc_intern_overflows();
    int all_q = 1;
    for (int rep = 0; rep < 3; rep++)
        for (int i = NSC_INTERN_MAX - 2; i < NAMES; i++)
            all_q &= nsc_intern(&c1, names[i]) == NSC_INTERN_OVERFLOW;
    CHECK(all_q && nsc_intern_overflows() - before == 300);
    CHECK(nsc_intern_count() == NSC_INTERN_MAX);
    nsc_intern_free_all();
}

/* The text budget binds before the id space for long strings. */
static void test_text_budget(void) {
    struct nsc_intern_cache c;
    memset(&c, 0, sizeof(c));
    static char s[20000][256];
    uint64_t over0 = nsc_intern_overflows();
    unsigned fit = NSC_INTERN_TEXT_MAX / 256; /* 255 bytes + NUL each */
    int ok = 1;
    for (unsigned i = 0; i < fit + 10; i++) {
        memset(s[i], 'a' + (int)(i % 26), 255);
        snprintf(s[i], 12, "%010u", i); /* distinct prefix; the rest stays */
        s[i][10] = '-';
        uint16_t id = nsc_intern(&c, s[i]);
        ok &= i < fit ? id == i + 2 : id == NSC_INTERN_OVERFLOW;
    }
    CHECK(ok && fit < sizeof(s) / sizeof(s[0]));
    CHECK(nsc_intern_count() == 2 + fit && nsc_intern_overflows() - over0 == 10);
    nsc_intern_free_all();
    /* freed: the budget is back */
    CHECK(nsc_intern(&c, "after") == 2);
    nsc_intern_free_all();
}

/* 70,000 distinct marks: the user's part fills, the rest is refused
 * (counted, one first refusal), and NCCL's names seen after them still get
 * ids of their own; a user text equal to a kept one is found, not refused. */
static void test_user_reserve(void) {
    struct nsc_intern_cache c;
    memset(&c, 0, sizeof(c));
    static char marks[70000][16];
    uint64_t over0 = nsc_intern_overflows(), ref0 = nsc_intern_user_refused();
    uint16_t nccl_early = nsc_intern(&c, "AllReduce"); /* one NCCL name before */
    unsigned kept = 0, firsts = 0, bad = 0;
    for (unsigned i = 0; i < 70000; i++) {
        snprintf(marks[i], sizeof(marks[i]), "mark %u", i);
        int first = -1;
        uint16_t id = nsc_intern_user(marks[i], &first);
        firsts += first == 1;
        bad += first != 0 && first != 1;
        if (id != NSC_INTERN_OVERFLOW) {
            kept++;
            bad += strcmp(nsc_intern_text(id), marks[i]) != 0;
        }
    }
    unsigned room = NSC_INTERN_MAX - NSC_INTERN_NCCL_IDS - 3; /* "AllReduce" took one */
    CHECK(kept == room && bad == 0 && firsts == 1);
    CHECK(nsc_intern_user_refused() - ref0 == 70000 - room);
    CHECK(nsc_intern_overflows() - over0 == 70000 - room);
    /* found by content: neither refused nor counted */
    CHECK(nsc_intern_user("AllReduce", NULL) == nccl_early);
    CHECK(nsc_intern_user(marks[7], NULL) == nsc_intern_user(marks[7], NULL) &&
          nsc_intern_user(marks[7], NULL) != NSC_INTERN_OVERFLOW);
    CHECK(nsc_intern_overflows() - over0 == 70000 - room);
    /* NCCL's names after the flood: every one its own id and text */
    static const char *nccl[] = {"Broadcast", "ncclFloat32", "RING", "SIMPLE", "ReduceScatter",
                                 "ncclBfloat16", "NVLS", "LL128"};
    int named = 1;
    for (unsigned i = 0; i < sizeof(nccl) / sizeof(nccl[0]); i++) {
        uint16_t id = nsc_intern(&c, nccl[i]);
        named &= id != NSC_INTERN_OVERFLOW && strcmp(nsc_intern_text(id), nccl[i]) == 0;
    }
    CHECK(named && nsc_intern_overflows() - over0 == 70000 - room);
    /* a second refusal episode logs nothing more */
    int first = -1;
    CHECK(nsc_intern_user("one more", &first) == NSC_INTERN_OVERFLOW && first == 0);
    nsc_intern_free_all();

    /* the text reserve binds for long texts: 255 bytes each */
    static char big[16000][256];
    unsigned fit = (NSC_INTERN_TEXT_MAX - NSC_INTERN_NCCL_TEXT) / 256;
    kept = 0;
    for (unsigned i = 0; i < fit + 5; i++) {
        memset(big[i], 'x', 255);
        snprintf(big[i], 12, "%010u", i);
        big[i][10] = '-';
        kept += nsc_intern_user(big[i], NULL) != NSC_INTERN_OVERFLOW;
    }
    CHECK(kept == fit && fit + 5 < sizeof(big) / sizeof(big[0]));
    char nccl_long[256];
    memset(nccl_long, 'n', 255);
    nccl_long[255] = '\0';
    CHECK(nsc_intern(&c, nccl_long) != NSC_INTERN_OVERFLOW);
    nsc_intern_free_all();
}

int main(void) {
    test_basic();
    test_capacity();
    test_text_budget();
    test_user_reserve();
    return check_summary();
}
