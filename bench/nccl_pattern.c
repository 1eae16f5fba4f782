// SPDX-License-Identifier: Apache-2.0
/* nccl_pattern.c - the application and proxy threads of --nccl-pattern. */
#include "nccl_pattern.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "call_mix.h"
#include "cycle_timer.h"
#include "event_types.h"
#include "host.h"

/* The first operations of each communicator create the plugin's per-thread
 * and per-communicator state: not what an operation costs later. */
#define PATTERN_WARMUP 8
#define STEP_SAMPLES 4096 /* per call of the operation, with per_call */
#define QUEUE_SLOTS 8 /* a proxy thread that falls behind holds the application back */

/* One operation handed from an application thread to the proxy thread:
 * the handles it got (the Coll's is the parent of the proxy's events). */
struct handoff {
    void *h[MIX_MAX_EVENTS];
    uint64_t seq;
    uint64_t t_app_done; /* TSC after the application's last call */
};

/* Single producer (the application thread), single consumer (the proxy). */
struct queue {
    _Alignas(64) _Atomic uint64_t head; /* written by the producer */
    _Alignas(64) _Atomic uint64_t tail; /* written by the consumer */
    _Alignas(64) struct handoff slot[QUEUE_SLOTS];
};

/* The steps of one part, in order. */
struct part_list {
    int n;
    uint16_t step[MIX_MAX_STEPS];
};

struct pshared {
    const struct pattern_config *cfg;
    struct nsc_host host;
    pthread_barrier_t ready, go, done, fin;
    _Atomic int stop, apps_done;
    int *cpus, ncpus;
    uint64_t fence;
    size_t cap;                    /* cost entries per application thread */
    struct part_list parts[MIX_PATTERN_PARTS];
    struct app *apps;
    /* the proxy's results */
    uint32_t *proxy_cost, *handoff_ticks;
    size_t proxy_n;
    uint64_t proxy_calls, proxy_cpu_ns;
};

struct app {
    pthread_t th;
    int index;
    struct pshared *sh;
    struct mix_runner *r;     /* the application side */
    struct mix_runner *pr;    /* the proxy's side for this communicator */
    struct queue *q;
    unsigned char *scratch;
    uint32_t *cost;
    size_t n;
    uint32_t *steps, *psteps; /* per_call: [step * STEP_SAMPLES + k], application and proxy side */
    size_t nsteps_app, nsteps_proxy;
    uint64_t calls, cpu_ns;
    int init_failed;
};

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

/* Harness threads sleep to the microsecond (the default 50 us slack would
 * blur the pacing) on a CPU of their own where there are enough. */
static void thread_setup(const struct pshared *sh, int cpu_index, const char *name) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    pthread_setname_np(pthread_self(), name);
    if (sh->ncpus <= 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sh->cpus[cpu_index % sh->ncpus], &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* NCCL's own work between two callbacks, reduced to its effect on the
 * plugin: every line of `bytes` of the thread's memory written. */
static void evict(unsigned char *scratch, size_t bytes) {
    for (size_t k = 0; k < bytes; k += 64)
        scratch[k] = (unsigned char)(scratch[k] + 1);
    atomic_signal_fence(memory_order_seq_cst);
}

static void sleep_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Brings the harness's own data for a part into the cache: the steps, the
 * descriptors (NCCL's are on its stack, just written), the handles, the
 * runner and the host, so that the timed part pays only for the plugin's
 * lines. */
static void warm(const struct mix_runner *r, void *const *hs, const struct part_list *pl) {
    const struct mix_op *op = r->op;
    uint64_t acc = (uint64_t)(uintptr_t)r->host->table + r->mask + (uint64_t)(uintptr_t)r->ctx;
    for (int j = 0; j < pl->n; j++) {
        const struct mix_step *s = &op->step[pl->step[j]];
        const unsigned char *e = (const unsigned char *)&op->ev[s->ev];
        for (size_t b = 0; b < sizeof(op->ev[0]); b += 64)
            acc += e[b];
        acc += (uint64_t)(uintptr_t)hs[s->ev];
    }
    __asm__ volatile("" ::"r"(acc));
}

/* The calls of one part of the operation. The part is timed as a whole,
 * between two fenced reads, the pair's own cost removed once: a fenced read
 * costs as much as a callback, and this machine's TSC moves in steps of
 * about 25 ticks, which per-call samples would add at every call. With
 * `steps` (--per-call), each call is timed alone instead and the part's
 * time is their sum. Between the calls runs only what NCCL's caller does
 * too (the descriptor's parent), and the test of the mask. */
static uint64_t run_part(struct mix_runner *r, void **hs, const struct part_list *pl, uint64_t fence,
                         uint64_t *ncalls, uint32_t *steps, size_t k) {
    const struct mix_op *op = r->op;
    uint16_t called[MIX_MAX_STEPS];
    int n = 0;
    uint64_t sum = 0;
    warm(r, hs, pl);
    uint64_t t0 = cycle_fenced();
    for (int j = 0; j < pl->n; j++) {
        int i = pl->step[j];
        const struct mix_step *s = &op->step[i];
        if (!mix_wanted(r, hs, s))
            continue;
        called[n++] = (uint16_t)i;
        if (!steps) {
            mix_call(r, hs, s);
            continue;
        }
        uint64_t c0 = cycle_fenced();
        mix_call(r, hs, s);
        uint64_t d = cycle_fenced() - c0;
        d = d > fence ? d - fence : 0;
        sum += d;
        if (k < STEP_SAMPLES)
            steps[(size_t)i * STEP_SAMPLES + k] = (uint32_t)(d < UINT32_MAX ? d : UINT32_MAX);
    }
    if (!steps) {
        uint64_t d = cycle_fenced() - t0;
        sum = d > fence ? d - fence : 0;
    }
    for (int j = 0; j < n; j++) {
        const struct mix_step *s = &op->step[called[j]];
        r->calls[s->kind]++;
        if (s->kind == MIX_START) {
            r->events_offered++;
            if (!hs[s->ev])
                r->events_null++;
        }
    }
    *ncalls += (uint64_t)n;
    return sum;
}

static void *app_main(void *arg) {
    struct app *a = arg;
    struct pshared *sh = a->sh;
    const struct pattern_config *cfg = sh->cfg;
    struct mix_runner *r = a->r;
    char name[16];
    snprintf(name, sizeof(name), "bench-app%d", a->index);
    thread_setup(sh, a->index, name);
    int mask = 0;
    if (nsc_host_init(&sh->host, &r->ctx, 0xbe4c9a0000000000ull | (uint64_t)cfg->app_threads, &mask,
                      "ncclscope-bench", 1, cfg->app_threads, a->index) != 0 || !r->ctx) {
        a->init_failed = 1;
        r->ctx = NULL;
    }
    r->mask = (uint32_t)mask & nsc_host_type_mask(&sh->host);
    r->host = &sh->host;
    r->pid = (int)getpid();
    /* the proxy calls with the same context and mask (its own copy of the
     * descriptors, set by pattern_run); it reads them after the barrier */
    a->pr->ctx = r->ctx;
    a->pr->mask = r->mask;
    a->pr->host = r->host;
    a->pr->pid = r->pid;
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);

    uint64_t cpu0 = thread_cpu_ns();
    const uint64_t period = (uint64_t)(1e9 / cfg->op_rate);
    size_t evict_bytes = (size_t)cfg->evict_kib << 10;
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    void **hs = r->h[0];
    while (r->ctx && !atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        /* pace: absolute deadlines; after a preemption, restart from now
         * rather than bursting to catch up */
        due.tv_nsec += (long)period;
        while (due.tv_nsec >= 1000000000L) {
            due.tv_nsec -= 1000000000L;
            due.tv_sec++;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t late = (int64_t)(now.tv_sec - due.tv_sec) * 1000000000LL + (now.tv_nsec - due.tv_nsec);
        if (late > (int64_t)period)
            due = now;
        else if (late < 0)
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
        /* wait for room in the queue (the proxy fell behind): untimed */
        uint64_t head = atomic_load_explicit(&a->q->head, memory_order_relaxed);
        while (head - atomic_load_explicit(&a->q->tail, memory_order_acquire) >= QUEUE_SLOTS &&
               !atomic_load_explicit(&sh->stop, memory_order_relaxed))
            sleep_us(10);
        if (head - atomic_load_explicit(&a->q->tail, memory_order_acquire) >= QUEUE_SLOTS)
            break;
        evict(a->scratch, evict_bytes);
        memset(hs, 0, sizeof(r->h[0]));
        uint64_t n = 0;
        int timed = r->seq >= PATTERN_WARMUP;
        uint64_t ticks = run_part(r, hs, &sh->parts[0], sh->fence, &n, timed ? a->steps : NULL, a->nsteps_app);
        a->nsteps_app += (size_t)timed;
        uint64_t t_done = cycle_now();
        a->calls += n;
        if (timed && a->n < sh->cap)
            a->cost[a->n++] = (uint32_t)(ticks < UINT32_MAX ? ticks : UINT32_MAX);
        struct handoff *slot = &a->q->slot[head % QUEUE_SLOTS];
        memcpy(slot->h, hs, sizeof(slot->h));
        slot->seq = r->seq;
        slot->t_app_done = t_done;
        /* release: the slot's handles before the proxy sees the new head */
        atomic_store_explicit(&a->q->head, head + 1, memory_order_release);
        r->seq++;
    }
    a->cpu_ns = thread_cpu_ns() - cpu0;
    atomic_fetch_add_explicit(&sh->apps_done, 1, memory_order_release);
    pthread_barrier_wait(&sh->done);
    pthread_barrier_wait(&sh->fin);
    if (r->ctx)
        nsc_host_finalize(&sh->host, r->ctx);
    return NULL;
}

/* One operation's proxy side: its three parts, each after a walk. */
static void proxy_op(struct pshared *sh, struct app *a, const struct handoff *in, void **hs,
                     unsigned char *scratch, size_t evict_bytes) {
    struct mix_runner *pr = a->pr;
    memcpy(hs, in->h, sizeof(in->h)); /* into the proxy's own memory, as NCCL's proxy op has it */
    uint64_t seq = in->seq, t_app = in->t_app_done;
    pr->seq = seq;
    uint64_t n = 0, ticks = 0, t_first = 0;
    int timed = seq >= PATTERN_WARMUP;
    for (int part = 1; part < MIX_PATTERN_PARTS; part++) {
        if (!sh->parts[part].n)
            continue;
        evict(scratch, evict_bytes);
        if (part == 1)
            t_first = cycle_now();
        ticks += run_part(pr, hs, &sh->parts[part], sh->fence, &n, timed ? a->psteps : NULL, a->nsteps_proxy);
    }
    a->nsteps_proxy += (size_t)timed;
    sh->proxy_calls += n;
    if (seq >= PATTERN_WARMUP && sh->proxy_n < sh->cap * (size_t)sh->cfg->app_threads) {
        sh->proxy_cost[sh->proxy_n] = (uint32_t)(ticks < UINT32_MAX ? ticks : UINT32_MAX);
        uint64_t hand = t_first > t_app ? t_first - t_app : 0;
        sh->handoff_ticks[sh->proxy_n] = (uint32_t)(hand < UINT32_MAX ? hand : UINT32_MAX);
        sh->proxy_n++;
    }
}

static void *proxy_main(void *arg) {
    struct pshared *sh = arg;
    const struct pattern_config *cfg = sh->cfg;
    thread_setup(sh, cfg->app_threads, "bench-proxy");
    size_t evict_bytes = (size_t)cfg->evict_kib << 10;
    unsigned char *scratch = calloc(1, evict_bytes + 64);
    void **hs = calloc(MIX_MAX_EVENTS, sizeof(void *));
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    uint64_t cpu0 = thread_cpu_ns();
    for (;;) {
        int any = 0;
        for (int i = 0; i < cfg->app_threads; i++) {
            struct app *a = &sh->apps[i];
            uint64_t tail = atomic_load_explicit(&a->q->tail, memory_order_relaxed);
            if (tail == atomic_load_explicit(&a->q->head, memory_order_acquire))
                continue;
            if (scratch && hs && a->r->ctx)
                proxy_op(sh, a, &a->q->slot[tail % QUEUE_SLOTS], hs, scratch, evict_bytes);
            atomic_store_explicit(&a->q->tail, tail + 1, memory_order_release);
            any = 1;
        }
        if (any)
            continue;
        if (atomic_load_explicit(&sh->apps_done, memory_order_acquire) == cfg->app_threads) {
            int left = 0; /* the last operations handed over before the count */
            for (int i = 0; i < cfg->app_threads; i++)
                left |= atomic_load_explicit(&sh->apps[i].q->tail, memory_order_relaxed) !=
                        atomic_load_explicit(&sh->apps[i].q->head, memory_order_acquire);
            if (!left)
                break;
            continue;
        }
        sleep_us(5);
    }
    sh->proxy_cpu_ns = thread_cpu_ns() - cpu0;
    free(scratch);
    free(hs);
    pthread_barrier_wait(&sh->done);
    pthread_barrier_wait(&sh->fin);
    return NULL;
}

static int cmp_u32(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static double quantile(uint32_t *v, size_t n, double q) {
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_u32);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i];
}

int pattern_run(const struct pattern_config *cfg, struct pattern_result *res, char *err,
                size_t errlen) {
    memset(res, 0, sizeof(*res));
    char dir[] = "/tmp/ncclscope-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    setenv("NCCLSCOPE_DIR", dir, 1);
    setenv("NCCLSCOPE_COUNT_DIR", dir, 1);
    int n = cfg->app_threads, rc = 0;
    struct pshared *sh = calloc(1, sizeof(*sh));
    struct app *apps = calloc((size_t)n, sizeof(*apps));
    if (!sh || !apps) {
        free(sh);
        free(apps);
        rmdir(dir);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sh->cfg = cfg;
    sh->apps = apps;
    sh->fence = cycle_fence_overhead();
    sh->cap = (size_t)(cfg->op_rate * cfg->seconds * 1.25) + 4096;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        sh->cpus = calloc(CPU_SETSIZE, sizeof(int));
        for (int c = 0; sh->cpus && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                sh->cpus[sh->ncpus++] = c;
    }
    sh->proxy_cost = calloc(sh->cap * (size_t)n, sizeof(uint32_t));
    sh->handoff_ticks = calloc(sh->cap * (size_t)n, sizeof(uint32_t));
    int ok = sh->proxy_cost && sh->handoff_ticks;
    for (int i = 0; i < n && ok; i++) {
        struct app *a = &apps[i];
        a->index = i;
        a->sh = sh;
        a->r = calloc(1, sizeof(*a->r));
        a->pr = calloc(1, sizeof(*a->pr));
        struct mix_op *op = calloc(1, sizeof(*op)), *pop = calloc(1, sizeof(*pop));
        a->q = aligned_alloc(64, (sizeof(struct queue) + 63) / 64 * 64);
        a->scratch = calloc(1, ((size_t)cfg->evict_kib << 10) + 64);
        a->cost = calloc(sh->cap, sizeof(uint32_t));
        if (cfg->per_call) {
            a->steps = calloc((size_t)MIX_MAX_STEPS * STEP_SAMPLES, sizeof(uint32_t));
            a->psteps = calloc((size_t)MIX_MAX_STEPS * STEP_SAMPLES, sizeof(uint32_t));
            if (!a->steps || !a->psteps)
                ok = 0;
        }
        if (!ok || !a->r || !a->pr || !op || !pop || !a->q || !a->scratch || !a->cost) {
            free(op);
            free(pop);
            ok = 0;
            break;
        }
        memset(a->q, 0, sizeof(*a->q));
        mix_build_nccl_pattern(op, cfg->proxy_ops);
        mix_build_nccl_pattern(pop, cfg->proxy_ops);
        a->r->op = op;
        a->pr->op = pop;
        if (i == 0)
            for (int k = 0; k < op->nsteps; k++) {
                struct part_list *pl = &sh->parts[op->step[k].part];
                pl->step[pl->n++] = (uint16_t)k;
            }
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    if (nsc_host_load(&sh->host, cfg->plugin, cfg->version, err, errlen) != 0) {
        rc = -1;
        goto out;
    }
    snprintf(res->plugin_name, sizeof(res->plugin_name), "%s", sh->host.name ? sh->host.name : "?");
    res->version = sh->host.version;
    unsigned parties = (unsigned)n + 2;
    pthread_barrier_init(&sh->ready, NULL, parties);
    pthread_barrier_init(&sh->go, NULL, parties);
    pthread_barrier_init(&sh->done, NULL, parties);
    pthread_barrier_init(&sh->fin, NULL, parties);
    pthread_t proxy;
    int started = 0, proxy_started = pthread_create(&proxy, NULL, proxy_main, sh) == 0;
    if (proxy_started)
        for (; started < n; started++)
            if (pthread_create(&apps[started].th, NULL, app_main, &apps[started]) != 0)
                break;
    if (!proxy_started || started < n) {
        /* a barrier that can never fill: give up without waiting on it */
        snprintf(err, errlen, "cannot create the harness threads");
        fprintf(stderr, "ncclscope-bench: %s\n", err);
        _exit(3);
    }
    pthread_barrier_wait(&sh->ready);
    pthread_barrier_wait(&sh->go);
    uint64_t t0 = cycle_mono_ns(), cpu0 = process_cpu_ns(), main0 = thread_cpu_ns();
    while ((double)(cycle_mono_ns() - t0) < cfg->seconds * 1e9)
        sleep_us(20000);
    atomic_store(&sh->stop, 1);
    pthread_barrier_wait(&sh->done);
    res->wall_s = (double)(cycle_mono_ns() - t0) / 1e9;
    uint64_t harness = sh->proxy_cpu_ns + (thread_cpu_ns() - main0);
    for (int i = 0; i < n; i++)
        harness += apps[i].cpu_ns;
    double bg = (double)(process_cpu_ns() - cpu0) - (double)harness;
    res->kept.background_cores = bg > 0 ? bg / 1e9 / res->wall_s : 0;
    pthread_barrier_wait(&sh->fin);
    for (int i = 0; i < n; i++)
        pthread_join(apps[i].th, NULL);
    pthread_join(proxy, NULL);
    pthread_barrier_destroy(&sh->ready);
    pthread_barrier_destroy(&sh->go);
    pthread_barrier_destroy(&sh->done);
    pthread_barrier_destroy(&sh->fin);
    nsc_host_unload(&sh->host);

    /* what both sides called, for the kept counts */
    struct bench_result *k = &res->kept;
    snprintf(k->plugin_name, sizeof(k->plugin_name), "%s", res->plugin_name);
    k->version = res->version;
    k->wall_s = res->wall_s;
    size_t total = 0;
    uint64_t app_calls = 0;
    for (int i = 0; i < n; i++) {
        struct app *a = &apps[i];
        if (a->init_failed && rc == 0) {
            snprintf(err, errlen, "the plugin's init failed on application thread %d", i);
            rc = -1;
        }
        for (int c = 0; c < MIX_KINDS; c++)
            k->calls[c] += a->r->calls[c] + a->pr->calls[c];
        k->events_offered += a->r->events_offered + a->pr->events_offered;
        k->events_null += a->r->events_null + a->pr->events_null;
        total += a->n;
        app_calls += a->calls;
    }
    bench_read_traces(dir, k, cfg->keep_traces);
    if (cfg->keep_traces)
        fprintf(stderr, "ncclscope-bench: traces kept in %s\n", dir);
    uint32_t *all = calloc(total ? total : 1, sizeof(uint32_t));
    if (all) {
        size_t m = 0;
        for (int i = 0; i < n; i++) {
            memcpy(all + m, apps[i].cost, apps[i].n * sizeof(uint32_t));
            m += apps[i].n;
        }
        res->ops[PATTERN_APP] = m;
        res->p50[PATTERN_APP] = quantile(all, m, 0.5);
        res->p90[PATTERN_APP] = quantile(all, m, 0.9);
        free(all);
    }
    res->ops[PATTERN_PROXY] = sh->proxy_n;
    res->p50[PATTERN_PROXY] = quantile(sh->proxy_cost, sh->proxy_n, 0.5);
    res->p90[PATTERN_PROXY] = quantile(sh->proxy_cost, sh->proxy_n, 0.9);
    res->ns_per_tick = cycle_ns_per_tick();
    res->handoff_p50_us = quantile(sh->handoff_ticks, sh->proxy_n, 0.5) * res->ns_per_tick / 1e3;
    uint64_t ops_app = 0;
    for (int i = 0; i < n; i++)
        ops_app += apps[i].r->seq;
    res->op_rate = (double)ops_app / res->wall_s;
    if (cfg->per_call && n > 0) {
        /* the first application thread's communicator: both sides of it */
        const struct mix_op *op = apps[0].r->op;
        res->nsteps = op->nsteps;
        for (int i = 0; i < op->nsteps; i++) {
            const struct mix_step *st = &op->step[i];
            int on_proxy = st->part != 0;
            uint32_t *v = (on_proxy ? apps[0].psteps : apps[0].steps) + (size_t)i * STEP_SAMPLES;
            size_t m = on_proxy ? apps[0].nsteps_proxy : apps[0].nsteps_app;
            res->step_p50[i] = quantile(v, m < STEP_SAMPLES ? m : STEP_SAMPLES, 0.5);
            const char *et = nsc_etype_name((unsigned)__builtin_ctzll(op->ev[st->ev].d.type));
            snprintf(res->step_name[i], sizeof(res->step_name[i]), "%s %s %s", on_proxy ? "proxy" : "app",
                     et ? et : "?", mix_kind_name[st->kind]);
        }
    }
    res->calls_per_op[PATTERN_APP] = ops_app ? (double)app_calls / (double)ops_app : 0;
    res->calls_per_op[PATTERN_PROXY] = ops_app ? (double)sh->proxy_calls / (double)ops_app : 0;
out:
    rmdir(dir); /* fails harmlessly when traces were kept */
    for (int i = 0; i < n; i++) {
        struct app *a = &apps[i];
        if (a->r)
            free(a->r->op);
        if (a->pr)
            free(a->pr->op);
        free(a->r);
        free(a->pr);
        free(a->q);
        free(a->scratch);
        free(a->cost);
        free(a->steps);
        free(a->psteps);
    }
    free(apps);
    free(sh->proxy_cost);
    free(sh->handoff_ticks);
    free(sh->cpus);
    free(sh);
    return rc;
}
