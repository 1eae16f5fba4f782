// SPDX-License-Identifier: Apache-2.0
/*
 * nccl_bench.c - NCCL latency and bus bandwidth, for measuring what a
 * profiler plugin costs inside NCCL (bench/gpu/run_overhead.sh runs it with
 * and without plugins).
 *
 *   nccl-bench [--gpus N] [--procs] [--ops ar,ag,rs,bc,sr] [--min B] [--max B]
 *              [--factor F] [--iters N] [--warmup N] [--repeats R] [--tag TEXT] [--ab]
 *              [--arms scope,pass,floor,noslab] [--burst K]
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
 * Output: one TSV line per measurement, "tag op bytes repeat iters us algbw busbw enq_us":
 * enq_us is the time the thread spent in the issuing calls alone, per op.
 *
 * --burst K: a stream synchronize after every K operations instead of only
 * at the end, so the issuing thread never runs ahead of the GPU by more than
 * K operations and enq_us is the CPU cost of issuing one (NCCL's enqueue and
 * every profiler callback on the calling thread), not time spent waiting for
 * room in a full launch queue.
 *
 * --ab (NCCL_PROFILER_PLUGIN = ncclscope): every measurement twice in the
 * same process, once with ncclscope recording and once with its benchmark
 * passthrough on (ncclscope_bench_passthrough: every start returns a token
 * and does nothing else, the empty plugin's behaviour), in alternating order
 * from repeat to repeat; tags "TAG+scope" and "TAG+pass". Separate processes
 * on the GPU machines differ from run to run by more than a profiler costs;
 * the two arms of one process share its placement, memory and NCCL setup.
 * --arms scope,pass,floor (implies --ab): these arms, rotated from repeat to
 * repeat; "floor" is the switch's floor behaviour (a timestamp and a line
 * per call into a private ring: bench/floor_plugin.c's work), "noslab"
 * ncclscope recording without the hang watchdog's per-operation slab.
 *
 * NB_TASKS=PATH: around every timed block, the process's threads as the
 * kernel saw them (/proc/self/task: name, last CPU, run and runqueue-wait
 * time from schedstat, context switches from status) go to PATH.RANK, one
 * TSV line per thread per block: what a slow block shared its CPUs with.
 */
#include <cuda_runtime_api.h>
#include <dirent.h>
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
static int ab, burst;
/* the arms of --ab, as ncclscope_bench_passthrough's argument: 0 records */
static int arms[4] = {0, 1}, narms = 2;
static const char *const arm_name[4] = {"scope", "pass", "floor", "noslab"};
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

/* ---- NB_TASKS: the threads' placement and CPU around each block */
#define MAX_TASKS 512
struct task_sample {
    int tid, cpu;
    char comm[32];
    unsigned long long run_ns, wait_ns, nvcsw, nivcsw;
};
struct task_snap {
    int n;
    unsigned long long minflt;
    struct task_sample t[MAX_TASKS];
};
static FILE *tasks_out;

static int read_small(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    return 0;
}

static unsigned long long status_field(const char *buf, const char *key) {
    const char *p = strstr(buf, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Field 39 of stat is the CPU the thread last ran on; comm may hold
 * spaces, so fields are counted after its closing parenthesis. */
static void take_snap(struct task_snap *s) {
    char path[96], buf[4096];
    s->n = 0;
    s->minflt = 0;
    if (read_small("/proc/self/stat", buf, sizeof(buf)) == 0) {
        char *p = strrchr(buf, ')');
        int field = 2;
        for (; p && *p && field < 10; p++)
            if (*p == ' ')
                field++;
        if (p)
            s->minflt = strtoull(p, NULL, 10);
    }
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && s->n < MAX_TASKS) {
        if (e->d_name[0] == '.')
            continue;
        struct task_sample *t = &s->t[s->n];
        memset(t, 0, sizeof(*t));
        t->tid = atoi(e->d_name);
        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", t->tid);
        if (read_small(path, buf, sizeof(buf)) != 0)
            continue;
        char *l = strchr(buf, '('), *r = strrchr(buf, ')');
        if (!l || !r)
            continue;
        snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(r - l - 1), l + 1);
        for (char *c = t->comm; *c; c++)
            if (*c == ' ' || *c == '\t')
                *c = '_';
        int field = 2;
        char *p = r + 1;
        for (; *p && field < 39; p++)
            if (*p == ' ')
                field++;
        t->cpu = atoi(p);
        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", t->tid);
        if (read_small(path, buf, sizeof(buf)) == 0)
            sscanf(buf, "%llu %llu", &t->run_ns, &t->wait_ns);
        snprintf(path, sizeof(path), "/proc/self/task/%d/status", t->tid);
        if (read_small(path, buf, sizeof(buf)) == 0) {
            t->nvcsw = status_field(buf, "\nvoluntary_ctxt_switches:");
            t->nivcsw = status_field(buf, "nonvoluntary_ctxt_switches:");
        }
        s->n++;
    }
    closedir(d);
}

/* One line per thread that ran during the block: repeat, arm, block µs,
 * tid, name, CPU before and after, run µs, runqueue-wait µs, voluntary and
 * involuntary switches; then the process's minor faults in the block. */
static void print_snap(const struct task_snap *a, const struct task_snap *b, int r, const char *arm,
                       double us) {
    for (int i = 0; i < b->n; i++) {
        const struct task_sample *t = &b->t[i], *o = NULL;
        for (int k = 0; k < a->n && !o; k++)
            if (a->t[k].tid == t->tid)
                o = &a->t[k];
        unsigned long long run = t->run_ns - (o ? o->run_ns : 0);
        if (run == 0)
            continue;
        fprintf(tasks_out, "%d\t%s\t%.3f\t%d\t%s\t%d\t%d\t%.1f\t%.1f\t%llu\t%llu\n", r, arm, us, t->tid,
                t->comm, o ? o->cpu : -1, t->cpu, run / 1e3, (t->wait_ns - (o ? o->wait_ns : 0)) / 1e3,
                t->nvcsw - (o ? o->nvcsw : 0), t->nivcsw - (o ? o->nivcsw : 0));
    }
    fprintf(tasks_out, "%d\t%s\t%.3f\t0\tminflt\t-1\t-1\t%llu\t0\t0\t0\n", r, arm, us,
            b->minflt - a->minflt);
    fflush(tasks_out);
}

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
    /* Samples come from the thread that prints: rank 0's, whose process
     * holds every rank's threads without --procs; with --procs each
     * process writes its own file. */
    int sample = getenv("NB_TASKS") && (procs || rank == 0);
    static struct task_snap snap_a, snap_b;
    if (sample) {
        char path[1024];
        snprintf(path, sizeof(path), "%s.%d", getenv("NB_TASKS"), rank);
        tasks_out = fopen(path, "w");
        sample = tasks_out != NULL;
    }
    for (int r = 0; r < repeats; r++)
        for (size_t b = min_bytes; b <= max_bytes; b = (size_t)((double)b * factor)) {
            for (int op = 0; op < NOPS; op++) {
                if (!strstr(ops, op_key[op]))
                    continue;
                int n = iters_for(b);
                for (int k = 0; k < (ab ? narms : 1); k++) {
                    /* arms rotate: each leads on every narms-th repeat */
                    int arm = ab ? arms[(r + k) % narms] : 0;
                    /* The switch is per process: one thread sets it, the
                     * barrier below publishes it to the others. */
                    if (ab && (procs || rank == 0) && passthrough(arm) != 0) {
                        /* an older ncclscope without this arm would measure another */
                        fprintf(stderr, "--arms %s: this ncclscope does not have it\n", arm_name[arm]);
                        exit(1);
                    }
                    for (int i = 0; i < (r == 0 && k == 0 ? warmup : warmup / 10 + 1); i++)
                        issue(&c, op, b);
                    if (sample)
                        take_snap(&snap_a);
                    barrier(&c);
                    double t0 = now(), enq = 0;
                    for (int i = 0; i < n;) {
                        int k2 = burst > 0 && n - i > burst ? burst : n - i;
                        double e0 = now();
                        for (int j = 0; j < k2; j++)
                            issue(&c, op, b);
                        enq += now() - e0;
                        i += k2;
                        if (burst > 0 || i == n)
                            CK_CUDA(cudaStreamSynchronize(c.s));
                    }
                    double t1 = now();
                    if (sample) {
                        take_snap(&snap_b);
                        print_snap(&snap_a, &snap_b, r, !ab ? "-" : arm_name[arm],
                                   1e6 * (t1 - t0) / n);
                    }
                    if (rank == 0) {
                        double us = 1e6 * (t1 - t0) / n;
                        double algbw = (double)b / (us * 1e-6) / 1e9;
                        printf("%s%s%s\t%s\t%zu\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n", tag,
                               ab ? "+" : "", ab ? arm_name[arm] : "", op_name[op], b, r, n, us,
                               algbw, algbw * bus_factor(op, ngpus), 1e6 * enq / n);
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
    if (sample)
        fclose(tasks_out);
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
        else if (!strcmp(a, "--burst")) {
            burst = atoi(v);
            if (burst < 0) {
                fprintf(stderr, "--burst needs K >= 0 (0: no synchronize until the end)\n");
                return 1;
            }
        }
        else if (!strcmp(a, "--arms")) {
            ab = 1;
            narms = 0;
            for (const char *p = v;;) {
                size_t len = strcspn(p, ",");
                if (narms == 4) {
                    fprintf(stderr, "--arms: at most 4 arms\n");
                    return 1;
                }
                int found = -1;
                for (int k = 0; k < 4; k++)
                    if (len == strlen(arm_name[k]) && !strncmp(p, arm_name[k], len))
                        found = k;
                if (found < 0) {
                    fprintf(stderr, "--arms: %.*s is not scope, pass, floor or noslab\n", (int)len, p);
                    return 1;
                }
                arms[narms++] = found;
                if (!p[len])
                    break;
                p += len + 1; /* a trailing comma: an empty name, refused above */
            }
            if (narms < 1) {
                fprintf(stderr, "--arms needs at least one of scope, pass, floor\n");
                return 1;
            }
        }
        else {
            fprintf(stderr,
                    "usage: %s [--gpus N] [--procs] [--ops ar,ag,rs,bc,sr] [--min B] [--max B] "
                    "[--factor F] [--iters N] [--warmup N] [--repeats R] [--tag TEXT] [--ab] [--arms A,B,C] "
                    "[--burst K]\n",
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
