// SPDX-License-Identifier: Apache-2.0
/*
 * comm_churn.c - communicators created and destroyed the way long jobs
 * and elastic restarts do, through a profiler plugin loaded as NCCL loads
 * it (nccl/host.c):
 *
 *   comm_churn --plugin SO --comms N [--open-at-once K] [--stale-finalize]
 *              [--linger-ms M] [--idle I]
 *
 * One "anchor" comm stays open throughout (so the process keeps one
 * session and one file). N comms "churn-<i>" (commHash 0xc0000000 + i,
 * rank i % 4 of 4) are created in quick succession, each runs one Coll
 * (AllReduce, seqNumber i) and is finalized once K newer ones are open.
 * K may be N: all N open at once (more than the 1,024 the comm table once
 * held), each with its Coll, then all finalized.
 * With --stale-finalize, 16,383 comms "late-<j>" (commHash 0xd0000000 + j)
 * then fill every slot besides the anchor's, every churn comm's context
 * is finalized a second time (each now names a slot another live comm
 * holds), and only then does each late comm run its Coll and finalize:
 * a second finalize that closed a live comm would lose that Coll. With
 * every slot taken, one more comm "over" must be refused without failing
 * init (a failed init makes NCCL 2.29+ unload the plugin under the others):
 * init returns 0, no context, the mask left as it was; its Coll is counted
 * as an unknown context.
 * --linger-ms: once every churn comm is finalized, wait M ms (the anchor
 *   still open) before the anchor's Coll and the end: the live metrics
 *   write files meanwhile, after those comms ended.
 * --idle I: first, I comms "idle-<k>" (commHash 0xe0000000 + k) are
 *   created and finalized with no operation, then (with --linger-ms) M ms
 *   pass before the churn: more ended comms than the live metrics follow
 *   at once (4,096), shown ended in a file before the churn comms come.
 * Prints "comms N late L stale-finalizes S".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host.h"

static struct nsc_host host;

static int comm_init(void **ctx, uint64_t id, const char *name, int rank) {
    if (nsc_host_init(&host, ctx, id, NULL, name, 1, 4, rank) != 0 || !*ctx) {
        fprintf(stderr, "comm_churn: init of %s failed\n", name);
        return -1;
    }
    return 0;
}

static void one_coll(void *ctx, uint64_t seq, int rank) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.rank = rank;
    d.coll.seqNumber = seq;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING";
    d.coll.proto = "LL";
    d.coll.count = 1024;
    d.coll.nChannels = 1;
    void *h = NULL;
    nsc_host_start(&host, ctx, &h, &d);
    nsc_host_stop(&host, h);
}

static void linger(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv) {
    const char *plugin = NULL;
    long comms = 3000, at_once = 100, linger_ms = 0, idle = 0;
    int stale = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--comms") && i + 1 < argc)
            comms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--open-at-once") && i + 1 < argc)
            at_once = atol(argv[++i]);
        else if (!strcmp(argv[i], "--linger-ms") && i + 1 < argc)
            linger_ms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--idle") && i + 1 < argc)
            idle = atol(argv[++i]);
        else if (!strcmp(argv[i], "--stale-finalize"))
            stale = 1;
        else {
            fprintf(stderr, "comm_churn: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    if (comms < 1 || at_once < 1 || at_once > 100000) {
        fprintf(stderr, "comm_churn: --comms >= 1, --open-at-once 1..100000\n");
        return 1;
    }
    char err[1024];
    if (!plugin || nsc_host_load(&host, plugin, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "comm_churn: %s\n", plugin ? err : "--plugin is required");
        return 1;
    }
    void *anchor;
    if (comm_init(&anchor, 0xa11c0deull, "anchor", 0) != 0)
        return 1;
    void **ctx = calloc((size_t)comms, sizeof(*ctx));
    if (!ctx)
        return 1;
    char name[64];
    for (long k = 0; k < idle; k++) {
        void *c;
        snprintf(name, sizeof(name), "idle-%ld", k);
        if (comm_init(&c, 0xe0000000ull + (uint64_t)k, name, (int)(k % 4)) != 0)
            return 1;
        nsc_host_finalize(&host, c);
    }
    if (idle)
        linger(linger_ms);
    for (long i = 0; i < comms; i++) {
        snprintf(name, sizeof(name), "churn-%ld", i);
        if (comm_init(&ctx[i], 0xc0000000ull + (uint64_t)i, name, (int)(i % 4)) != 0)
            return 1;
        one_coll(ctx[i], (uint64_t)i, (int)(i % 4));
        if (i >= at_once)
            nsc_host_finalize(&host, ctx[i - at_once]);
    }
    for (long i = comms > at_once ? comms - at_once : 0; i < comms; i++)
        nsc_host_finalize(&host, ctx[i]);
    long late = 0, stale_calls = 0;
    if (stale) {
        enum { LATE = 16383 }; /* the comm table's 16,384 slots, less the anchor's */
        static void *lctx[LATE];
        for (; late < LATE; late++) {
            snprintf(name, sizeof(name), "late-%ld", late);
            if (comm_init(&lctx[late], 0xd0000000ull + (uint64_t)late, name, (int)(late % 4)) != 0)
                return 1;
        }
        void *octx = (void *)1;
        int omask = 0x5a5a;
        int rc = nsc_host_init(&host, &octx, 0xf0000000ull, &omask, "over", 1, 4, 0);
        if (rc != 0 || octx || omask != 0x5a5a) {
            fprintf(stderr, "comm_churn: the comm past the table: init returned %d, %s context, "
                            "mask %#x (want 0, none, 0x5a5a)\n", rc, octx ? "a" : "no", omask);
            return 1;
        }
        one_coll(octx, 0, 0);
        nsc_host_finalize(&host, octx);
        for (long i = 0; i < comms; i++, stale_calls++)
            nsc_host_finalize(&host, ctx[i]);
        for (long j = 0; j < LATE; j++) {
            one_coll(lctx[j], 1000000 + (uint64_t)j, (int)(j % 4));
            nsc_host_finalize(&host, lctx[j]);
        }
    }
    linger(linger_ms);
    one_coll(anchor, 0, 0);
    nsc_host_finalize(&host, anchor);
    free(ctx);
    printf("comms %ld late %ld stale-finalizes %ld\n", comms, late, stale_calls);
    return 0;
}
