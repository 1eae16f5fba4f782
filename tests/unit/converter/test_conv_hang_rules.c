// SPDX-License-Identifier: Apache-2.0
/* test_conv_hang_rules.c - the rules of `ncclscope hang` on plain rows
 * (converter/model/hang_model.h), as the Python package calls them too:
 * which stuck collective a comm hangs at (by enqueue on the stuck ranks,
 * not by seqNumber: NCCL counts them per function), and which entries wait
 * behind a root on the same processes (chains to their root, cycles,
 * rows without a time, processes that share nothing). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hang_model.h"

static void test_pick(void) {
    /* A user's job: ranks 0, 1, 3 (processes 1, 2, 4) enqueued AllReduce
     * 776, then AllGather 776 behind it; the lower name must not win. */
    struct nsc_hm_cand c[] = {
        {1, 100, 776, "AllGather"}, {1, 90, 776, "AllReduce"},
        {2, 300, 776, "AllReduce"}, {2, 310, 776, "AllGather"},
        {4, 50, 776, "AllGather"},  {4, 40, 776, "AllReduce"},
    };
    size_t k = nsc_hm_pick(c, 6);
    CHECK(c[k].seq == 776 && !strcmp(c[k].func, "AllReduce"));
    /* The skipping rank went on to AllGather 776 and is stuck there (first
     * on its process): AllReduce 776 is still held back on no process,
     * AllGather 776 on three. */
    struct nsc_hm_cand d[] = {
        {1, 100, 776, "AllGather"}, {1, 90, 776, "AllReduce"}, {3, 7, 776, "AllGather"},
        {2, 310, 776, "AllGather"}, {2, 300, 776, "AllReduce"},
    };
    k = nsc_hm_pick(d, 5);
    CHECK(!strcmp(d[k].func, "AllReduce"));
    /* Nothing held back: the most rows, then the lowest seqNumber. */
    struct nsc_hm_cand e[] = {{1, 10, 9, "AllReduce"}, {2, 10, 5, "Broadcast"}, {3, 10, 9, "AllReduce"}};
    CHECK(nsc_hm_pick(e, 3) == 0);
    struct nsc_hm_cand f[] = {{1, 10, 9, "AllReduce"}, {2, 10, 5, "Broadcast"}};
    CHECK(nsc_hm_pick(f, 2) == 1);
    /* One row. */
    CHECK(nsc_hm_pick(f + 1, 1) == 0);
}

static void test_causes(void) {
    long root[4];
    /* Entry 1 (a 2-rank comm) enqueued after entry 0 on processes 1 and 2;
     * entry 2 after entry 1 on process 2: both behind 0, the root. */
    struct nsc_hm_inst a[] = {
        {0, 1, 100}, {0, 2, 100}, {0, 4, 100}, {1, 1, 200}, {1, 2, 150}, {2, 2, 160}, {2, 5, 1},
    };
    CHECK(nsc_hm_causes(3, a, 7, root) == 0);
    CHECK(root[0] == -1 && root[1] == 0 && root[2] == 0);
    /* Opposite orders on two processes: each waits for the other, both roots. */
    struct nsc_hm_inst b[] = {{0, 1, 10}, {1, 1, 20}, {0, 2, 20}, {1, 2, 10}};
    CHECK(nsc_hm_causes(2, b, 4, root) == 0);
    CHECK(root[0] == -1 && root[1] == -1);
    /* ... and one behind that cycle names a root of it. */
    struct nsc_hm_inst b2[] = {{0, 1, 10}, {1, 1, 20}, {0, 2, 20}, {1, 2, 10}, {2, 1, 30}};
    CHECK(nsc_hm_causes(3, b2, 5, root) == 0);
    CHECK(root[0] == -1 && root[1] == -1 && (root[2] == 0 || root[2] == 1));
    /* No process in common, or no time known: independent. */
    struct nsc_hm_inst c[] = {{0, 1, 10}, {1, 2, 20}, {2, 1, 0}};
    CHECK(nsc_hm_causes(3, c, 3, root) == 0);
    CHECK(root[0] == -1 && root[1] == -1 && root[2] == -1);
}

static void test_order(void) {
    /* Shown roots first: entry 0 behind entry 1 (ranks 0 and 1 of entry
     * 1's comm hold both), entry 2 a root. */
    struct nsc_hm_inst in[] = {{0, 1, 200}, {0, 2, 200}, {1, 1, 100}, {1, 2, 100}, {1, 3, 100}, {2, 9, 5}};
    int rank[] = {0, 1, 1, 0, 3, 0};
    struct nsc_hm_cause cause[3];
    size_t order[3];
    CHECK(nsc_hm_order(3, in, rank, 6, cause, order) == 0);
    CHECK(order[0] == 1 && order[1] == 2 && order[2] == 0);
    CHECK(cause[1].behind == -1 && cause[2].behind == -1 && cause[0].behind == 0);
    CHECK(cause[0].nranks == 2 && cause[0].ranks[0] == 0 && cause[0].ranks[1] == 1);
    for (int i = 0; i < 3; i++)
        free(cause[i].ranks);
}

int main(void) {
    test_pick();
    test_causes();
    test_order();
    return check_summary();
}
