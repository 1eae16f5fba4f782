// SPDX-License-Identifier: Apache-2.0
/*
 * passthrough_driver.c - ncclscope_bench_passthrough (include/ncclscope.h),
 * the switch nccl-bench --ab flips between blocks: while it is on, a start
 * returns one token and records nothing, and that token's state and stop
 * return at once; an event started before keeps its full path (its stop is
 * recorded); switched off, recording goes on, and a child of an event
 * started under the switch has no parent (not the token's address).
 * tests/cli/test_passthrough.py reads the trace.
 *
 *   passthrough_driver --plugin SO
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

static struct nsc_host host;
static void *ctx;

static void *coll(uint64_t seq) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.coll.seqNumber = seq;
    d.coll.func = "AllReduce";
    d.coll.nChannels = 1;
    void *h = NULL;
    nsc_host_start(&host, ctx, &h, &d);
    return h;
}

int main(int argc, char **argv) {
    char err[1024];
    if (argc != 3 || strcmp(argv[1], "--plugin") || nsc_host_load(&host, argv[2], 0, err, sizeof(err))) {
        fprintf(stderr, "passthrough_driver --plugin SO: %s\n", argc == 3 ? err : "usage");
        return 1;
    }
    int (*pass)(int) = (int (*)(int))dlsym(host.lib, "ncclscope_bench_passthrough");
    int mask = 0;
    if (!pass || nsc_host_init(&host, &ctx, 0x9a55ull, &mask, "passthrough", 1, 1, 0) || !ctx) {
        fprintf(stderr, "passthrough_driver: no switch, or init failed\n");
        return 1;
    }
    void *a = coll(0);          /* recorded */
    pass(1);
    void *b = coll(1), *c = coll(2); /* the token, twice; nothing recorded */
    int bad = !a || !b || b != c || a == b;
    nsc_host_state(&host, b, NSC_ABI_PROXY_STEP_SEND_WAIT, 1);
    nsc_host_stop(&host, b);
    nsc_host_stop(&host, c);
    nsc_host_stop(&host, a);    /* started before: recorded */
    /* the floor arm: the same token, nothing recorded either */
    bad |= pass(2) != 0 || pass(4) == 0 || pass(-1) == 0;
    void *f = coll(4);
    bad |= f != b;
    nsc_host_state(&host, f, NSC_ABI_PROXY_STEP_SEND_WAIT, 1);
    nsc_host_stop(&host, f);
    /* 3: recorded as usual, but with a plain handle: no slab slot (a Coll
     * of mode 0, like `a`, has one: bit 61, NSC_HANDLE_SLAB) */
    bad |= pass(3) != 0;
    void *g = coll(5);
    bad |= !g || g == b || ((uintptr_t)g >> 61 & 1) || !((uintptr_t)a >> 61 & 1);
    nsc_host_stop(&host, g);
    pass(0);
    /* a child of an event started under the switch: recorded, parent none */
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_OP;
    d.parentObj = b;
    d.proxyOp.pid = getpid();
    d.proxyOp.peer = 1;
    void *px = NULL;
    nsc_host_start(&host, ctx, &px, &d);
    bad |= !px || px == b;
    nsc_host_stop(&host, px);
    void *e = coll(3);          /* recorded again */
    bad |= !e || e == b;
    nsc_host_stop(&host, e);
    nsc_host_finalize(&host, ctx);
    printf("%s\n", bad ? "FAIL: handles" : "handles ok");
    return bad;
}
