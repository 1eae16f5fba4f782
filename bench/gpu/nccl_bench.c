/*
 * nccl_bench.c - NCCL latency and bus bandwidth, for measuring what a
 * profiler plugin costs inside NCCL (bench/gpu/run_overhead.sh runs it with
 * and without plugins).
 *
 *   nccl-bench [--gpus N] [--procs] [--ops ar,ag,rs,bc,sr] [--min B] [--max B]
 *              [--factor F] [--iters N] [--warmup N] [--repeats R] [--tag TEXT] [--ab]
 *
 * One thread per GPU, or with --procs one process per GPU (fork; rank 0
 * makes the NCCL unique id and passes it down pipes). For each repeat, each
 * size and each operation (interleaved, so drifts hit every configuration
 * alike): a barrier, `iters` operations back to back on one stream, a
 * stream synchronize; rank 0's wall time / iters is the latency.
 * --iters is the count at 64 B; larger sizes run fewer (at least 10), so
 * every point takes a similar time. Bandwidths follow nccl-tests:
 * algbw = bytes / time, busbw = algbw x (2(n-1)/n all_reduce, (n-1)/n
 * all_gather and reduce_scatter, 1 broadcast and send/recv), where bytes is
 * the per-rank buffer size.
 * Output: one TSV line per measurement, "tag op bytes repeat iters us algbw busbw".
 *
 * --ab (NCCL_PROFILER_PLUGIN = ncclscope): every measurement twice in the
 * same process, once with ncclscope recording and once with its benchmark
 * passthrough on (ncclscope_bench_passthrough: every start returns a token
 * and does nothing else, the empty plugin's behaviour), in alternating order
 * from repeat to repeat; tags "TAG+scope" and "TAG+pass". Separate processes
 * on the GPU machines differ from run to run by more than a profiler costs;
 * the two arms of one process share its placement, memory and NCCL setup.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

enum { AR, AG, RS, BC, SR, NOPS };
static const char *const op_key[NOPS] = {"ar", "ag", "rs", "bc", "sr"};
static const char *const op_name[NOPS] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                          "sendrecv"};

static int ngpus, procs, iters = 2000, warmup = 50, repeats = 3;
static size_t min_bytes = 64, max_bytes = 64;
static double factor = 4;
static char ops[64] = "ar,ag,rs,bc,sr";
static const char *tag = "-";
static int ab;
static int (*passthrough)(int);

/* ncclscope's switch, from the copy NCCL loaded (RTLD_NOLOAD: never a
 * second one). */
static void find_passthrough(void) {
    const char *so = getenv("NCCL_PROFILER_PLUGIN");
    void *lib = so ? dlopen(so, RTLD_NOW | RTLD_NOLOAD) : NULL;
    passthrough = lib ? (int (*)(int))dlsym(lib, "ncclscope_bench_passthrough") : NULL;
    if (!passthrough) {
        fprintf(stderr, "--ab: NCCL_PROFILER_PLUGIN (%s) is not a loaded ncclscope\n",
                so ? so : "unset");
        exit(1);
    }
}
static ncclUniqueId uid;
static pthread_barrier_t tbarrier;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bus_factor(int op, int n) {
    switch (op) {
    case AR:
        return 2.0 * (n - 1) / n;
    case AG:
    case RS:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

struct rank_ctx {
    int rank;
    ncclComm_t comm;
    cudaStream_t s;
    void *send, *recv, *one;
};

/* A barrier that works across threads and processes: a one-element
 * all_reduce, synchronized. */
static void barrier(struct rank_ctx *c) {
    CK_NCCL(ncclAllReduce(c->one, c->one, 1, ncclFloat, ncclSum, c->comm, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s));
    if (!procs)
        pthread_barrier_wait(&tbarrier);
}

static void issue(struct rank_ctx *c, int op, size_t bytes) {
    size_t count = bytes / sizeof(float);
    if (count == 0)
        count = 1;
    size_t part = count / (size_t)ngpus ? count / (size_t)ngpus : 1;
    switch (op) {
    case AR:
        CK_NCCL(ncclAllReduce(c->send, c->recv, count, ncclFloat, ncclSum, c->comm, c->s));
        break;
    case AG: /* bytes = the gathered size, as nccl-tests counts it */
        CK_NCCL(ncclAllGather(c->send, c->recv, part, ncclFloat, c->comm, c->s));
        break;
    case RS:
        CK_NCCL(ncclReduceScatter(c->send, c->recv, part, ncclFloat, ncclSum, c->comm, c->s));
        break;
    case BC:
        CK_NCCL(ncclBroadcast(c->send, c->recv, count, ncclFloat, 0, c->comm, c->s));
        break;
    case SR:
        CK_NCCL(ncclGroupStart());
        CK_NCCL(ncclSend(c->send, count, ncclFloat, (c->rank + 1) % ngpus, c->comm, c->s));
        CK_NCCL(ncclRecv(c->recv, count, ncclFloat, (c->rank + ngpus - 1) % ngpus, c->comm, c->s));
        CK_NCCL(ncclGroupEnd());
        break;
    }
}

static int iters_for(size_t bytes) {
    /* iters at 64 B, scaled down past 64 KiB so large sizes take similar time */
    double scale = bytes > 65536 ? 65536.0 / (double)bytes : 1.0;
    int n = (int)(iters * scale);
    return n < 10 ? 10 : n;
}

static void run_rank(int rank) {
    struct rank_ctx c;
    memset(&c, 0, sizeof(c));
    c.rank = rank;
    CK_CUDA(cudaSetDevice(rank));
    CK_NCCL(ncclCommInitRank(&c.comm, ngpus, uid, rank));
    CK_CUDA(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc(&c.send, max_bytes));
    CK_CUDA(cudaMalloc(&c.recv, max_bytes));
    CK_CUDA(cudaMalloc(&c.one, 64));
    CK_CUDA(cudaMemset(c.send, 0, max_bytes));
    CK_CUDA(cudaMemset(c.one, 0, 64));
    if (ab) /* NCCL loaded the plugin during init */
        find_passthrough();
    for (int r = 0; r < repeats; r++)
        for (size_t b = min_bytes; b <= max_bytes; b = (size_t)((double)b * factor)) {
            for (int op = 0; op < NOPS; op++) {
                if (!strstr(ops, op_key[op]))
                    continue;
                int n = iters_for(b);
                for (int k = 0; k < (ab ? 2 : 1); k++) {
                    int pass = ab && (r + k) % 2; /* scope first on even repeats */
                    /* The switch is per process: one thread sets it, the
                     * barrier below publishes it to the others. */
                    if (ab && (procs || rank == 0))
                        passthrough(pass);
                    for (int i = 0; i < (r == 0 && k == 0 ? warmup : warmup / 10 + 1); i++)
                        issue(&c, op, b);
                    barrier(&c);
                    double t0 = now();
                    for (int i = 0; i < n; i++)
                        issue(&c, op, b);
                    CK_CUDA(cudaStreamSynchronize(c.s));
                    double t1 = now();
                    if (rank == 0) {
                        double us = 1e6 * (t1 - t0) / n;
                        double algbw = (double)b / (us * 1e-6) / 1e9;
                        printf("%s%s\t%s\t%zu\t%d\t%d\t%.3f\t%.3f\t%.3f\n", tag,
                               !ab ? "" : pass ? "+pass" : "+scope", op_name[op], b, r, n, us,
                               algbw, algbw * bus_factor(op, ngpus));
                        fflush(stdout);
                    }
                }
                if (ab && (procs || rank == 0))
                    passthrough(0);
            }
            if (factor <= 1)
                break;
        }
    barrier(&c);
    CK_CUDA(cudaFree(c.send));
    CK_CUDA(cudaFree(c.recv));
    CK_CUDA(cudaFree(c.one));
    CK_NCCL(ncclCommFinalize(c.comm));
    CK_NCCL(ncclCommDestroy(c.comm));
    CK_CUDA(cudaStreamDestroy(c.s));
}

static void *rank_thread(void *arg) {
    run_rank((int)(long)arg);
    return NULL;
}

static size_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--procs")) {
            procs = 1;
            continue;
        }
        if (!strcmp(a, "--ab")) {
            ab = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "%s needs a value\n", a);
            return 1;
        }
        i++;
        if (!strcmp(a, "--gpus"))
            ngpus = atoi(v);
        else if (!strcmp(a, "--ops"))
            snprintf(ops, sizeof(ops), "%s", v);
        else if (!strcmp(a, "--min"))
            min_bytes = parse_size(v);
        else if (!strcmp(a, "--max"))
            max_bytes = parse_size(v);
        else if (!strcmp(a, "--factor"))
            factor = atof(v);
        else if (!strcmp(a, "--iters"))
            iters = atoi(v);
        else if (!strcmp(a, "--warmup"))
            warmup = atoi(v);
        else if (!strcmp(a, "--repeats"))
            repeats = atoi(v);
        else if (!strcmp(a, "--tag"))
            tag = v;
        else {
            fprintf(stderr,
                    "usage: %s [--gpus N] [--procs] [--ops ar,ag,rs,bc,sr] [--min B] [--max B] "
                    "[--factor F] [--iters N] [--warmup N] [--repeats R] [--tag TEXT] [--ab]\n",
                    argv[0]);
            return 1;
        }
    }
    if (max_bytes < min_bytes)
        max_bytes = min_bytes;
    if (!procs) {
        if (ngpus == 0)
            CK_CUDA(cudaGetDeviceCount(&ngpus));
        CK_NCCL(ncclGetUniqueId(&uid));
        pthread_barrier_init(&tbarrier, NULL, (unsigned)ngpus);
        pthread_t *t = calloc((size_t)ngpus, sizeof(*t));
        for (int r = 0; r < ngpus; r++)
            pthread_create(&t[r], NULL, rank_thread, (void *)(long)r);
        for (int r = 0; r < ngpus; r++)
            pthread_join(t[r], NULL);
        free(t);
        return 0;
    }
    /* One process per GPU. CUDA is not touched before fork; the device
     * count comes from --gpus or CUDA_VISIBLE_DEVICES-free probing in a
     * child would cost a process, so --gpus is required here. */
    if (ngpus < 1) {
        fprintf(stderr, "--procs needs --gpus N\n");
        return 1;
    }
    int (*pipes)[2] = calloc((size_t)ngpus, sizeof(*pipes));
    for (int r = 1; r < ngpus; r++)
        if (pipe(pipes[r]) != 0)
            return 1;
    fflush(stdout);
    pid_t *pids = calloc((size_t)ngpus, sizeof(*pids));
    for (int r = 0; r < ngpus; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            if (r == 0) {
                CK_NCCL(ncclGetUniqueId(&uid));
                for (int k = 1; k < ngpus; k++)
                    if (write(pipes[k][1], &uid, sizeof(uid)) != (ssize_t)sizeof(uid))
                        _exit(1);
            } else if (read(pipes[r][0], &uid, sizeof(uid)) != (ssize_t)sizeof(uid)) {
                _exit(1);
            }
            run_rank(r);
            fflush(stdout);
            _exit(0);
        }
    }
    int rc = 0;
    for (int r = 0; r < ngpus; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
    return rc;
}
