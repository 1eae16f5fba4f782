// SPDX-License-Identifier: Apache-2.0
/* bench_run.c - running one configuration and reading back its trace. */
#include "bench_run.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cycle_timer.h"
#include "host.h"
#include "trace_decode.h"

/* ---- the floor ---- */

static nsc_abi_result noop_stop(void *h) {
    (void)h;
    return NSC_ABI_SUCCESS;
}

struct floor { double tsc_ns, cgt_ns, call_ns; };

/* Batches of back-to-back reads/calls between two TSC reads: what one
 * timestamp read and one call through a plugin table cost on this core,
 * measured the same way as the plugin's calls. */
static void measure_floor(struct floor *f) {
    enum { N = 200000 };
    double npt = cycle_ns_per_tick();
    volatile uint64_t sink = 0;
    uint64_t acc = 0, t0, t1;
    t0 = cycle_now();
    for (int i = 0; i < N; i++)
        acc += cycle_now();
    t1 = cycle_now();
    f->tsc_ns = (double)(t1 - t0) * npt / N;
    struct timespec ts;
    t0 = cycle_now();
    for (int i = 0; i < N; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        acc += (uint64_t)ts.tv_nsec;
    }
    t1 = cycle_now();
    f->cgt_ns = (double)(t1 - t0) * npt / N;
    nsc_abi_result (*volatile fp)(void *) = noop_stop;
    t0 = cycle_now();
    for (int i = 0; i < N; i++)
        acc += (uint64_t)fp(&ts);
    t1 = cycle_now();
    f->call_ns = (double)(t1 - t0) * npt / N;
    sink = acc;
    (void)sink;
}

/* ---- writer threads ---- */

struct shared {
    const struct bench_config *cfg;
    struct nsc_host host;
    pthread_barrier_t go, done, fin;
    _Atomic int stop;
    uint64_t t_start_ns;
    int *cpus;
    int ncpus;
};

struct writer {
    pthread_t th;
    int index;
    struct shared *sh;
    struct mix_runner *r;
    struct floor fl;
    uint64_t cpu_ns;
    int init_failed;
};

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin(const struct shared *sh, int index) {
    if (sh->ncpus <= 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sh->cpus[index % sh->ncpus], &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Holds a writer to `rate` events (or callbacks) per second from its own
 * start t0. */
static void pace(const struct shared *sh, const struct mix_runner *r, double rate, int callbacks,
                 uint64_t t0) {
    if (rate <= 0)
        return;
    uint64_t done = callbacks ? r->calls[MIX_START] + r->calls[MIX_STOP] + r->calls[MIX_STATE]
                              : r->events_offered;
    uint64_t due = t0 + (uint64_t)((double)done / rate * 1e9);
    for (;;) {
        uint64_t now = cycle_mono_ns();
        if (now >= due || atomic_load_explicit(&sh->stop, memory_order_relaxed))
            return;
        if (due - now > 200000) {
            struct timespec ts = {0, (long)(due - now - 100000)};
            nanosleep(&ts, NULL);
        }
    }
}

static void *writer_main(void *arg) {
    struct writer *w = arg;
    struct shared *sh = w->sh;
    const struct bench_config *cfg = sh->cfg;
    struct mix_runner *r = w->r;
    pin(sh, w->index);
    char name[16];
    snprintf(name, sizeof(name), "bench-w%d", w->index);
    pthread_setname_np(pthread_self(), name);
    measure_floor(&w->fl);

    int mask = 0;
    if (nsc_host_init(&sh->host, &r->ctx, 0xbe4c000000000000ull | (uint64_t)cfg->threads, &mask,
                      "ncclscope-bench", 1, cfg->threads, w->index) != 0 || !r->ctx) {
        w->init_failed = 1;
        r->ctx = NULL;
    }
    r->mask = (uint32_t)mask & nsc_host_type_mask(&sh->host);
    r->host = &sh->host;
    r->pid = (int)getpid();
    r->fence_overhead = cycle_fence_overhead();
    double npt = cycle_ns_per_tick();

    pthread_barrier_wait(&sh->go);
    uint64_t cpu0 = thread_cpu_ns(), t0 = cycle_mono_ns();
    /* The fenced add that --cold puts after each call, timed alone: the
     * floor of a cold call, subtracted like the fence pair's cost. */
    if (cfg->cold_kib) {
        uint64_t best = UINT64_MAX;
        for (int k = 0; k < 1000; k++) {
            uint64_t a = cycle_fenced();
            atomic_fetch_add_explicit(&r->sync_word, 1, memory_order_seq_cst);
            uint64_t b = cycle_fenced() - a;
            best = b < best ? b : best;
        }
        r->fence_overhead = best;
    }
    while (r->ctx && !atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        if (!cfg->cold_kib)
            mix_run_grouped(r, npt);
        mix_run_natural(r, npt);
        pace(sh, r, cfg->rate, cfg->rate_callbacks, t0);
    }
    w->cpu_ns = thread_cpu_ns() - cpu0;
    pthread_barrier_wait(&sh->done); /* main measures RSS with every event still live */
    pthread_barrier_wait(&sh->fin);
    if (r->ctx)
        nsc_host_finalize(&sh->host, r->ctx);
    return NULL;
}

/* ---- process measurements ---- */

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    long v = 0;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6)) {
            v = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static uint64_t process_cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

/* ---- reading back ncclscope's traces ---- */

struct readback {
    struct bench_result *res;
    struct nsc_stats_header last_h;
    uint64_t drop_records, drop_events, records, lost;
    int have_stats;
};

static void rb_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    (void)d, (void)thread, (void)ext;
    struct readback *rb = ud;
    if (r->h.kind == NSC_REC_START) {
        rb->res->trace_records++;
        rb->res->trace_kind[MIX_START]++;
    } else if (r->h.kind == NSC_REC_STOP) {
        rb->res->trace_kind[MIX_STOP]++;
    } else if (r->h.kind == NSC_REC_STATE) {
        rb->res->trace_kind[MIX_STATE]++;
    }
}

static void rb_stats(void *ud, struct nsc_decoder *d, const struct nsc_stats_header *h,
                     const struct nsc_thread_stats *t) {
    (void)d;
    struct readback *rb = ud;
    /* STATS are cumulative: the last block of a file is its final count. */
    rb->have_stats = 1;
    rb->drop_records = h->drops_no_thread;
    rb->drop_events = h->drops_no_thread;
    rb->lost = h->lost_write + h->lost_exit; /* 0 in files before format 3 */
    for (uint32_t i = 0; i < h->nthreads; i++) {
        rb->drop_records += t[i].drops_ring;
        rb->drop_events += t[i].drops_events;
    }
}

static void rb_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct readback *rb = ud;
    rb->res->trace_damage++;
    fprintf(stderr, "ncclscope-bench: trace damaged: %s\n", msg);
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* The counting plugin's totals: `"totals": {"start": N, "stop": N, "state": N}`
 * (bench/counting_plugin.c writes exactly this). */
static void read_counts(const char *path, struct bench_result *res) {
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *t = strstr(buf, "\"totals\": {");
    unsigned long long a, b, c;
    if (t && sscanf(t, "\"totals\": {\"start\": %llu, \"stop\": %llu, \"state\": %llu", &a, &b, &c) == 3) {
        res->have_counts = 1;
        res->counted[MIX_START] += a;
        res->counted[MIX_STOP] += b;
        res->counted[MIX_STATE] += c;
    }
}

void bench_read_traces(const char *dir, struct bench_result *res, int keep) {
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *de;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (ends_with(de->d_name, ".counts.json")) {
            read_counts(path, res);
            if (!keep)
                unlink(path);
            continue;
        }
        struct nsc_decoder d;
        if (nsc_decoder_open(&d, path) == NSC_OK) {
            struct readback rb;
            memset(&rb, 0, sizeof(rb));
            rb.res = res;
            struct nsc_decode_ops ops = {.record = rb_record, .stats = rb_stats, .error = rb_error};
            nsc_decoder_run(&d, &ops, &rb);
            if (!d.ended)
                res->trace_damage++;
            nsc_decoder_close(&d);
            res->have_trace = 1;
            res->trace_files++;
            res->trace_bytes += (uint64_t)st.st_size;
            res->trace_drop_records += rb.drop_records;
            res->trace_drop_events += rb.drop_events;
            res->trace_lost += rb.lost;
        }
        if (!keep)
            unlink(path);
    }
    closedir(dp);
    if (!keep)
        rmdir(dir);
}

/* ---- one configuration ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n ? v[n / 2] : 0;
}

struct replay_probe_ud {
    struct lat_hist *single; /* [MIX_KINDS] */
    uint64_t *calls;
    uint64_t overhead;
    double scale;
};

static uint64_t probe_clock(void) { return cycle_fenced(); }

static void probe_sample(void *ud, uint32_t thread, enum nsc_call_kind kind, uint64_t elapsed) {
    (void)thread; /* calls are serialized by the replay engine: one histogram is safe */
    struct replay_probe_ud *p = ud;
    int k = kind == NSC_CALL_START ? MIX_START : kind == NSC_CALL_STOP ? MIX_STOP : MIX_STATE;
    uint64_t d = elapsed > p->overhead ? elapsed - p->overhead : 0;
    lat_hist_add(&p->single[k], (uint64_t)((double)d * p->scale + 0.5));
    p->calls[k]++;
}

static int run_replay(const struct bench_config *cfg, struct shared *sh, struct bench_result *res,
                      char *err, size_t errlen) {
    struct floor fl;
    measure_floor(&fl);
    res->floor_tsc_ns = fl.tsc_ns;
    res->floor_clock_gettime_ns = fl.cgt_ns;
    res->floor_call_ns = fl.call_ns;
    struct replay_probe_ud pu = {res->single, res->calls, cycle_fence_overhead(),
                                 cycle_ns_per_tick() * 16.0};
    struct nsc_replay_probe probe = {probe_clock, probe_sample, &pu};
    uint64_t t0 = cycle_mono_ns(), cpu0 = process_cpu_ns();
    long rss_peak = 0;
    do {
        struct nsc_replay_stats st;
        if (nsc_replay_run_probed(&sh->host, cfg->script, &probe, &st, err, errlen) != 0)
            return -1;
        res->events_offered += st.delivered;
        res->events_null += st.null_handles;
        long rss = rss_kib();
        if (rss > rss_peak)
            rss_peak = rss;
    } while ((double)(cycle_mono_ns() - t0) < cfg->seconds * 1e9);
    res->wall_s = (double)(cycle_mono_ns() - t0) / 1e9;
    /* Replays run one call at a time: whatever CPU is not the calls' own
     * belongs to the engine and the plugin's background work together. */
    res->background_cores = (double)(process_cpu_ns() - cpu0) / 1e9 / res->wall_s;
    res->rss_growth_kib = rss_peak;
    return 0;
}

int bench_run(const struct bench_config *cfg, struct bench_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof(*res));
    char dir[] = "/tmp/ncclscope-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    setenv("NCCLSCOPE_DIR", dir, 1);
    setenv("NCCLSCOPE_COUNT_DIR", dir, 1); /* the counting plugin's file */

    struct shared *sh = calloc(1, sizeof(*sh));
    int nthreads = cfg->script ? 0 : cfg->threads;
    struct writer *ws = calloc((size_t)(nthreads ? nthreads : 1), sizeof(*ws));
    if (!sh || !ws) {
        free(sh);
        free(ws);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sh->cfg = cfg;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        sh->cpus = calloc(CPU_SETSIZE, sizeof(int));
        for (int c = 0; sh->cpus && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                sh->cpus[sh->ncpus++] = c;
    }
    /* Writer state is allocated before the baseline RSS is read: only what
     * the plugin adds counts as its growth. */
    int rc = 0;
    for (int i = 0; i < nthreads; i++) {
        ws[i].r = calloc(1, sizeof(struct mix_runner));
        struct mix_op *op = calloc(1, sizeof(struct mix_op));
        if (!ws[i].r || !op || mix_build(op, cfg->mix) != 0) {
            free(op);
            snprintf(err, errlen, ws[i].r && op ? "unknown mix %s" : "out of memory", cfg->mix);
            rc = -1;
            nthreads = i + (ws[i].r != NULL);
            goto out;
        }
        ws[i].r->op = op;
        memset(ws[i].r->h, 0, sizeof(ws[i].r->h));
        if (cfg->cold_kib) {
            ws[i].r->cold_bytes = (size_t)cfg->cold_kib << 10;
            ws[i].r->scratch = calloc(1, ws[i].r->cold_bytes);
            if (!ws[i].r->scratch) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
                nthreads = i + 1;
                goto out;
            }
        }
        ws[i].index = i;
        ws[i].sh = sh;
    }
    long rss0 = rss_kib();
    if (nsc_host_load(&sh->host, cfg->plugin, cfg->version, err, errlen) != 0) {
        rc = -1;
        goto out;
    }
    snprintf(res->plugin_name, sizeof(res->plugin_name), "%s",
             sh->host.name ? sh->host.name : "?");
    res->version = sh->host.version;

    uint64_t t_stop = 0; /* the writers' last call */
    if (cfg->script) {
        rc = run_replay(cfg, sh, res, err, errlen);
        t_stop = cycle_mono_ns(); /* the replay finalized already: drain is in its time */
        if (res->rss_growth_kib)
            res->rss_growth_kib -= rss0;
    } else {
        pthread_barrier_init(&sh->go, NULL, (unsigned)nthreads + 1);
        pthread_barrier_init(&sh->done, NULL, (unsigned)nthreads + 1);
        pthread_barrier_init(&sh->fin, NULL, (unsigned)nthreads + 1);
        int started = 0;
        for (; started < nthreads; started++)
            if (pthread_create(&ws[started].th, NULL, writer_main, &ws[started]) != 0)
                break;
        if (started < nthreads) {
            /* Cannot run a partial configuration: tell the ones started. */
            snprintf(err, errlen, "cannot create writer thread %d", started);
            rc = -1;
        }
        if (rc == 0) {
            pthread_barrier_wait(&sh->go);
            sh->t_start_ns = cycle_mono_ns();
            uint64_t cpu0 = process_cpu_ns(), main0 = thread_cpu_ns();
            long rss_peak = rss_kib();
            while ((double)(cycle_mono_ns() - sh->t_start_ns) < cfg->seconds * 1e9) {
                struct timespec ts = {0, 20000000};
                nanosleep(&ts, NULL);
                long r = rss_kib();
                if (r > rss_peak)
                    rss_peak = r;
            }
            atomic_store(&sh->stop, 1);
            pthread_barrier_wait(&sh->done);
            t_stop = cycle_mono_ns();
            res->wall_s = (double)(t_stop - sh->t_start_ns) / 1e9;
            long r = rss_kib();
            if (r > rss_peak)
                rss_peak = r;
            uint64_t writers = 0;
            for (int i = 0; i < nthreads; i++)
                writers += ws[i].cpu_ns;
            uint64_t total = process_cpu_ns() - cpu0, mine = thread_cpu_ns() - main0;
            double bg = (double)total - (double)writers - (double)mine;
            res->background_cores = bg > 0 ? bg / 1e9 / res->wall_s : 0;
            res->rss_growth_kib = rss_peak - rss0;
            pthread_barrier_wait(&sh->fin);
        }
        for (int i = 0; i < started; i++)
            pthread_join(ws[i].th, NULL);
        pthread_barrier_destroy(&sh->go);
        pthread_barrier_destroy(&sh->done);
        pthread_barrier_destroy(&sh->fin);

        double tsc[nthreads], cgt[nthreads], call[nthreads], p50[nthreads];
        for (int i = 0; i < nthreads; i++) {
            struct mix_runner *r = ws[i].r;
            if (ws[i].init_failed && rc == 0) {
                snprintf(err, errlen, "the plugin's init failed on writer %d", i);
                rc = -1;
            }
            tsc[i] = ws[i].fl.tsc_ns;
            cgt[i] = ws[i].fl.cgt_ns;
            call[i] = ws[i].fl.call_ns;
            for (int k = 0; k < MIX_KINDS; k++) {
                lat_hist_merge(&res->single[k], &r->single[k]);
                lat_hist_merge(&res->batch[k], &r->batch[k]);
                res->calls[k] += r->calls[k];
            }
            res->events_offered += r->events_offered;
            res->events_null += r->events_null;
        }
        for (int k = 0; k < MIX_KINDS; k++) {
            for (int i = 0; i < nthreads; i++)
                p50[i] = (double)lat_hist_quantile(&ws[i].r->batch[k], 0.5) / 16.0;
            qsort(p50, (size_t)nthreads, sizeof(double), cmp_double);
            res->worst_thread_p50_ns[k] = nthreads ? p50[nthreads - 1] : 0;
        }
        res->floor_tsc_ns = median(tsc, nthreads);
        res->floor_clock_gettime_ns = median(cgt, nthreads);
        res->floor_call_ns = median(call, nthreads);
    }
    nsc_host_unload(&sh->host);
    if (t_stop)
        res->drain_s = (double)(cycle_mono_ns() - t_stop) / 1e9;
    bench_read_traces(dir, res, cfg->keep_traces);
    if (cfg->keep_traces)
        fprintf(stderr, "ncclscope-bench: traces kept in %s\n", dir);
out:
    rmdir(dir); /* fails harmlessly when traces were kept */
    for (int i = 0; i < nthreads; i++) {
        if (ws[i].r) {
            free(ws[i].r->scratch);
            free(ws[i].r->op);
        }
        free(ws[i].r);
    }
    free(ws);
    free(sh->cpus);
    free(sh);
    return rc;
}

uint64_t bench_calls(const struct bench_result *res) {
    return res->calls[MIX_START] + res->calls[MIX_STOP] + res->calls[MIX_STATE];
}

uint64_t bench_calls_kept(const struct bench_result *res) {
    if (res->have_trace) {
        uint64_t in = res->trace_kind[MIX_START] + res->trace_kind[MIX_STOP] + res->trace_kind[MIX_STATE];
        return in < bench_calls(res) ? in : bench_calls(res);
    }
    if (res->have_counts) {
        uint64_t in = res->counted[MIX_START] + res->counted[MIX_STOP] + res->counted[MIX_STATE];
        return in < bench_calls(res) ? in : bench_calls(res);
    }
    /* stop/state go only to non-NULL handles: what a NULL handle loses is
     * its start (its stop and states are never called) */
    uint64_t lost = res->events_null < res->calls[MIX_START] ? res->events_null : res->calls[MIX_START];
    return bench_calls(res) - lost;
}

uint64_t bench_events_kept(const struct bench_result *res) {
    uint64_t lost = res->events_null;
    if (res->have_trace) {
        uint64_t missing = res->events_offered > res->trace_records ? res->events_offered - res->trace_records : 0;
        lost += res->trace_drop_events > missing ? res->trace_drop_events : missing;
    } else if (res->have_counts && res->counted[MIX_START] < res->events_offered) {
        lost += res->events_offered - res->counted[MIX_START];
    }
    return lost < res->events_offered ? res->events_offered - lost : 0;
}

int bench_zero_drop(const struct bench_result *res) {
    if (res->events_null || res->trace_damage)
        return 0;
    for (int k = 0; k < MIX_KINDS; k++) {
        if (res->have_trace && res->trace_kind[k] != res->calls[k])
            return 0;
        if (res->have_counts && res->counted[k] != res->calls[k])
            return 0;
    }
    return !res->have_trace || (res->trace_drop_records == 0 && res->trace_drop_events == 0 &&
                                res->trace_lost == 0);
}

int bench_sustained(const struct bench_result *res) {
    double allowed = 0.05 * res->wall_s;
    return bench_zero_drop(res) && res->drain_s <= (allowed > 0.05 ? allowed : 0.05);
}
