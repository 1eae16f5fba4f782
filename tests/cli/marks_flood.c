// SPDX-License-Identifier: Apache-2.0
/*
 * marks_flood.c - a program that floods the string table with marks
 * through the control API (include/ncclscope.h), then runs collectives
 * whose names the table has not seen yet; test_string_reserve.py checks
 * that those names reach the trace and that the refused marks are counted
 * and said once in the log.
 *
 *   marks_flood PLUGIN NMARKS
 *
 * NMARKS distinct marks ("flood N"), then 3 ReduceScatter of ncclBfloat16
 * with algorithm NVLS and protocol LL128, each with a KernelCh on channel
 * 0. Prints "marks N ok R" (R: calls that returned NCCLSCOPE_OK;
 * a refused text is still a mark, reading "?") and "done".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "ncclscope.h"

static struct nsc_host host;
static void *ctx;

static int fail(const char *what) {
    fprintf(stderr, "FAIL: %s\n", what);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3)
        return fprintf(stderr, "usage: marks_flood PLUGIN NMARKS\n"), 2;
    long n = atol(argv[2]);
    char err[512];
    if (nsc_host_load(&host, argv[1], 7, err, sizeof(err)) != 0)
        return fprintf(stderr, "%s\n", err), 1;
    struct ncclscope_control c;
    if (ncclscope_control_open(&c, argv[1]) != 0)
        fail("ncclscope_control_open");
    int mask = 0;
    if (nsc_host_init(&host, &ctx, 0xf100d, &mask, "flood", 1, 1, 0) != 0 || !ctx)
        fail("init");
    long ok = 0;
    for (long i = 0; i < n; i++) {
        char text[32];
        snprintf(text, sizeof(text), "flood %ld", i);
        ok += c.mark(text) == NCCLSCOPE_OK;
    }
    for (int i = 0; i < 3; i++) {
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL;
        d.coll.seqNumber = (uint64_t)i;
        d.coll.func = "ReduceScatter";
        d.coll.count = 4096;
        d.coll.datatype = "ncclBfloat16";
        d.coll.algo = "NVLS";
        d.coll.proto = "LL128";
        d.coll.nChannels = 1;
        void *coll = NULL, *k = NULL;
        nsc_host_start(&host, ctx, &coll, &d);
        nsc_host_stop(&host, coll);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_KERNEL_CH;
        d.parentObj = coll;
        d.kernelCh.channelId = 0;
        d.kernelCh.pTimer = 1000;
        nsc_host_start(&host, ctx, &k, &d);
        nsc_host_state(&host, k, NSC_ABI_KERNEL_CH_STOP, 2000);
        nsc_host_stop(&host, k);
    }
    printf("marks %ld ok %ld\n", n, ok);
    nsc_host_finalize(&host, ctx);
    ncclscope_control_close(&c);
    printf("done\n");
    return 0;
}
