// SPDX-License-Identifier: Apache-2.0
/*
 * fake_nccl_lib.c - a tiny NCCL stand-in as a shared library, for Python
 * tests through ctypes: it loads a profiler plugin the way NCCL does
 * (nccl/host.c) and issues what NCCL 2.28 issues for a collective
 * (GroupApi > CollApi, Group > Coll, KernelCh with GPU timers) on the
 * calling thread, or on a thread of its own (as PyTorch's autograd threads
 * and XLA's threads do).
 *
 *   fake_load(plugin_path) -> 0     fake_init(rank, nranks) -> 0
 *   (through profiler API $FAKE_NCCL_API, 1..7, when set: an older NCCL;
 *   else the newest the plugin exports)
 *   fake_collective(func, count)    fake_collective_on_thread(func, count)
 *   fake_send(count)                fake_finalize()
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

#define EXPORT __attribute__((visibility("default")))

static struct nsc_host host;
static void *ctx;
static uint64_t seq, gpu_ns = 1000000000ull;

EXPORT int fake_load(const char *plugin);
EXPORT int fake_init(int rank, int nranks);
EXPORT void fake_collective(const char *func, uint64_t count);
EXPORT void fake_collective_on_thread(const char *func, uint64_t count);
EXPORT void fake_send(uint64_t count);
EXPORT void fake_finalize(void);

int fake_load(const char *plugin) {
    char err[256];
    const char *v = getenv("FAKE_NCCL_API");
    if (nsc_host_load(&host, plugin, v ? atoi(v) : 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "fake_nccl_lib: %s\n", err);
        return -1;
    }
    return 0;
}

int fake_init(int rank, int nranks) {
    int mask = 0;
    return nsc_host_init(&host, &ctx, 0xfeedull, &mask, "fake", 1, nranks, rank);
}

static const char *intern_func(const char *f) {
    /* NCCL passes pointers to static names; so do we (ctypes' buffers are
     * transient) */
    static const char *const names[] = {"AllReduce", "AllGather", "Broadcast", "ReduceScatter"};
    for (unsigned i = 0; i < 4; i++)
        if (!strcmp(f, names[i]))
            return names[i];
    return "AllReduce";
}

void fake_collective(const char *func, uint64_t count) {
    const char *fn = intern_func(func);
    nsc_abi_descr_v7 d;
    void *gapi, *capi, *grp, *coll, *kch;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_GROUP_API;
    d.groupApi.groupDepth = 1;
    nsc_host_start(&host, ctx, &gapi, &d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL_API;
    d.parentObj = gapi;
    d.collApi.func = fn;
    d.collApi.count = count;
    d.collApi.datatype = "ncclFloat32";
    nsc_host_start(&host, ctx, &capi, &d);
    nsc_host_stop(&host, capi);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_GROUP;
    nsc_host_start(&host, ctx, &grp, &d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.parentObj = capi;
    d.coll.parentGroup = grp;
    d.coll.seqNumber = seq++;
    d.coll.func = fn;
    d.coll.count = count;
    d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING";
    d.coll.proto = "LL";
    d.coll.nChannels = 1;
    nsc_host_start(&host, ctx, &coll, &d);
    nsc_host_stop(&host, coll);
    nsc_host_stop(&host, grp);
    nsc_host_stop(&host, gapi);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_KERNEL_CH;
    d.parentObj = coll;
    d.kernelCh.pTimer = gpu_ns;
    nsc_host_start(&host, ctx, &kch, &d);
    /* GPU time grows with the count: callers' shares are predictable */
    nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP, gpu_ns + count);
    nsc_host_stop(&host, kch);
    gpu_ns += count + 1000;
}

struct job {
    const char *func;
    uint64_t count;
};

static void *run_job(void *p) {
    struct job *j = p;
    fake_collective(j->func, j->count);
    return NULL;
}

void fake_collective_on_thread(const char *func, uint64_t count) {
    struct job j = {intern_func(func), count};
    pthread_t t;
    if (pthread_create(&t, NULL, run_job, &j) == 0)
        pthread_join(t, NULL);
}

void fake_send(uint64_t count) {
    nsc_abi_descr_v7 d;
    void *h;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_P2P_API;
    d.p2pApi.func = "Send";
    d.p2pApi.count = count;
    d.p2pApi.datatype = "ncclInt8";
    nsc_host_start(&host, ctx, &h, &d);
    nsc_host_stop(&host, h);
}

void fake_finalize(void) {
    if (ctx)
        nsc_host_finalize(&host, ctx);
    ctx = NULL;
}
