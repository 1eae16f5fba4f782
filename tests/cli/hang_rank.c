// SPDX-License-Identifier: Apache-2.0
/*
 * hang_rank.c - one rank of a job that hangs, through a profiler plugin
 * loaded as NCCL loads it (nccl/host.c). Run one process per rank, then
 * kill them all with SIGKILL:
 *
 *   hang_rank --plugin SO --rank R --nranks N --ops K --mode coll|p2p|job [--gate]
 *             [--first S] [--lose Q] [--version V] [--nch N] [--queued]
 *             [--skip R] [--intra] [--pause-us U]
 *
 * coll: comm "hang-coll" (commHash 0x4a4e470001) runs AllReduce seqNumber
 *   0 .. K-1 on 2 channels, each with a ProxyOp sending to rank R+1 and
 *   one ProxyStep. The last rank never enters seqNumber K-1; the others
 *   enqueue it, channel 1 finishes, channel 0's KernelCh starts and never
 *   stops, and its ProxyOp's step stays in ProxyStepSendPeerWait.
 * p2p: comm "hang-p2p" (0x4a4e470002), 2 ranks: rank 0 sends K times to
 *   rank 1, which posts only K-1 receives; the last Send stays in flight.
 * Prints "hung" once the rank is where it stays, then waits to be killed.
 * --gate: after the plugin's init, prints "ready" and runs its operations
 *   only once a line arrives on stdin (or stdin ends), so that a job's
 *   ranks all have their plugin up before any of them starts to hang (in
 *   flight mode a rank whose plugin comes up after another rank's watchdog
 *   touched dump-all takes that change for an earlier job's and never dumps).
 * --first S: coll's seqNumbers are S .. S+K-1, as in a trace that lost its
 *   first S collectives (a flight window, deleted segments).
 * --lose Q: coll's seqNumber Q never records channel 0's KernelCh stop, as
 *   where a flight window began between that child's START and the rest of
 *   its operation, or a stop went missing; the later collectives complete,
 *   so Q did too (a comm's collectives run in order on one stream). In p2p
 *   mode the Send or Recv number Q (from 0) loses it: the later ones, each
 *   a launch of its own, complete, so it did too.
 * --queued: coll's last collective is enqueued (started and stopped) but
 *   its kernel never starts (queued behind another): no KernelCh at all.
 * --version V: load the plugin's ncclProfiler_vV (default: the newest).
 * --nch N: coll's descriptors say N channels (default 2) while channels 0
 *   and 1 run, as NCCL 2.26 (API v3) gives nMaxChannels, the most a
 *   collective may use.
 * job: a training step's collectives on two comms, as a data-parallel job
 *   runs them. Comm "hang-job" (0x4a4e470003, all N ranks): AllReduce then
 *   AllGather per step, seqNumbers S .. S+K-1 (NCCL counts them per
 *   function: AllReduce 9 and AllGather 9 coexist); ranks 0 and 1 also
 *   hold comm "hang-pair" (0x4a4e470004, 2 ranks) with a Broadcast per
 *   step, seqNumbers 100 .. 100+K-1. Rank --skip (default 2) never enters
 *   the last AllReduce: the others enqueue it (channel 1 finishes, channel
 *   0's kernel runs and never stops), then enqueue the step's AllGather
 *   and Broadcast, whose kernels never start (queued behind it on the
 *   same GPU): no KernelCh, their ProxyOps posted and waiting for the GPU.
 * --intra: no ProxyOp at all, as a job on one node over NVLink (with the
 *   lean mask nothing then records completion; the default mask samples
 *   KernelCh).
 * --pause-us U: job's steps U microseconds apart, as a training step's
 *   compute between them (KernelCh's sampling period then takes each).
 * --healthy: job mode without a hang: every rank runs every step's
 *   collectives to completion, then idles (a compute gap, a checkpoint
 *   every rank writes): all ranks stop at the same seqNumbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

static struct nsc_host host;
static void *ctx;
static int rank;

/* An event of the current comm (ctx: job mode switches between two). */
static void *start(nsc_abi_descr_v7 *d) {
    void *h = NULL;
    d->rank = rank;
    nsc_host_start(&host, ctx, &h, d);
    return h;
}

static int intra; /* --intra: no ProxyOp */
static long pause_us; /* --pause-us: the host's time between a job's steps */

/* A channel's GPU work and its proxy; `stuck`: it never finishes; `lost`:
 * it finishes, but its KernelCh stop is not recorded. */
static void channel(void *op, int ch, int peer, int is_send, long i, int stuck, int lost) {
    uint64_t g = 1000000000ull + 1000000ull * (uint64_t)i + 1000ull * (uint64_t)ch;
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_KERNEL_CH;
    d.parentObj = op;
    d.kernelCh.channelId = (uint8_t)ch;
    d.kernelCh.pTimer = g;
    void *kch = start(&d);
    if (intra) {
        if (!stuck && !lost) {
            nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP, g + 500);
            nsc_host_stop(&host, kch);
        }
        return;
    }
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_OP;
    d.parentObj = op;
    d.proxyOp.pid = getpid();
    d.proxyOp.channelId = (uint8_t)ch;
    d.proxyOp.peer = peer;
    d.proxyOp.nSteps = 1;
    d.proxyOp.isSend = is_send;
    void *pop = start(&d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_STEP;
    d.parentObj = pop;
    d.proxyStep.step = 0;
    void *pst = start(&d);
    if (stuck) {
        /* A send waits for the peer's clear-to-send; a receive for data. */
        nsc_host_state(&host, pst,
                       is_send ? NSC_ABI_PROXY_STEP_SEND_PEER_WAIT_V4 : NSC_ABI_PROXY_STEP_RECV_WAIT, 0);
        return;
    }
    nsc_host_state(&host, pst, is_send ? NSC_ABI_PROXY_STEP_SEND_WAIT : NSC_ABI_PROXY_STEP_RECV_WAIT,
                   4096);
    nsc_host_stop(&host, pst);
    nsc_host_stop(&host, pop);
    if (lost)
        return;
    nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP, g + 500);
    nsc_host_stop(&host, kch);
}

/* A collective enqueued behind a kernel that never ends: its kernel never
 * starts (no KernelCh); the proxy has posted its ProxyOp, whose step waits
 * for the GPU. */
static void queued(void *op, int ch, int peer) {
    if (intra)
        return;
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_OP;
    d.parentObj = op;
    d.proxyOp.pid = getpid();
    d.proxyOp.channelId = (uint8_t)ch;
    d.proxyOp.peer = peer;
    d.proxyOp.nSteps = 1;
    d.proxyOp.isSend = 1;
    void *pop = start(&d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_PROXY_STEP;
    d.parentObj = pop;
    d.proxyStep.step = 0;
    void *pst = start(&d);
    nsc_host_state(&host, pst, NSC_ABI_PROXY_STEP_SEND_GPU_WAIT, 0);
}

/* One collective of job mode on the current comm: complete, or (last) the
 * step's AllReduce stuck inside its kernel, the others queued behind it. */
static void job_coll(const char *func, uint64_t seq, int nranks, long i, int last) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.coll.seqNumber = seq;
    d.coll.func = func;
    d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.count = 1024;
    d.coll.nChannels = 2;
    void *op = start(&d);
    nsc_host_stop(&host, op);
    int peer = (rank + 1) % nranks;
    if (last && strcmp(func, "AllReduce")) {
        queued(op, 0, peer);
        queued(op, 1, peer);
        return;
    }
    channel(op, 1, peer, 1, i, 0, 0);
    channel(op, 0, peer, 1, i, last, 0);
}

static void hung(void) {
    printf("hung\n");
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *mode = "coll";
    int nranks = 4;
    long ops = 10, first = 0, lose = -1;
    int version = 0, nch = 2, queued_last = 0, skip = 2;
    int gate = 0, healthy = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
            rank = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nranks") && i + 1 < argc)
            nranks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            ops = atol(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else if (!strcmp(argv[i], "--first") && i + 1 < argc)
            first = atol(argv[++i]);
        else if (!strcmp(argv[i], "--queued"))
            queued_last = 1;
        else if (!strcmp(argv[i], "--intra"))
            intra = 1;
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
            skip = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--version") && i + 1 < argc)
            version = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nch") && i + 1 < argc)
            nch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lose") && i + 1 < argc)
            lose = atol(argv[++i]);
        else if (!strcmp(argv[i], "--pause-us") && i + 1 < argc)
            pause_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--gate"))
            gate = 1;
        else if (!strcmp(argv[i], "--healthy"))
            healthy = 1;
        else {
            fprintf(stderr, "hang_rank: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    int p2p = !strcmp(mode, "p2p"), job = !strcmp(mode, "job");
    if (p2p)
        nranks = 2;
    if (ops < 1 || first < 0 || nch < 2 || nch > 64 || nranks < 2 || rank < 0 || rank >= nranks ||
        (!p2p && !job && strcmp(mode, "coll")) || (job && (nranks < 3 || skip < 2 || skip >= nranks))) {
        fprintf(stderr, "hang_rank: --ops >= 1, --first >= 0, --nranks >= 2, 0 <= --rank < nranks, "
                        "--mode coll|p2p|job (job: --nranks >= 3, 2 <= --skip < nranks)\n");
        return 1;
    }
    char err[1024];
    if (!plugin || nsc_host_load(&host, plugin, version, err, sizeof(err)) != 0) {
        fprintf(stderr, "hang_rank: %s\n", plugin ? err : "--plugin is required");
        return 1;
    }
    int mask = -1; /* as NCCL's word before init: the plugin must write it */
    int rc = nsc_host_init(&host, &ctx, p2p ? 0x4a4e470002ull : job ? 0x4a4e470003ull : 0x4a4e470001ull,
                           &mask, p2p ? "hang-p2p" : job ? "hang-job" : "hang-coll", 1, nranks, rank);
    void *ctx_all = ctx, *ctx_pair = NULL;
    int mask_pair = -1;
    if (rc == 0 && ctx && job && rank < 2 &&
        (nsc_host_init(&host, &ctx_pair, 0x4a4e470004ull, &mask_pair, "hang-pair", 1, 2, rank) != 0 ||
         !ctx_pair))
        ctx = NULL;
    if (rc != 0 || !ctx) {
        /* The plugin's init never fails (nccl_api.c): a comm it cannot
         * take gets no context, and NCCL is told to deliver nothing. */
        fprintf(stderr, "hang_rank: init failed: returned %d, %s context, mask %d\n", rc,
                ctx ? "a" : "no", mask);
        return 1;
    }
    if (gate) {
        char line[16];
        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
            line[0] = '\0'; /* stdin ended: no one to wait for, go on */
    }
    for (long i = 0; i < ops && job; i++) {
        int last = i == ops - 1 && !healthy;
        if (pause_us > 0)
            usleep((useconds_t)pause_us);
        ctx = ctx_all;
        if (last && rank == skip)
            hung(); /* skips the AllReduce (and what follows it) */
        job_coll("AllReduce", (uint64_t)(first + i), nranks, i, last);
        job_coll("AllGather", (uint64_t)(first + i), nranks, i, last);
        if (rank < 2) {
            ctx = ctx_pair;
            job_coll("Broadcast", (uint64_t)(100 + i), 2, i, last);
        }
    }
    if (job)
        hung();
    for (long i = 0; i < ops; i++) {
        int last = i == ops - 1;
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        if (p2p) {
            if (last && rank == 1)
                hung(); /* never posts its receive */
            d.type = NSC_ABI_P2P;
            d.p2p.func = rank == 0 ? "Send" : "Recv";
            d.p2p.datatype = "ncclInt8";
            d.p2p.count = 4096;
            d.p2p.peer = 1 - rank;
            d.p2p.nChannels = 1;
            void *op = start(&d);
            nsc_host_stop(&host, op);
            channel(op, 0, 1 - rank, rank == 0, i, last, i == lose);
        } else {
            if (last && rank == nranks - 1)
                hung(); /* skips the collective */
            d.type = NSC_ABI_COLL;
            d.coll.seqNumber = (uint64_t)(first + i);
            d.coll.func = "AllReduce";
            d.coll.datatype = "ncclFloat32";
            d.coll.algo = "RING";
            d.coll.proto = "SIMPLE";
            d.coll.count = 1024;
            d.coll.nChannels = (uint32_t)nch;
            void *op = start(&d);
            nsc_host_stop(&host, op);
            if (last && queued_last)
                hung();
            channel(op, 1, (rank + 1) % nranks, 1, i, 0, 0);
            channel(op, 0, (rank + 1) % nranks, 1, i, last, first + i == lose);
        }
    }
    hung();
}
