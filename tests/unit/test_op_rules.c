// SPDX-License-Identifier: Apache-2.0
/*
 * test_op_rules.c - nccl/op_rules.h: which operations expect KernelCh (a
 * Send/Recv to its own rank or of zero bytes does not), when an operation is
 * complete under each rule, and every nccl-tests size and bus factor.
 */
#include <math.h>

#include "check.h"
#include "op_rules.h"

static int near(double a, double b) { return fabs(a - b) < 1e-12; }

static void expects_kernel_ch(void) {
    /* collectives always, whatever their count */
    CHECK(nsc_op_expects_kernel_ch(0, 1024, 0, 0));
    CHECK(nsc_op_expects_kernel_ch(0, 0, 0, 3));
    /* a Send/Recv to another rank with bytes */
    CHECK(nsc_op_expects_kernel_ch(1, 4096, 1, 0));
    /* to its own rank: no proxy work, no KernelCh */
    CHECK(!nsc_op_expects_kernel_ch(1, 4096, 2, 2));
    /* zero bytes, to another rank or to itself */
    CHECK(!nsc_op_expects_kernel_ch(1, 0, 1, 0));
    CHECK(!nsc_op_expects_kernel_ch(1, 0, 0, 0));
    /* rank not known yet: only the byte count can tell */
    CHECK(nsc_op_expects_kernel_ch(1, 4096, 0, -1));
    CHECK(!nsc_op_expects_kernel_ch(1, 0, 0, -1));
}

static void kernel_channels(void) {
    CHECK(nsc_op_channels_known(4) && nsc_op_channels_known(7));
    CHECK(!nsc_op_channels_known(1) && !nsc_op_channels_known(3));
    CHECK(nsc_op_kernel_channels(1, 1, 1, 8) == 8);
    CHECK(nsc_op_kernel_channels(1, 1, 1, 0) == 0);  /* no channel: done at its stop */
    CHECK(nsc_op_kernel_channels(0, 1, 1, 8) == -1); /* KernelCh not recorded */
    CHECK(nsc_op_kernel_channels(1, 0, 1, 8) == -1); /* API v1-v3 */
    CHECK(nsc_op_kernel_channels(1, 1, 0, 8) == -1); /* self or zero-byte Send/Recv */
}

static void complete(void) {
    /* KernelCh rule: its stop, no child open, every channel */
    CHECK(nsc_op_complete(1, 0, 4, 4, 0));
    CHECK(nsc_op_complete(1, 0, 4, 5, 0));  /* a duplicate stop counted */
    CHECK(!nsc_op_complete(1, 0, 4, 3, 1)); /* quiet does not replace a channel */
    CHECK(!nsc_op_complete(0, 0, 4, 4, 1)); /* not stopped */
    CHECK(!nsc_op_complete(1, 1, 4, 4, 1)); /* a ProxyOp still open */
    CHECK(nsc_op_complete(1, 0, 0, 0, 0));
    /* host rule: its stop, no child open, the grace */
    CHECK(nsc_op_complete(1, 0, -1, 0, 1));
    CHECK(!nsc_op_complete(1, 0, -1, 0, 0));
    CHECK(!nsc_op_complete(0, 0, -1, 0, 1));
    CHECK(!nsc_op_complete(1, 2, -1, 0, 1));
    /* the case live metrics got wrong: a Send to its own rank with KernelCh
     * recorded and 2 channels in its descriptor completes by the host rule */
    int nch = nsc_op_kernel_channels(1, 1, nsc_op_expects_kernel_ch(1, 4096, 0, 0), 2);
    CHECK(nch == -1 && nsc_op_complete(1, 0, nch, 0, 1));
}

static void factors(void) {
    const int n = 8;
    struct { const char *func; int p2p; double size, bus; } want[] = {
        {"AllReduce", 0, 1, 2.0 * 7 / 8},
        {"AllGather", 0, 8, 7.0 / 8},
        {"ReduceScatter", 0, 8, 7.0 / 8},
        {"AlltoAll", 0, 8, 7.0 / 8},
        {"Gather", 0, 8, 7.0 / 8},
        {"Scatter", 0, 8, 7.0 / 8},
        {"Broadcast", 0, 1, 1},
        {"Reduce", 0, 1, 1},
        {"SendRecv", 0, 1, 1},
        {"Send", 1, 1, 1},
        {"Recv", 1, 1, 1},
        {"AllReduce", 1, 1, 1}, /* a p2p is never scaled, whatever its name */
    };
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK(near(nsc_op_size_factor(want[i].func, want[i].p2p, n), want[i].size));
        CHECK(near(nsc_op_bus_factor(want[i].func, want[i].p2p, n), want[i].bus));
        CHECK(near(nsc_op_bus_bytes(want[i].func, want[i].p2p, n, 1000.0),
                   1000.0 * want[i].size * want[i].bus));
    }
    /* nccl-tests' numbers: an AllGather of 1 MiB per rank over 8 ranks moves
     * 7 MiB through each rank's link */
    CHECK(near(nsc_op_bus_bytes("AllGather", 0, 8, 1048576.0), 7.0 * 1048576.0));
    CHECK(near(nsc_op_bus_factor("AllReduce", 0, 2), 1.0));
    CHECK(near(nsc_op_bus_factor("AllReduce", 0, 1), 0.0)); /* one rank moves nothing */
    /* unknown ranks or name: 1 */
    CHECK(near(nsc_op_bus_factor("AllReduce", 0, 0), 1.0));
    CHECK(near(nsc_op_size_factor("AllGather", 0, 0), 1.0));
    CHECK(near(nsc_op_bus_factor(NULL, 0, 8), 1.0));
}

/* A Send or Recv left open is overtaken only by a completion that started
 * after its own stop (a later launch), never by one of its own launch. */
static void p2p_overtaken(void) {
    CHECK(nsc_op_p2p_overtaken(100, 101));
    CHECK(!nsc_op_p2p_overtaken(100, 100)); /* started as it stopped: maybe its launch */
    CHECK(!nsc_op_p2p_overtaken(100, 50));  /* of its own launch */
    CHECK(!nsc_op_p2p_overtaken(100, 0));   /* nothing completed */
    CHECK(!nsc_op_p2p_overtaken(0, 500));   /* never stopped: still enqueuing */
}

int main(void) {
    p2p_overtaken();
    expects_kernel_ch();
    kernel_channels();
    complete();
    factors();
    return check_summary();
}
