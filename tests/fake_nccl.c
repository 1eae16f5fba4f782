// SPDX-License-Identifier: Apache-2.0
/*
 * fake_nccl.c - an NCCL stand-in for tests: loads a profiler plugin the way
 * NCCL does (nccl/host.c) and either replays a recording or generates a
 * synthetic stream that follows NCCL 2.28's call order:
 *   GroupApi -> CollApi (stopped before its Coll starts) -> Group -> Coll
 *   (parent CollApi, parentGroup Group) -> KernelCh and ProxyOp (parent
 *   Coll, started after the Coll stopped) -> ProxyStep,
 * or NCCL 2.31's (API v7) threads and fields (--nccl231, below).
 *
 *   fake_nccl --plugin SO [--version N] --replay FILE
 *   fake_nccl --plugin SO [--version N] --synthetic OPS [--threads T]
 *             [--bad-gpu-every N] (OPS = -1: run until killed; every Nth
 *             KernelCh then ends on the GPU when it started: impossible)
 *   fake_nccl --plugin SO [--version N] --nccl231 OPS [--threads T]
 *             (T devices, one rank each; --version forces an older API,
 *             which then sees what NCCL 2.31's adapters let through)
 * Prints "ops N maxrss_kb K" when done.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "event_types.h"
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
        nsc_abi_descr_v7 d;
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

static pthread_barrier_t all_created; /* --nccl231: every comm exists before any finalize */

/* ---- NCCL 2.31 (--nccl231) ----
 * Per device (rank) three threads, as NCCL 2.31 runs them:
 *   - the application thread ("fake-app<r>"): init, GroupApi, CollApi,
 *     P2pApi, Group, Coll, P2p, CeColl, finalize;
 *   - the proxy progress thread ("fake-proxy<r>"): ProxyOp, ProxyStep;
 *   - the profiler thread NCCL 2.31 starts per device ("fake-prof<r>"):
 *     KernelCh and, under each, its KernelPhase sub-events, all delivered
 *     after the kernel finished (start, KernelPhaseStop, stop per phase),
 *     then KernelChStop and the KernelCh's stop.
 * The application thread hands each operation to the other two through
 * queues, so their callbacks interleave with the next operations' as in
 * NCCL. Only types in the mask the plugin returned are started (NCCL asks
 * nothing else). The values are functions of the operation index i so
 * tests can check that every one arrived:
 *   user tag   (i % 4 == 3) ? 0 : FAKE_TAG + i  (every 4th call untagged)
 *   symmetric  i odd: isSymColl, kernelVariant "AGxLL_R", algo "LL_R",
 *              proto "" (as NCCL reports symmetric kernels); else RING/LL
 *   CeColl     every 8th operation, tag FAKE_CE_TAG + i (both halves set)
 *   GPU times  KernelCh of channel ch: [g, g + 500], g = FAKE_GPU0 +
 *              1e6 i + 1000 ch; phases 0..2 at [g, g+100], [g+100, g+400],
 *              [g+400, g+500] (the first starts and the last ends with it). */
#define FAKE_TAG 0x5a00000000ull
#define FAKE_CE_TAG 0x0123456789ab0000ull
#define FAKE_GPU0 5000000000ull
#define FAKE_NCH 2
#define FAKE_QCAP 64

static const char *const phase_names[3] = {"initial_sync", "compute", "final_sync"};
static const uint64_t phase_at[4] = {0, 100, 400, 500};

struct fake_work {
    void *coll;
    long long i;
    uint32_t mask; /* what the operation's enqueue read (NCCL copies it per task) */
};

struct fake_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fake_work w[FAKE_QCAP];
    unsigned head, tail;
    int closed;
};

struct fake_dev {
    int rank, ndev;
    void *ctx;
    uint64_t mask; /* the mask the current operation was enqueued with */
    int word;      /* the word init got, as NCCL's global: re-read at each enqueue */
    struct fake_queue prof, proxy;
};

static void q_init(struct fake_queue *q) {
    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
}

static void q_push(struct fake_queue *q, struct fake_work w) {
    pthread_mutex_lock(&q->mu);
    while (q->tail - q->head == FAKE_QCAP)
        pthread_cond_wait(&q->cv, &q->mu);
    q->w[q->tail++ % FAKE_QCAP] = w;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void q_close(struct fake_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Returns 0 with *w, or -1 once the queue is closed and empty. */
static int q_pop(struct fake_queue *q, struct fake_work *w) {
    pthread_mutex_lock(&q->mu);
    while (q->tail == q->head && !q->closed)
        pthread_cond_wait(&q->cv, &q->mu);
    int rc = -1;
    if (q->tail != q->head) {
        *w = q->w[q->head++ % FAKE_QCAP];
        pthread_cond_broadcast(&q->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* startEvent as NCCL makes it: only for types the plugin asked for when
 * the operation was enqueued. */
static void *fake_start_m(struct fake_dev *v, uint64_t mask, nsc_abi_descr_v7 *d) {
    void *h = NULL;
    if (mask & d->type)
        nsc_host_start(&host, v->ctx, &h, d);
    return h;
}
static void *fake_start(struct fake_dev *v, nsc_abi_descr_v7 *d) {
    return fake_start_m(v, v->mask, d);
}

static void *profiler_thread(void *arg) {
    struct fake_dev *v = arg;
    char name[16];
    snprintf(name, sizeof(name), "fake-prof%d", v->rank);
    pthread_setname_np(pthread_self(), name);
    struct fake_work w;
    while (q_pop(&v->prof, &w) == 0) {
        for (int ch = 0; ch < FAKE_NCH; ch++) {
            uint64_t g = FAKE_GPU0 + 1000000ull * (uint64_t)w.i + 1000ull * (uint64_t)ch;
            nsc_abi_descr_v7 d;
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_KERNEL_CH;
            d.parentObj = w.coll;
            d.rank = v->rank;
            d.kernelCh.channelId = (uint8_t)ch;
            d.kernelCh.pTimer = g;
            void *kch = fake_start_m(v, w.mask, &d);
            for (int p = 0; p < 3 && kch; p++) {
                memset(&d, 0, sizeof(d));
                d.type = NSC_ABI_KERNEL_PHASE;
                d.parentObj = kch;
                d.rank = v->rank;
                d.kernelPhase.channelId = (uint8_t)ch;
                d.kernelPhase.phaseId = (uint8_t)p;
                d.kernelPhase.phaseName = phase_names[p];
                d.kernelPhase.pTimer = g + phase_at[p];
                void *ph = fake_start_m(v, w.mask, &d);
                if (ph) {
                    nsc_host_state(&host, ph, NSC_ABI_KERNEL_PHASE_STOP, g + phase_at[p + 1]);
                    nsc_host_stop(&host, ph);
                }
            }
            if (kch) {
                nsc_host_state(&host, kch, NSC_ABI_KERNEL_CH_STOP, g + phase_at[3]);
                nsc_host_stop(&host, kch);
            }
        }
    }
    return NULL;
}

static void *proxy_thread(void *arg) {
    struct fake_dev *v = arg;
    char name[16];
    snprintf(name, sizeof(name), "fake-proxy%d", v->rank);
    pthread_setname_np(pthread_self(), name);
    struct fake_work w;
    while (q_pop(&v->proxy, &w) == 0) {
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_PROXY_OP;
        d.parentObj = w.coll;
        d.rank = v->rank;
        d.proxyOp.pid = getpid();
        d.proxyOp.channelId = (uint8_t)(w.i % FAKE_NCH);
        d.proxyOp.peer = (v->rank + 1) % v->ndev;
        d.proxyOp.nSteps = 1;
        void *pop = fake_start_m(v, w.mask, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_PROXY_STEP;
        d.parentObj = pop;
        d.rank = v->rank;
        void *pst = fake_start_m(v, w.mask, &d);
        nsc_host_state(&host, pst, NSC_ABI_PROXY_STEP_SEND_WAIT, 4096);
        nsc_host_stop(&host, pst);
        nsc_host_stop(&host, pop);
    }
    return NULL;
}

static void *app_thread_231(void *arg) {
    struct fake_dev *v = arg;
    char name[16];
    snprintf(name, sizeof(name), "fake-app%d", v->rank);
    pthread_setname_np(pthread_self(), name);
    if (nsc_host_init(&host, &v->ctx, 0x231abcdull, &v->word, "fake231", 1, v->ndev, v->rank) != 0) {
        pthread_barrier_wait(&all_created);
        return NULL;
    }

    q_init(&v->prof);
    q_init(&v->proxy);
    pthread_t prof, proxy;
    pthread_create(&prof, NULL, profiler_thread, v);
    pthread_create(&proxy, NULL, proxy_thread, v);
    for (long long i = 0; ops < 0 || i < ops; i++) {
        uint64_t tag = i % 4 == 3 ? 0 : FAKE_TAG + (uint64_t)i;
        int sym = (int)(i & 1);
        v->mask = (uint32_t)__atomic_load_n(&v->word, __ATOMIC_RELAXED); /* the GroupApi's read */
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP_API;
        d.groupApi.groupDepth = 1;
        void *gapi = fake_start(v, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL_API;
        d.parentObj = gapi;
        /* each API call re-reads the word (2.28 and later); the Coll and
         * its KernelCh follow the CollApi's copy, the P2p the P2pApi's */
        uint64_t coll_mask = v->mask = (uint32_t)__atomic_load_n(&v->word, __ATOMIC_RELAXED);
        d.collApi.func = "AllGather";
        d.collApi.count = 256;
        d.collApi.datatype = "ncclFloat32";
        d.collApi.userTag = tag;
        void *capi = fake_start(v, &d);
        nsc_host_stop(&host, capi);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_P2P_API;
        d.parentObj = gapi;
        uint64_t p2p_mask = v->mask = (uint32_t)__atomic_load_n(&v->word, __ATOMIC_RELAXED);
        d.p2pApi.func = "Send";
        d.p2pApi.count = 64;
        d.p2pApi.datatype = "ncclInt8";
        d.p2pApi.userTag = tag;
        void *papi = fake_start(v, &d);
        nsc_host_stop(&host, papi);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP;
        void *grp = fake_start(v, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_COLL;
        d.parentObj = capi;
        d.rank = v->rank;
        d.coll.parentGroup = grp;
        d.coll.seqNumber = (uint64_t)i;
        d.coll.func = "AllGather";
        d.coll.count = 256;
        d.coll.datatype = "ncclFloat32";
        d.coll.nChannels = FAKE_NCH;
        d.coll.nWarps = 16;
        d.coll.algo = sym ? "LL_R" : "RING";
        d.coll.proto = sym ? "" : "LL";
        d.coll.kernelVariant = sym ? "AGxLL_R" : NULL;
        d.coll.isSymColl = sym;
        d.coll.userTag = tag;
        void *coll = fake_start_m(v, coll_mask, &d);
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_P2P;
        d.parentObj = papi;
        d.rank = v->rank;
        d.p2p.parentGroup = grp;
        d.p2p.func = "Send";
        d.p2p.count = 64;
        d.p2p.datatype = "ncclInt8";
        d.p2p.peer = (v->rank + 1) % v->ndev;
        d.p2p.nChannels = 1;
        d.p2p.userTag = tag;
        void *p2p = fake_start_m(v, p2p_mask, &d);
        nsc_host_stop(&host, coll);
        nsc_host_stop(&host, p2p);
        nsc_host_stop(&host, grp);
        if (i % 8 == 0) {
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_CE_COLL;
            d.parentObj = capi;
            d.rank = v->rank;
            d.ceColl.seqNumber = (uint64_t)i;
            d.ceColl.func = "AllGather";
            d.ceColl.count = 256;
            d.ceColl.datatype = "ncclFloat32";
            d.ceColl.syncStrategy = "MC";
            d.ceColl.ceSeqNum = (uint32_t)i;
            d.ceColl.userTag = FAKE_CE_TAG + (uint64_t)i;
            void *ce = fake_start(v, &d);
            nsc_host_stop(&host, ce);
        }
        nsc_host_state(&host, gapi, NSC_ABI_GROUP_END_API_START, 0);
        nsc_host_stop(&host, gapi);
        if (coll) {
            q_push(&v->prof, (struct fake_work){coll, i, (uint32_t)coll_mask});
            q_push(&v->proxy, (struct fake_work){coll, i, (uint32_t)coll_mask});
        }
    }
    /* As ncclCommDestroy: the profiler thread drains and stops before the
     * plugin's finalize. */
    q_close(&v->prof);
    q_close(&v->proxy);
    pthread_join(prof, NULL);
    pthread_join(proxy, NULL);
    /* Like NCCL's ranks, no communicator is destroyed before all were
     * created: one session, one file (a finalize that closed the last comm
     * before another thread's init would start a second session). */
    pthread_barrier_wait(&all_created);
    nsc_host_finalize(&host, v->ctx);
    return NULL;
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *replay = NULL;
    int version = 0, threads = 1, synthetic = 0, nccl231 = 0;
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
        } else if (!strcmp(argv[i], "--nccl231") && i + 1 < argc) {
            nccl231 = 1;
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
    } else if (nccl231) {
        static struct fake_dev devs[64];
        pthread_t t[64];
        if (threads < 1 || threads > 64)
            threads = 1;
        pthread_barrier_init(&all_created, NULL, (unsigned)threads);
        for (int i = 0; i < threads; i++) {
            devs[i].rank = i;
            devs[i].ndev = threads;
            pthread_create(&t[i], NULL, app_thread_231, &devs[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
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
