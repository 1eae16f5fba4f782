/*
 * nccl_driver.c - a small NCCL program to run the profiler under real NCCL:
 * one process, one thread per GPU, each thread owning one communicator
 * rank, running all_reduce, all_gather, broadcast and a send/recv ring.
 *
 *   nccl-driver [--gpus N] [--iters N] [--bytes B] [--ops ar,ag,bc,sr]
 *
 * --iters is per operation kind: each rank runs iters x (number of ops)
 * NCCL operations. Prints the average time per operation of each kind.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK_CUDA(x)                                                                             \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#define CK_NCCL(x)                                                                             \
    do {                                                                                       \
        ncclResult_t r_ = (x);                                                                 \
        if (r_ != ncclSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static int ngpus = 0, iters = 1000;
static size_t bytes = 64;
static char ops[64] = "ar,ag,bc,sr";
static ncclUniqueId uid;
static pthread_barrier_t barrier;
static double elapsed[4];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *rank_main(void *arg) {
    int rank = (int)(long)arg;
    CK_CUDA(cudaSetDevice(rank));
    ncclComm_t comm;
    CK_NCCL(ncclCommInitRank(&comm, ngpus, uid, rank));
    cudaStream_t s;
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    size_t count = bytes / sizeof(float);
    if (count == 0)
        count = 1;
    float *send, *recv;
    CK_CUDA(cudaMalloc((void **)&send, count * sizeof(float) * (size_t)ngpus));
    CK_CUDA(cudaMalloc((void **)&recv, count * sizeof(float) * (size_t)ngpus));
    CK_CUDA(cudaMemset(send, 0, count * sizeof(float) * (size_t)ngpus));
    const char *names[4] = {"ar", "ag", "bc", "sr"};
    for (int k = 0; k < 4; k++) {
        if (!strstr(ops, names[k]))
            continue;
        pthread_barrier_wait(&barrier);
        double t0 = now();
        for (int i = 0; i < iters; i++) {
            switch (k) {
            case 0:
                CK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
                break;
            case 1:
                CK_NCCL(ncclAllGather(send, recv, count, ncclFloat, comm, s));
                break;
            case 2:
                CK_NCCL(ncclBroadcast(send, recv, count, ncclFloat, 0, comm, s));
                break;
            case 3:
                CK_NCCL(ncclGroupStart());
                CK_NCCL(ncclSend(send, count, ncclFloat, (rank + 1) % ngpus, comm, s));
                CK_NCCL(ncclRecv(recv, count, ncclFloat, (rank + ngpus - 1) % ngpus, comm, s));
                CK_NCCL(ncclGroupEnd());
                break;
            }
        }
        CK_CUDA(cudaStreamSynchronize(s));
        double t1 = now();
        pthread_barrier_wait(&barrier);
        if (rank == 0)
            elapsed[k] = t1 - t0;
    }
    CK_CUDA(cudaFree(send));
    CK_CUDA(cudaFree(recv));
    CK_NCCL(ncclCommFinalize(comm));
    CK_NCCL(ncclCommDestroy(comm));
    CK_CUDA(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus") && i + 1 < argc)
            ngpus = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = (size_t)strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            snprintf(ops, sizeof(ops), "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--gpus N] [--iters N] [--bytes B] [--ops ar,ag,bc,sr]\n",
                    argv[0]);
            return 1;
        }
    }
    if (ngpus == 0)
        CK_CUDA(cudaGetDeviceCount(&ngpus));
    CK_NCCL(ncclGetUniqueId(&uid));
    pthread_barrier_init(&barrier, NULL, (unsigned)ngpus);
    pthread_t *t = calloc((size_t)ngpus, sizeof(*t));
    for (int r = 0; r < ngpus; r++)
        pthread_create(&t[r], NULL, rank_main, (void *)(long)r);
    for (int r = 0; r < ngpus; r++)
        pthread_join(t[r], NULL);
    const char *names[4] = {"all_reduce", "all_gather", "broadcast", "send/recv"};
    const char *keys[4] = {"ar", "ag", "bc", "sr"};
    for (int k = 0; k < 4; k++)
        if (strstr(ops, keys[k]))
            printf("%-10s %zu B x %d iters on %d GPUs: %.2f us/op\n", names[k], bytes, iters,
                   ngpus, 1e6 * elapsed[k] / iters);
    return 0;
}
