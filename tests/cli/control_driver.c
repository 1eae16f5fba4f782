// SPDX-License-Identifier: Apache-2.0
/*
 * control_driver.c - an NCCL stand-in that uses ncclscope's run-time control
 * the way a program would (include/ncclscope.h: dlsym on the loaded plugin)
 * and, like NCCL, re-reads the event mask through the pointer it gave init
 * before every event. test_control.py checks the trace it leaves.
 *
 *   control_driver PLUGIN
 *
 * Phases, each N operations (GroupApi > CollApi, Group > Coll, ProxyOp):
 *   1  recording, default mask                 then mark "phase one"
 *   2  after stop(): NCCL's mask is 0; one Coll is also forced through
 *      (as in the moment after a stop) and must not be recorded
 *   3  after start()                            then mark "phase three"
 *   4  after set_mask(Coll): only Coll
 *   5  after "mark from a file" + "stop" appended to <dir>/control
 *   6  after "start" + "mask default" appended to <dir>/<host>-<pid>.control
 * and prints one line per phase: "phase P mask M delivered D".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "ncclscope.h"

#define N 50

static struct nsc_host host;
static void *ctx;
static int mask; /* what NCCL re-reads */

static int fail(const char *what) {
    fprintf(stderr, "FAIL: %s\n", what);
    exit(1);
}

/* NCCL's CollApi handle: 2.28-2.31 set it at each CollApi start, never
 * clear it, and stop it at every collective call, started or not. */
static void *capi;

/* One operation the way NCCL 2.28 makes it, each event only when its type
 * is in the mask at that moment. Returns the events delivered. */
static int op(long i) {
    int m = __atomic_load_n(&mask, __ATOMIC_RELAXED), n = 0;
    nsc_abi_descr_v7 d;
    void *gapi = NULL, *grp = NULL, *coll = NULL, *pop = NULL;
    if (m & NSC_ABI_GROUP_API) {
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP_API;
        n += nsc_host_start(&host, ctx, &gapi, &d);
    }
    if (m & NSC_ABI_COLL_API) {
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL_API;
        d.parentObj = gapi;
        d.collApi.func = "AllReduce";
        d.collApi.count = 256;
        d.collApi.datatype = "ncclFloat32";
        n += nsc_host_start(&host, ctx, &capi, &d);
    }
    nsc_host_stop(&host, capi); /* also the last one again, once CollApi left the mask */
    if (m & NSC_ABI_GROUP) {
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP;
        n += nsc_host_start(&host, ctx, &grp, &d);
    }
    if (m & NSC_ABI_COLL) {
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL;
        d.parentObj = capi;
        d.coll.parentGroup = grp;
        d.coll.seqNumber = (uint64_t)i;
        d.coll.func = "AllReduce";
        d.coll.count = 256;
        d.coll.datatype = "ncclFloat32";
        d.coll.algo = "RING";
        d.coll.proto = "LL";
        d.coll.nChannels = 1;
        n += nsc_host_start(&host, ctx, &coll, &d);
        nsc_host_stop(&host, coll);
    }
    nsc_host_stop(&host, grp);
    nsc_host_stop(&host, gapi);
    if (m & NSC_ABI_PROXY_OP) {
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_PROXY_OP;
        d.parentObj = coll;
        d.proxyOp.pid = getpid();
        n += nsc_host_start(&host, ctx, &pop, &d);
        nsc_host_stop(&host, pop);
    }
    return n;
}

static long seq;

static void phase(int p) {
    int n = 0;
    for (int i = 0; i < N; i++)
        n += op(seq++);
    printf("phase %d mask 0x%x delivered %d\n", p, (unsigned)mask, n);
}

static void append(const char *path, const char *text) {
    FILE *f = fopen(path, "a");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        fail(path);
}

/* Waits (up to 5 s) for the ops thread to apply a control file. */
static void wait_mask(int want_zero) {
    for (int i = 0; i < 500; i++) {
        if ((__atomic_load_n(&mask, __ATOMIC_RELAXED) == 0) == want_zero)
            return;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    fail("the control file was not applied within 5 s");
}

int main(int argc, char **argv) {
    if (argc != 2)
        return fprintf(stderr, "usage: control_driver PLUGIN\n"), 2;
    char err[512];
    if (nsc_host_load(&host, argv[1], 7, err, sizeof(err)) != 0)
        return fprintf(stderr, "%s\n", err), 1;
    struct ncclscope_control c;
    if (ncclscope_control_open(&c, argv[1]) != 0)
        fail("ncclscope_control_open");
    if (c.mark("too early") != NCCLSCOPE_NO_SESSION)
        fail("mark before any communicator");
    if (c.dump() != NCCLSCOPE_NOT_FLIGHT_MODE || !strstr(c.strerror(c.dump()), "flight"))
        fail("dump outside flight mode");
    if (c.set_mask(1u << 20) != NCCLSCOPE_INVALID || c.set_events("nonsense") != NCCLSCOPE_INVALID ||
        c.mark(NULL) != NCCLSCOPE_INVALID)
        fail("invalid arguments accepted");
    if (nsc_host_init(&host, &ctx, 0xc0de, &mask, "control", 1, 1, 0) != 0 || !ctx)
        fail("init");
    if ((uint32_t)mask != c.mask())
        fail("NCCL's mask differs from the recorded mask");

    phase(1);
    if (c.mark("phase one") != NCCLSCOPE_OK)
        fail("mark");

    c.stop();
    if (mask != 0 || c.mask() != 0)
        fail("stop: NCCL's mask is not 0");
    phase(2);
    { /* NCCL read the mask just before the stop: a Coll still arrives */
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL;
        d.coll.func = "Straggler";
        d.coll.datatype = "ncclInt8";
        void *h = NULL;
        nsc_host_start(&host, ctx, &h, &d);
        nsc_host_stop(&host, h);
    }

    c.start();
    phase(3);
    c.mark("phase three");

    if (c.set_mask(NSC_ABI_COLL) != NCCLSCOPE_OK || mask != NSC_ABI_COLL || c.mask() != NSC_ABI_COLL)
        fail("set_mask");
    phase(4);

    const char *dir = getenv("NCCLSCOPE_DIR");
    char host_name[64] = "";
    gethostname(host_name, sizeof(host_name) - 1);
    char path[2048];
    snprintf(path, sizeof(path), "%s/control", dir);
    append(path, "# a comment, then a mark and a stop\nmark from a file\nstop\n");
    wait_mask(1);
    phase(5);
    snprintf(path, sizeof(path), "%s/%s-%d.control", dir, host_name, (int)getpid());
    append(path, "start\nmask default\n");
    wait_mask(0);
    phase(6);

    nsc_host_finalize(&host, ctx);
    ncclscope_control_close(&c);
    printf("done\n");
    return 0;
}
