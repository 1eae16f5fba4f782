/*
 * fake_nccl.c - an NCCL stand-in for tests: loads a profiler plugin the way
 * NCCL does (common/host.c) and either replays a recording or generates a
 * synthetic stream that follows NCCL 2.28's call order:
 *   GroupApi -> CollApi (stopped before its Coll starts) -> Group -> Coll
 *   (parent CollApi, parentGroup Group) -> KernelCh and ProxyOp (parent
 *   Coll, started after the Coll stopped) -> ProxyStep.
 *
 *   fake_nccl --plugin SO [--version N] --replay FILE
 *   fake_nccl --plugin SO [--version N] --synthetic OPS [--threads T]
 *             [--bad-gpu-every N] (OPS = -1: run until killed; every Nth
 *             KernelCh then ends on the GPU when it started: impossible)
 * Prints "ops N maxrss_kb K" when done.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "host.h"
#include "replay.h"
#include "tsv_recording.h"

static struct nsc_host host;
static long long ops = 1000;
static long long bad_gpu_every; /* every Nth KernelCh gets a GPU stop before its start */

static void *app_thread(void *arg) {
    int rank = (int)(long)arg;
    void *ctx = NULL;
    int mask = 0;
    if (nsc_host_init(&host, &ctx, 0x1234abcdull, &mask, "fake", 1, 4, rank) != 0)
        return NULL;
    static const char *const funcs[] = {"AllReduce", "AllGather", "Broadcast"};
    for (long long i = 0; ops < 0 || i < ops; i++) {
        nsc_abi_descr_v6 d;
        void *gapi, *capi, *grp, *coll, *kch, *pop, *pst;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP_API;
        d.groupApi.groupDepth = 1;
        nsc_host_start(&host, ctx, &gapi, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL_API;
        d.parentObj = gapi;
        d.collApi.func = funcs[i % 3];
        d.collApi.count = 16;
        d.collApi.datatype = "ncclFloat32";
        nsc_host_start(&host, ctx, &capi, &d);
        nsc_host_stop(&host, capi);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP;
        nsc_host_start(&host, ctx, &grp, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL;
        d.parentObj = capi; /* stopped already: must still work as a parent */
        d.coll.parentGroup = grp;
        d.coll.seqNumber = (uint64_t)i;
        d.coll.func = funcs[i % 3];
        d.coll.count = 16;
        d.coll.datatype = "ncclFloat32";
        d.coll.algo = "RING";
        d.coll.proto = "LL";
        d.coll.nChannels = 1;
        nsc_host_start(&host, ctx, &coll, &d);
        nsc_host_stop(&host, coll);
        nsc_host_stop(&host, grp);
        nsc_host_state(&host, gapi, NSC_ABI_GROUP_END_API_START, 0);
        nsc_host_stop(&host, gapi);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_KERNEL_CH;
        d.parentObj = coll;
        d.kernelCh.pTimer = 1000000ull * (uint64_t)i;
        nsc_host_start(&host, ctx, &kch, &d);
        nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP,
                       1000000ull * (uint64_t)i +
                           (bad_gpu_every && i % bad_gpu_every == 0 ? 0 : 500));
        nsc_host_stop(&host, kch);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_PROXY_OP;
        d.parentObj = coll;
        d.proxyOp.pid = getpid();
        d.proxyOp.nSteps = 1;
        nsc_host_start(&host, ctx, &pop, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_PROXY_STEP;
        d.parentObj = pop;
        nsc_host_start(&host, ctx, &pst, &d);
        nsc_host_state(&host, pst, NSC_ABI_PROXY_STEP_SEND_WAIT, 4096);
        nsc_host_stop(&host, pst);
        nsc_host_stop(&host, pop);
    }
    nsc_host_finalize(&host, ctx);
    return NULL;
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *replay = NULL;
    int version = 0, threads = 1, synthetic = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--version") && i + 1 < argc)
            version = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--replay") && i + 1 < argc)
            replay = argv[++i];
        else if (!strcmp(argv[i], "--synthetic") && i + 1 < argc) {
            synthetic = 1;
            ops = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--bad-gpu-every") && i + 1 < argc)
            bad_gpu_every = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "fake_nccl: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    char err[1024];
    if (!plugin || nsc_host_load(&host, plugin, version, err, sizeof(err)) != 0) {
        fprintf(stderr, "fake_nccl: %s\n", plugin ? err : "--plugin is required");
        return 1;
    }
    if (replay) {
        struct nsc_script s;
        size_t n = strlen(replay);
        int rc = n > 4 && !strcmp(replay + n - 4, ".tsv") ? nsc_script_from_tsv(&s, replay, err, sizeof(err))
                                                          : nsc_script_from_trace(&s, replay, err, sizeof(err));
        if (rc != 0 || nsc_replay_run(&host, &s, NULL, err, sizeof(err)) != 0) {
            fprintf(stderr, "fake_nccl: %s\n", err);
            return 1;
        }
        nsc_script_free(&s);
    } else if (synthetic) {
        pthread_t t[64];
        if (threads < 1 || threads > 64)
            threads = 1;
        for (int i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, app_thread, (void *)(long)i);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("ops %lld maxrss_kb %ld\n", ops * threads, ru.ru_maxrss);
    nsc_host_unload(&host);
    return 0;
}
