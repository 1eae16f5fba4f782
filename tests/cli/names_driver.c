// SPDX-License-Identifier: Apache-2.0
/*
 * names_driver.c - a job whose names hold any bytes, through a profiler
 * plugin loaded as NCCL loads it (nccl/host.c), for test_names.py:
 *
 *   names_driver PLUGIN COMM_NAME FUNC MARK...
 *
 * One process, two ranks of a communicator named COMM_NAME (commHash
 * 0x6e616d6573), each running 4 collectives called FUNC on one channel
 * (KernelCh, ProxyOp, ProxyStep); then each MARK through the control API
 * (include/ncclscope.h); then a fifth FUNC that rank 0 enters and whose
 * channel never finishes, while rank 1 never enters it. Prints "hung" and
 * waits to be killed (SIGKILL: the trace is what a hung job leaves).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "ncclscope.h"

static struct nsc_host host;

static void *start(void *ctx, int rank, nsc_abi_descr_v7 *d) {
    void *h = NULL;
    d->rank = rank;
    nsc_host_start(&host, ctx, &h, d);
    return h;
}

static void coll(void *ctx, int rank, const char *func, long i, int stuck) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.coll.seqNumber = (uint64_t)i;
    d.coll.func = func;
    d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.count = 1024;
    d.coll.nChannels = 1;
    void *op = start(ctx, rank, &d);
    nsc_host_stop(&host, op);
    uint64_t g = 1000000000ull + 1000000ull * (uint64_t)i;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_KERNEL_CH;
    d.parentObj = op;
    d.kernelCh.channelId = 0;
    d.kernelCh.pTimer = g;
    void *kch = start(ctx, rank, &d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_OP;
    d.parentObj = op;
    d.proxyOp.pid = getpid();
    d.proxyOp.peer = 1 - rank;
    d.proxyOp.nSteps = 1;
    d.proxyOp.isSend = 1;
    void *pop = start(ctx, rank, &d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_STEP;
    d.parentObj = pop;
    void *pst = start(ctx, rank, &d);
    if (stuck) {
        nsc_host_state(&host, pst, NSC_ABI_PROXY_STEP_SEND_PEER_WAIT_V4, 0);
        return;
    }
    nsc_host_state(&host, pst, NSC_ABI_PROXY_STEP_SEND_WAIT, 4096);
    nsc_host_stop(&host, pst);
    nsc_host_stop(&host, pop);
    nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP, g + 500);
    nsc_host_stop(&host, kch);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: names_driver PLUGIN COMM_NAME FUNC MARK...\n");
        return 2;
    }
    char err[1024];
    if (nsc_host_load(&host, argv[1], 7, err, sizeof(err)) != 0) {
        fprintf(stderr, "names_driver: %s\n", err);
        return 1;
    }
    void *ctx[2] = {NULL, NULL};
    int mask[2] = {-1, -1};
    for (int r = 0; r < 2; r++)
        if (nsc_host_init(&host, &ctx[r], 0x6e616d6573ull, &mask[r], argv[2], 1, 2, r) != 0 || !ctx[r]) {
            fprintf(stderr, "names_driver: init of rank %d failed\n", r);
            return 1;
        }
    for (long i = 0; i < 4; i++)
        for (int r = 0; r < 2; r++)
            coll(ctx[r], r, argv[3], i, 0);
    struct ncclscope_control c;
    if (ncclscope_control_open(&c, argv[1]) != 0) {
        fprintf(stderr, "names_driver: no control API in %s\n", argv[1]);
        return 1;
    }
    for (int i = 4; i < argc; i++)
        if (c.mark(argv[i]) != NCCLSCOPE_OK) {
            fprintf(stderr, "names_driver: mark %d refused\n", i - 3);
            return 1;
        }
    coll(ctx[0], 0, argv[3], 4, 1);
    printf("hung\n");
    fflush(stdout);
    for (;;)
        pause();
}
