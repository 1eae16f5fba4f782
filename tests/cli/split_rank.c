// SPDX-License-Identifier: Apache-2.0
/*
 * split_rank.c - one rank of a job whose kernels start at known times,
 * through a profiler plugin loaded as NCCL loads it (nccl/host.c), for
 * stats' wait/transfer split. Run one process per rank, at once:
 *
 *   split_rank --plugin SO --rank R --nranks N --ops K --base NS
 *              [--step-us W] [--xfer-us X] [--first-xfer-us F]
 *
 * Operation i (0..K-1) is AllReduce seqNumber i/2 when i is even, Broadcast
 * seqNumber i/2 when odd, on comm "split" (commHash 0x5350495400000001),
 * one channel. Its slot begins at T = base + i * period (CLOCK_MONOTONIC
 * ns, the clock every process of a host shares and the plugin records in):
 * rank R enqueues at T + R*W, its kernel starts at T + R*W and every rank's
 * ends at T + (N-1)*W + X (operation 0: F instead of X, a warm-up). So rank
 * R waits (N-1-R)*W for the last rank, and the transfer is X. The GPU timer
 * (%globaltimer in NCCL) is given in CLOCK_MONOTONIC ns too; the KernelCh
 * stop is recorded once that time has passed, as NCCL's proxy notices a
 * finished kernel after the fact, so the converter's clock mapping (the
 * least stop - GPU end) comes out at the scheduling delay, microseconds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host.h"

static struct nsc_host host;
static void *ctx;
static int rank;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void *start(nsc_abi_descr_v7 *d) {
    void *h = NULL;
    d->rank = rank;
    nsc_host_start(&host, ctx, &h, d);
    return h;
}

int main(int argc, char **argv) {
    const char *plugin = NULL;
    int nranks = 4;
    long ops = 20;
    uint64_t base = 0, step = 2000000, xfer = 3000000, first_xfer = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
            rank = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nranks") && i + 1 < argc)
            nranks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            ops = atol(argv[++i]);
        else if (!strcmp(argv[i], "--base") && i + 1 < argc)
            base = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--step-us") && i + 1 < argc)
            step = 1000ull * strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--xfer-us") && i + 1 < argc)
            xfer = 1000ull * strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--first-xfer-us") && i + 1 < argc)
            first_xfer = 1000ull * strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "split_rank: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    if (ops < 1 || nranks < 2 || rank < 0 || rank >= nranks || !base || !xfer) {
        fprintf(stderr, "split_rank: --ops >= 1, --nranks >= 2, 0 <= --rank < nranks, --base NS\n");
        return 1;
    }
    if (!first_xfer)
        first_xfer = xfer;
    char err[1024];
    if (!plugin || nsc_host_load(&host, plugin, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "split_rank: %s\n", plugin ? err : "--plugin is required");
        return 1;
    }
    int mask = -1;
    if (nsc_host_init(&host, &ctx, 0x5350495400000001ull, &mask, "split", 1, nranks, rank) != 0 ||
        !ctx) {
        fprintf(stderr, "split_rank: init failed\n");
        return 1;
    }
    uint64_t longest = first_xfer > xfer ? first_xfer : xfer;
    uint64_t period = (uint64_t)(nranks - 1) * step + longest + 5000000ull;
    for (long i = 0; i < ops; i++) {
        uint64_t t = base + (uint64_t)i * period;
        uint64_t gs = t + (uint64_t)rank * step;
        uint64_t ge = t + (uint64_t)(nranks - 1) * step + (i ? xfer : first_xfer);
        sleep_until(gs);
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL;
        d.coll.seqNumber = (uint64_t)(i / 2);
        d.coll.func = i % 2 ? "Broadcast" : "AllReduce";
        d.coll.datatype = "ncclFloat32";
        d.coll.algo = "RING";
        d.coll.proto = "SIMPLE";
        d.coll.count = 1 << 20;
        d.coll.nChannels = 1;
        void *op = start(&d);
        nsc_host_stop(&host, op);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_KERNEL_CH;
        d.parentObj = op;
        d.kernelCh.channelId = 0;
        d.kernelCh.pTimer = gs;
        void *kch = start(&d);
        sleep_until(ge);
        nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP, ge);
        nsc_host_stop(&host, kch);
    }
    nsc_host_finalize(&host, ctx);
    nsc_host_unload(&host);
    printf("done %llu\n", (unsigned long long)now_ns());
    return 0;
}
