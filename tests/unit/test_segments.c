// SPDX-License-Identifier: Apache-2.0
/*
 * test_segments.c - which segment files rotation keeps (plugin/engine/segments.h):
 * the oldest go first, only as many as the cap needs, never the current
 * one; what went is counted, a file already gone included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "segments.h"

static char dir[] = "/tmp/nsc-segments-XXXXXX";

static void make(const char *name, char *path, size_t len) {
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

int main(void) {
    CHECK(mkdtemp(dir) != NULL);
    struct nsc_segments s;
    nsc_segments_init(&s, 1000);
    CHECK(s.target == 250);
    /* no chunk yet: never due, whatever the size */
    CHECK(!nsc_segments_due(&s, 10000, 10000));
    s.cur_chunks = 1;
    CHECK(!nsc_segments_due(&s, 100, 100) && nsc_segments_due(&s, 200, 100));

    char p[4][256];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "s%d.nsc", i);
        make(name, p[i], sizeof(p[i]));
        s.cur_records = 10 * (i + 1);
        s.cur_chunks = 1;
        nsc_segments_closed(&s, p[i], 240);
        CHECK(s.cur_records == 0 && s.cur_chunks == 0);
    }
    /* 4 x 240 old + 30 current + 10 coming = 1000: fits */
    CHECK(nsc_segments_prune(&s, 30, 10) == 0 && s.nold == 4);
    /* one byte more: the oldest goes, only it */
    CHECK(nsc_segments_prune(&s, 31, 10) == 1 && s.nold == 3);
    CHECK(!exists(p[0]) && exists(p[1]) && exists(p[2]) && exists(p[3]));
    CHECK(s.deleted == 1 && s.bytes_deleted == 240 && s.records_deleted == 10);
    /* a huge current segment: every old one goes, and that is all */
    CHECK(nsc_segments_prune(&s, 5000, 0) == 3 && s.nold == 0);
    CHECK(!exists(p[1]) && !exists(p[2]) && !exists(p[3]));
    CHECK(s.deleted == 4 && s.bytes_deleted == 960 && s.records_deleted == 100);
    CHECK(nsc_segments_prune(&s, 5000, 0) == 0);
    /* a file already gone counts as deleted */
    nsc_segments_closed(&s, "/nonexistent/dir/x.nsc", 600);
    CHECK(nsc_segments_prune(&s, 600, 0) == 1 && s.deleted == 5);
    /* a full disk below the cap: the oldest goes, one per call, counted;
     * none left: 0 */
    char q[2][256];
    make("f0.nsc", q[0], sizeof(q[0]));
    make("f1.nsc", q[1], sizeof(q[1]));
    s.cur_records = 7;
    nsc_segments_closed(&s, q[0], 100);
    s.cur_records = 8;
    nsc_segments_closed(&s, q[1], 100);
    CHECK(nsc_segments_prune(&s, 10, 0) == 0); /* well under the cap */
    CHECK(nsc_segments_drop_oldest(&s) == 1 && !exists(q[0]) && exists(q[1]) && s.nold == 1);
    CHECK(s.deleted == 6 && s.bytes_deleted == 1660 && s.records_deleted == 107);
    CHECK(nsc_segments_drop_oldest(&s) == 1 && !exists(q[1]) && s.nold == 0);
    CHECK(nsc_segments_drop_oldest(&s) == 0 && s.deleted == 7);
    /* no cap: nothing is ever due or deleted */
    struct nsc_segments off;
    nsc_segments_init(&off, 0);
    off.cur_chunks = 5;
    CHECK(!nsc_segments_due(&off, 1ull << 40, 1) && nsc_segments_prune(&off, 1ull << 40, 0) == 0);
    nsc_segments_free(&s);
    nsc_segments_free(&off);
    rmdir(dir);
    return check_summary();
}
