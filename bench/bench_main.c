// SPDX-License-Identifier: Apache-2.0
/*
 * bench_main.c - ncclscope-bench: the callback-latency benchmark.
 *
 *   ncclscope-bench [--plugin SO]... [--mix NAME[,NAME]... | --replay DIR]
 *                   [--threads N] [--seconds S] [--version vN] [--events MASK]
 *                   [--rate EV_PER_S | --cb-rate CB_PER_S] [--json FILE] [--keep-traces]
 *                   [--knee BUDGET_S [--knee-start CB_PER_S]] [--cold KIB]
 *   ncclscope-bench --nccl-pattern [--plugin SO]... [--threads N] [--seconds S]
 *                   [--rounds R] [--op-rate OPS_PER_S] [--evict KIB] [--proxy-ops N]
 *                   [--json FILE]
 *
 * Plugins default to the reference empty plugin and ncclscope from this
 * build, side by side (--nccl-pattern: empty, floor and ncclscope). Thread counts run 1, 2, 4, ... up to N (default 16).
 * docs/benchmarks.md explains the timing method. --knee searches, per
 * (plugin, mix, thread count), the highest rate kept with zero drops
 * (bench_knee.h) instead of measuring latency at one rate.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_knee.h"
#include "bench_run.h"
#include "cycle_timer.h"
#include "nccl_pattern.h"
#include "replay.h"
#include "tsv_recording.h"
#include "version.h"

#define MAX_PLUGINS 8
#define MAX_MIXES 8
#define MAX_SCRIPTS 64

static void usage(FILE *f) {
    fprintf(f,
            "usage: ncclscope-bench [--plugin SO]... [--mix NAME[,NAME...] | --replay DIR]\n"
            "                       [--threads N] [--seconds S] [--version vN] [--events MASK]\n"
            "                       [--rate EV_PER_S | --cb-rate CB_PER_S] [--json FILE] [--keep-traces]\n"
            "                       [--knee BUDGET_S [--knee-start CB_PER_S]] [--cold KIB]\n"
            "  --plugin SO     profiler plugin to load like NCCL does (repeatable;\n"
            "                  default: the empty reference plugin and ncclscope)\n"
            "  --mix NAME      allreduce64, allreduce1m, network (default: all three)\n"
            "  --replay DIR    replay every recording (*.tsv) and ncclscope trace (*.nsc)\n"
            "                  under DIR with its threads, descriptors and parent links\n"
            "  --threads N     writer threads: runs 1, 2, 4, ... and N (default 16)\n"
            "  --thread-counts A,B,...  exactly these writer thread counts\n"
            "  --seconds S     per configuration (default 2)\n"
            "  --version vN    force ncclProfiler_vN (default: newest the plugin has)\n"
            "  --events MASK   NCCLSCOPE_EVENTS for both plugins (default: all)\n"
            "  --rate R        events per second per writer thread (default: flat out)\n"
            "  --cb-rate R     callbacks (start+stop+state) per second per writer thread\n"
            "  --json FILE     one object per (plugin, workload, kind, threads)\n"
            "  --keep-traces   leave ncclscope's trace files in /tmp\n"
            "  --knee B        per (plugin, mix, threads): the highest callback rate kept\n"
            "                  with zero drops (max_zero_drop_rate), searched with paced\n"
            "                  probes of --seconds each (default 0.5) within B seconds\n"
            "  --knee-start R  first paced rate of the search, callbacks/s per writer (1e6)\n"
            "  --cold KIB      one call at a time in NCCL's order, KIB of other memory written\n"
            "                  before each and a locked add after it (NCCL's next atomic):\n"
            "                  what a call costs with cold caches; p50 is per call\n"
            "       ncclscope-bench --nccl-pattern [--plugin SO]... [--threads N] [--seconds S]\n"
            "                       [--rounds R] [--op-rate OPS_PER_S] [--evict KIB] [--proxy-ops N]\n"
            "                       [--per-call] [--json FILE]\n"
            "  --nccl-pattern  NCCL's threads: N application threads (default 1) make each\n"
            "                  operation's API, Group and Coll calls, one proxy thread its\n"
            "                  KernelCh, ProxyOp and ProxyStep calls with the Coll as parent;\n"
            "                  paced, KIB written before each part; TSC ticks per operation\n"
            "                  for each side, median, and the ratio to the floor plugin\n"
            "                  (default plugins: empty, floor, ncclscope; seconds: 1)\n"
            "  --rounds R      runs of every plugin, interleaved; the summary is their median (3)\n"
            "  --op-rate R     operations per second per application thread (20000)\n"
            "  --evict KIB     memory each thread writes before each of its parts (256)\n"
            "  --per-call      also each call's median (the last round, first communicator)\n"
            "  --proxy-ops N   1: each channel also has a ProxyOp of 2 ProxySteps (the network\n"
            "                  path; default), 0: KernelCh only (NVLink's path)\n");
}

/* The plugins next to this executable in the build tree. */
static void default_plugins(const char **plugins, int *n, int with_floor) {
    static char empty[PATH_MAX + 64], floor[PATH_MAX + 64], scope[PATH_MAX + 64];
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(empty, sizeof(empty), "%s/libnccl-profiler-empty.so", exe);
    snprintf(floor, sizeof(floor), "%s/libnccl-profiler-floor.so", exe);
    snprintf(scope, sizeof(scope), "%s/../plugin/libnccl-profiler-ncclscope.so", exe);
    plugins[(*n)++] = empty;
    if (with_floor)
        plugins[(*n)++] = floor;
    plugins[(*n)++] = scope;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

struct script_entry {
    char name[256];
    struct nsc_script s;
};

/* Every *.tsv / *.nsc directly in dir or one level below (recordings keep
 * one folder per run). */
static int load_scripts(const char *dir, int depth, struct script_entry *out, int *n) {
    DIR *dp = opendir(dir);
    if (!dp) {
        fprintf(stderr, "ncclscope-bench: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    char **names = NULL;
    size_t nn = 0;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.')
            continue;
        char **m = realloc(names, (nn + 1) * sizeof(*m));
        if (!m)
            break;
        names = m;
        names[nn++] = strdup(de->d_name);
    }
    closedir(dp);
    /* sorted, so tables come out in a stable order */
    for (size_t i = 1; i < nn; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    int rc = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        DIR *sub = depth == 0 ? opendir(path) : NULL;
        if (sub) {
            closedir(sub);
            if (load_scripts(path, 1, out, n) != 0)
                rc = -1;
        } else if ((ends_with(names[i], ".tsv") || ends_with(names[i], ".nsc")) && *n < MAX_SCRIPTS) {
            struct script_entry *e = &out[*n];
            char err[1024];
            int r = ends_with(names[i], ".tsv") ? nsc_script_from_tsv(&e->s, path, err, sizeof(err))
                                                : nsc_script_from_trace(&e->s, path, err, sizeof(err));
            if (r != 0 || e->s.ncalls == 0) {
                fprintf(stderr, "ncclscope-bench: %s: %s\n", path, r ? err : "no calls");
                rc = -1;
            } else {
                const char *base = strrchr(dir, '/');
                snprintf(e->name, sizeof(e->name), "%s/%s", depth ? (base ? base + 1 : dir) : ".",
                         names[i]);
                (*n)++;
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static double q_ns(const struct lat_hist *h, double q) { return (double)lat_hist_quantile(h, q) / 16.0; }

/* Mean of the samples up to the 99th percentile, in ns (bucket lower
 * edges: within 1.6 %): the cost per call without the preemptions that
 * dominate a plain mean. */
static double trimmed_mean_ns(const struct lat_hist *h) {
    uint64_t keep = h->count - h->count / 100, n = 0;
    double sum = 0;
    for (unsigned i = 0; i < LAT_HIST_BUCKETS && n < keep; i++) {
        if (!h->b[i])
            continue;
        uint64_t lo = i < 128 ? i : (uint64_t)(64 + (i - 128) % 64) << ((i - 128) / 64 + 1);
        uint64_t take = h->b[i] < keep - n ? h->b[i] : keep - n;
        sum += (double)lo * (double)take;
        n += take;
    }
    return n ? sum / (double)n / 16.0 : 0;
}

static void print_header(const char *workload, const struct bench_result *r) {
    printf("\n== %s ==  floor: rdtsc %.1f ns, clock_gettime %.1f ns, empty call through a table %.1f ns\n",
           workload, r->floor_tsc_ns, r->floor_clock_gettime_ns, r->floor_call_ns);
    printf("%-10s %3s %4s %-6s %9s %9s %9s %9s %9s %7s %7s %11s %14s %8s %7s %9s %6s\n", "plugin",
           "ver", "thr", "kind", "p50(ns)", "p50/tsc", "p99(ns)", "p99/tsc", "p99.9(ns)", "max(us)",
           "worst50", "Mev/s/thr", "kept/offered", "B/event", "RSS MiB", "bg cores", "");
}

static void print_rows(const struct bench_config *cfg, const struct bench_result *r) {
    uint64_t kept = bench_events_kept(r);
    double mev = (double)r->events_offered / r->wall_s / 1e6 / (cfg->script ? 1 : cfg->threads);
    for (int k = 0; k < MIX_KINDS; k++) {
        if (!r->calls[k])
            continue;
        /* Mixes: the median is the batch method's; replays have single-call
         * samples only. */
        const struct lat_hist *med = cfg->script || cfg->cold_kib ? &r->single[k] : &r->batch[k];
        double p50 = q_ns(med, 0.5), p99 = q_ns(&r->single[k], 0.99);
        char ratio[32];
        snprintf(ratio, sizeof(ratio), "%llu/%llu", (unsigned long long)kept,
                 (unsigned long long)r->events_offered);
        char bpe[16] = "-";
        if (r->have_trace && kept)
            snprintf(bpe, sizeof(bpe), "%.2f", (double)r->trace_bytes / (double)kept);
        printf("%-10s %3d %4d %-6s %9.1f %9.2f %9.1f %9.2f %9.1f %7.1f %7.1f %11.2f %14s %8s %7.1f %9.2f %6s\n",
               r->plugin_name, r->version, cfg->script ? 0 : cfg->threads, mix_kind_name[k], p50,
               p50 / r->floor_tsc_ns, p99, p99 / r->floor_tsc_ns, q_ns(&r->single[k], 0.999),
               (double)r->single[k].max / 16.0 / 1000.0,
               cfg->cold_kib ? trimmed_mean_ns(&r->single[k])
               : cfg->script ? p50 : r->worst_thread_p50_ns[k], mev, ratio, bpe,
               (double)r->rss_growth_kib / 1024.0, r->background_cores,
               bench_zero_drop(r) ? "" : "LOSS");
    }
}

static void json_rows(FILE *f, int *first, const struct bench_config *cfg, const char *workload,
                      const struct bench_result *r) {
    uint64_t kept = bench_events_kept(r);
    uint64_t dropped = r->events_offered - kept;
    double per = cfg->script ? 1 : cfg->threads;
    for (int k = 0; k < MIX_KINDS; k++) {
        if (!r->calls[k])
            continue;
        const struct lat_hist *med = cfg->script || cfg->cold_kib ? &r->single[k] : &r->batch[k];
        fprintf(f,
                "%s\n  {\"plugin\": \"%s\", \"plugin_path\": \"%s\", \"version\": %d, \"workload\": \"%s\", "
                "\"kind\": \"%s\", \"threads\": %d, \"p50_ns\": %.2f, \"p99_ns\": %.2f, "
                "\"p999_ns\": %.2f, \"max_ns\": %.2f, \"single_p50_ns\": %.2f, "
                "\"worst_thread_p50_ns\": %.2f, \"calls\": %llu, "
                "\"events_per_s\": %.0f, \"events_offered\": %llu, \"events_kept\": %llu, "
                "\"drops\": %llu, \"floor_ns\": %.2f, \"floor_clock_gettime_ns\": %.2f, "
                "\"floor_call_ns\": %.2f, \"rss_growth_kib\": %ld, \"background_cores\": %.3f, "
                "\"trace_bytes\": %llu, \"bytes_per_event\": %.3f, \"trace_damage\": %llu, "
                "\"callbacks_per_s\": %.0f, \"callbacks_offered\": %llu, \"callbacks_kept\": %llu, "
                "\"zero_drop\": %s, \"sustained\": %s, \"drain_ms\": %.1f, \"kept_seen_in\": \"%s\", "
                "\"cold_kib\": %u, \"single_mean99_ns\": %.2f}",
                *first ? "" : ",", r->plugin_name, cfg->plugin, r->version, workload,
                mix_kind_name[k], cfg->script ? 0 : cfg->threads, q_ns(med, 0.5),
                q_ns(&r->single[k], 0.99), q_ns(&r->single[k], 0.999),
                (double)r->single[k].max / 16.0, q_ns(&r->single[k], 0.5),
                cfg->script || cfg->cold_kib ? q_ns(med, 0.5) : r->worst_thread_p50_ns[k],
                (unsigned long long)r->calls[k],
                (double)r->events_offered / r->wall_s / (cfg->script ? 1 : cfg->threads),
                (unsigned long long)r->events_offered, (unsigned long long)kept,
                (unsigned long long)dropped, r->floor_tsc_ns, r->floor_clock_gettime_ns,
                r->floor_call_ns, r->rss_growth_kib, r->background_cores,
                (unsigned long long)r->trace_bytes,
                r->have_trace && kept ? (double)r->trace_bytes / (double)kept : 0.0,
                (unsigned long long)r->trace_damage, (double)bench_calls(r) / r->wall_s / per,
                (unsigned long long)bench_calls(r), (unsigned long long)bench_calls_kept(r),
                bench_zero_drop(r) ? "true" : "false", bench_sustained(r) ? "true" : "false",
                r->drain_s * 1e3,
                r->have_trace ? "trace" : r->have_counts ? "counts" : "handles", cfg->cold_kib,
                trimmed_mean_ns(&r->single[k]));
        *first = 0;
    }
}

static void print_knee_header(const char *workload, double seconds) {
    printf("\n== knee: %s ==  callbacks/s; a probe (%.2f s) passes when every callback was kept and the\n"
           "plugin drained within max(50 ms, 5 %%) after the writers stopped\n",
           workload, seconds);
    printf("%-10s %3s %4s %19s %11s %11s %11s %-8s %s\n", "plugin", "ver", "thr",
           "max_zero_drop_rate", "per thread", "events/s", "flat out", "bound",
           "probes: M cb/s per writer (+ kept, - lost, ~ kept but behind)");
}

static void print_knee(const struct bench_config *cfg, const struct knee_result *k) {
    char probes[1024] = "";
    size_t n = 0;
    for (int i = 0; i < k->nprobes && n < sizeof(probes) - 32; i++) {
        const struct knee_probe *p = &k->probe[i];
        n += (size_t)snprintf(probes + n, sizeof(probes) - n, "%s%s%.2f%s", i ? " " : "",
                              p->target == 0 ? "max:" : p->confirm ? "confirm:" : "",
                              p->offered / cfg->threads / 1e6,
                              p->sustained ? "+" : p->zero_drop ? "~" : "-");
    }
    printf("%-10s %3d %4d %17.2f M %9.2f M %9.2f M %9.2f M %-8s %s%s%s\n", k->plugin_name, k->version,
           cfg->threads, k->max_zero_drop_rate / 1e6, k->max_zero_drop_rate / cfg->threads / 1e6,
           k->max_zero_drop_rate * k->events_per_callback / 1e6, k->flat_out_rate / 1e6, k->bound,
           probes, k->converged ? "" : " (budget spent)",
           k->best >= 0 && !k->confirmed && strcmp(k->bound, "writers") ? " (not confirmed)" : "");
}

static void json_knee(FILE *f, int *first, const struct bench_config *cfg, const char *workload,
                      const struct knee_result *k) {
    fprintf(f,
            "%s\n  {\"plugin\": \"%s\", \"plugin_path\": \"%s\", \"version\": %d, \"workload\": \"%s\", "
            "\"kind\": \"knee\", \"threads\": %d, \"max_zero_drop_rate\": %.0f, "
            "\"max_zero_drop_rate_per_thread\": %.0f, \"max_zero_drop_events_per_s\": %.0f, "
            "\"flat_out_rate\": %.0f, \"bound\": \"%s\", \"converged\": %s, \"confirmed\": %s, "
            "\"probe_seconds\": %.3f, \"probes\": [",
            *first ? "" : ",", k->plugin_name, cfg->plugin, k->version, workload, cfg->threads,
            k->max_zero_drop_rate, k->max_zero_drop_rate / cfg->threads,
            k->max_zero_drop_rate * k->events_per_callback, k->flat_out_rate, k->bound,
            k->converged ? "true" : "false", k->confirmed ? "true" : "false", cfg->seconds);
    for (int i = 0; i < k->nprobes; i++) {
        const struct knee_probe *p = &k->probe[i];
        fprintf(f,
                "%s{\"target_per_thread\": %.0f, \"offered_rate\": %.0f, \"callbacks\": %llu, "
                "\"callbacks_kept\": %llu, \"events\": %llu, \"events_kept\": %llu, "
                "\"seconds\": %.3f, \"drain_ms\": %.1f, \"background_cores\": %.3f, \"zero_drop\": %s, "
                "\"sustained\": %s, \"confirm\": %s}",
                i ? ", " : "", p->target, p->offered, (unsigned long long)p->calls,
                (unsigned long long)p->calls_kept, (unsigned long long)p->events,
                (unsigned long long)p->events_kept, p->seconds, p->drain_s * 1e3, p->bg_cores,
                p->zero_drop ? "true" : "false", p->sustained ? "true" : "false",
                p->confirm ? "true" : "false");
    }
    fprintf(f, "]}");
    *first = 0;
}

/* ---- --nccl-pattern ---- */

#define MAX_ROUNDS 32

static double median_of(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n ? (n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* The named reference plugin's result in the same round, or NULL. */
static const struct pattern_result *named_of(struct pattern_result *round, const int *ran, int nplugins,
                                             const char *name) {
    for (int p = 0; p < nplugins; p++)
        if (ran[p] && !strcmp(round[p].plugin_name, name))
            return &round[p];
    return NULL;
}
#define floor_of(round, ran, n) named_of(round, ran, n, "floor")
#define empty_of(round, ran, n) named_of(round, ran, n, "empty")

static double pattern_total(const struct pattern_result *r) {
    return r->p50[PATTERN_APP] + r->p50[PATTERN_PROXY];
}

static void json_pattern(FILE *f, int *first, const char *path, const struct pattern_config *cfg,
                         const char *kind, int round, int rounds, const struct pattern_result *r,
                         const double *v, const double *ratio) {
    char rt[4][32];
    for (int i = 0; i < 4; i++)
        snprintf(rt[i], sizeof(rt[i]), ratio && ratio[i] > 0 ? "%.3f" : "null", ratio ? ratio[i] : 0);
    const struct bench_result *k = &r->kept;
    fprintf(f,
            "%s\n  {\"plugin\": \"%s\", \"plugin_path\": \"%s\", \"version\": %d, "
            "\"workload\": \"nccl-pattern\", \"kind\": \"%s\", \"round\": %d, \"rounds\": %d, "
            "\"app_threads\": %d, \"proxy_threads\": 1, \"op_rate\": %.0f, \"op_rate_reached\": %.0f, "
            "\"evict_kib\": %u, \"proxy_ops\": %d, "
            "\"seconds\": %.3f, \"app_ops\": %llu, \"proxy_ops\": %llu, "
            "\"app_p50_ticks\": %.1f, \"proxy_p50_ticks\": %.1f, \"total_p50_ticks\": %.1f, "
            "\"app_p90_ticks\": %.1f, \"proxy_p90_ticks\": %.1f, \"ns_per_tick\": %.5f, "
            "\"app_calls_per_op\": %.2f, \"proxy_calls_per_op\": %.2f, \"handoff_p50_us\": %.2f, "
            "\"app_x_floor\": %s, \"proxy_x_floor\": %s, \"total_x_floor\": %s, "
            "\"net_x_floor\": %s, "
            "\"callbacks_offered\": %llu, \"callbacks_kept\": %llu, \"events_offered\": %llu, "
            "\"events_kept\": %llu, \"zero_drop\": %s, \"kept_seen_in\": \"%s\", "
            "\"background_cores\": %.3f}",
            *first ? "" : ",", r->plugin_name, path, r->version, kind, round, rounds,
            cfg->app_threads, cfg->op_rate, r->op_rate, cfg->evict_kib, cfg->proxy_ops, cfg->seconds,
            (unsigned long long)r->ops[PATTERN_APP], (unsigned long long)r->ops[PATTERN_PROXY], v[0],
            v[1], v[2], r->p90[PATTERN_APP], r->p90[PATTERN_PROXY], r->ns_per_tick,
            r->calls_per_op[PATTERN_APP], r->calls_per_op[PATTERN_PROXY], r->handoff_p50_us, rt[0],
            rt[1], rt[2], rt[3], (unsigned long long)bench_calls(k), (unsigned long long)bench_calls_kept(k),
            (unsigned long long)k->events_offered, (unsigned long long)bench_events_kept(k),
            bench_zero_drop(k) ? "true" : "false",
            k->have_trace ? "trace" : k->have_counts ? "counts" : "handles", k->background_cores);
    *first = 0;
}

/* Ratios to the floor: application side, proxy side, total, and the total
 * net of the empty plugin (what the plugin's own work costs against what
 * the floor's costs, the call and the harness's loop taken out); 0 where
 * the reference is missing. */
static void ratio3(const struct pattern_result *r, const struct pattern_result *fl,
                   const struct pattern_result *em, double *out) {
    out[0] = fl && fl->p50[PATTERN_APP] > 0 ? r->p50[PATTERN_APP] / fl->p50[PATTERN_APP] : 0;
    out[1] = fl && fl->p50[PATTERN_PROXY] > 0 ? r->p50[PATTERN_PROXY] / fl->p50[PATTERN_PROXY] : 0;
    out[2] = fl && pattern_total(fl) > 0 ? pattern_total(r) / pattern_total(fl) : 0;
    double net = fl && em ? pattern_total(fl) - pattern_total(em) : 0;
    out[3] = net > 0 ? (pattern_total(r) - pattern_total(em)) / net : 0;
    if (out[3] < 0)
        out[3] = 0;
}

static void fmt_ratio(char *buf, size_t len, double x) {
    if (x > 0)
        snprintf(buf, len, "%.2f", x);
    else
        snprintf(buf, len, "-");
}

/* Every plugin once per round, in order, so that a slow stretch of the
 * machine falls on all of them alike; the summary is the median of rounds. */
static int run_pattern(const char **plugins, int nplugins, const struct pattern_config *base,
                       int rounds, FILE *jf, int *first) {
    static struct pattern_result res[MAX_ROUNDS][MAX_PLUGINS];
    int ran[MAX_ROUNDS][MAX_PLUGINS];
    memset(ran, 0, sizeof(ran));
    int failures = 0;
    printf("\n== nccl-pattern ==  %d application thread%s + 1 proxy thread, %.0f ops/s per "
           "application thread, %s,\n%u KiB written before each part, %.2f s per run; TSC ticks per "
           "operation: each thread's plugin calls only, median over operations\n",
           base->app_threads, base->app_threads > 1 ? "s" : "", base->op_rate,
           base->proxy_ops ? "KernelCh + ProxyOp/ProxyStep per channel" : "KernelCh per channel",
           base->evict_kib, base->seconds);
    printf("%5s %-10s %3s %8s %8s %8s %8s %9s %9s %8s %7s %9s %10s %16s %8s %6s\n", "round",
           "plugin", "ver", "ops", "ops/s", "app p50", "app p90", "proxy p50", "proxy p90", "total", "x floor",
           "calls/op", "handoff", "kept/offered", "bg cores", "");
    for (int round = 0; round < rounds; round++) {
        for (int p = 0; p < nplugins; p++) {
            struct pattern_config cfg = *base;
            cfg.plugin = plugins[p];
            char err[1024];
            if (pattern_run(&cfg, &res[round][p], err, sizeof(err)) != 0) {
                fprintf(stderr, "ncclscope-bench: %s, nccl-pattern: %s\n", plugins[p], err);
                failures++;
                continue;
            }
            ran[round][p] = 1;
        }
        const struct pattern_result *fl = floor_of(res[round], ran[round], nplugins);
        const struct pattern_result *em = empty_of(res[round], ran[round], nplugins);
        for (int p = 0; p < nplugins; p++) {
            if (!ran[round][p])
                continue;
            const struct pattern_result *r = &res[round][p];
            double rt[4], v[3] = {r->p50[PATTERN_APP], r->p50[PATTERN_PROXY], pattern_total(r)};
            ratio3(r, fl, em, rt);
            char x[16], calls[32], kept[40];
            fmt_ratio(x, sizeof(x), rt[2]);
            snprintf(calls, sizeof(calls), "%.0f+%.0f", r->calls_per_op[PATTERN_APP],
                     r->calls_per_op[PATTERN_PROXY]);
            snprintf(kept, sizeof(kept), "%llu/%llu", (unsigned long long)bench_calls_kept(&r->kept),
                     (unsigned long long)bench_calls(&r->kept));
            printf("%5d %-10s %3d %8llu %8.0f %8.0f %8.0f %9.0f %9.0f %8.0f %7s %9s %7.1f us %16s %8.2f %6s\n",
                   round + 1, r->plugin_name, r->version, (unsigned long long)r->ops[PATTERN_APP],
                   r->op_rate, r->p50[PATTERN_APP], r->p90[PATTERN_APP], r->p50[PATTERN_PROXY],
                   r->p90[PATTERN_PROXY], pattern_total(r), x, calls, r->handoff_p50_us, kept,
                   r->kept.background_cores, bench_zero_drop(&r->kept) ? "" : "LOSS");
            if (jf)
                json_pattern(jf, first, plugins[p], base, "nccl-pattern", round + 1,
                             rounds, r, v, fl ? rt : NULL);
        }
        fflush(stdout);
    }
    for (int p = 0; p < nplugins && base->per_call; p++) {
        const struct pattern_result *r = NULL;
        for (int round = 0; round < rounds; round++)
            if (ran[round][p])
                r = &res[round][p];
        if (!r)
            continue;
        printf("\n-- %s, round %d: each call's median, TSC ticks --\n", r->plugin_name, rounds);
        for (int i = 0; i < r->nsteps; i++)
            printf("%3d %-28s %6.0f\n", i, r->step_name[i], r->step_p50[i]);
    }
    printf("\n== nccl-pattern: median of %d round%s ==  TSC ticks per operation (ns), x floor: "
           "over the floor plugin's in the same round;\nnet x: both less the empty plugin's "
           "(the call and the harness's loop)\n",
           rounds, rounds > 1 ? "s" : "");
    printf("%-10s %13s %15s %15s %9s %9s %9s %9s\n", "plugin", "app p50", "proxy p50", "total",
           "app x", "proxy x", "total x", "net x");
    for (int p = 0; p < nplugins; p++) {
        double a[MAX_ROUNDS], b[MAX_ROUNDS], t[MAX_ROUNDS], ra[MAX_ROUNDS], rb[MAX_ROUNDS], rt[MAX_ROUNDS];
        double rn[MAX_ROUNDS];
        int m = 0, mr = 0, mn = 0;
        const struct pattern_result *last = NULL;
        for (int round = 0; round < rounds; round++) {
            if (!ran[round][p])
                continue;
            const struct pattern_result *r = &res[round][p];
            last = r;
            a[m] = r->p50[PATTERN_APP];
            b[m] = r->p50[PATTERN_PROXY];
            t[m] = pattern_total(r);
            m++;
            const struct pattern_result *fl = floor_of(res[round], ran[round], nplugins);
            if (fl) {
                double x[4];
                ratio3(r, fl, empty_of(res[round], ran[round], nplugins), x);
                ra[mr] = x[0];
                rb[mr] = x[1];
                rt[mr] = x[2];
                mr++;
                if (x[3] > 0)
                    rn[mn++] = x[3];
            }
        }
        if (!m)
            continue;
        double v[3] = {median_of(a, m), median_of(b, m), median_of(t, m)}, tot = v[2];
        double x[4] = {median_of(ra, mr), median_of(rb, mr), median_of(rt, mr), median_of(rn, mn)};
        char xs[4][16];
        for (int i = 0; i < 4; i++)
            fmt_ratio(xs[i], sizeof(xs[i]), mr ? x[i] : 0);
        double npt = last->ns_per_tick;
        printf("%-10s %5.0f (%5.0f) %6.0f (%6.0f) %6.0f (%6.0f) %9s %9s %9s %9s\n", last->plugin_name,
               v[0], v[0] * npt, v[1], v[1] * npt, tot, tot * npt, xs[0], xs[1], xs[2], xs[3]);
        if (jf)
            json_pattern(jf, first, plugins[p], base, "nccl-pattern-median", 0, rounds, last, v,
                         mr ? x : NULL);
    }
    return failures;
}

int main(int argc, char **argv) {
    const char *plugins[MAX_PLUGINS];
    int nplugins = 0;
    const char *mixes[MAX_MIXES];
    int nmixes = 0;
    const char *replay_dir = NULL, *json_path = NULL, *events = "all";
    int max_threads = 16, version = 0, keep = 0;
    int counts[32], ncounts = 0;
    double seconds = 0, rate = 0, knee = 0, knee_start = 1e6;
    unsigned cold_kib = 0;
    int rate_callbacks = 0;
    int pattern = 0, rounds = 3, threads_given = 0;
    double op_rate = 20000;
    unsigned evict_kib = 256;
    int proxy_ops = 1, per_call = 0;
    static char mixbuf[256];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--keep-traces")) {
            keep = 1;
            continue;
        } else if (!strcmp(a, "--nccl-pattern")) {
            pattern = 1;
            continue;
        } else if (!strcmp(a, "--per-call")) {
            per_call = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "ncclscope-bench: %s needs a value\n", a);
            usage(stderr);
            return 1;
        }
        i++;
        if (!strcmp(a, "--plugin")) {
            if (nplugins < MAX_PLUGINS)
                plugins[nplugins++] = v;
        } else if (!strcmp(a, "--mix")) {
            snprintf(mixbuf, sizeof(mixbuf), "%s", v);
            for (char *t = strtok(mixbuf, ","); t && nmixes < MAX_MIXES; t = strtok(NULL, ","))
                mixes[nmixes++] = t;
        } else if (!strcmp(a, "--replay")) {
            replay_dir = v;
        } else if (!strcmp(a, "--threads")) {
            max_threads = atoi(v);
            threads_given = 1;
        } else if (!strcmp(a, "--rounds")) {
            rounds = atoi(v);
        } else if (!strcmp(a, "--op-rate")) {
            op_rate = atof(v);
        } else if (!strcmp(a, "--proxy-ops")) {
            proxy_ops = atoi(v);
        } else if (!strcmp(a, "--evict")) {
            evict_kib = (unsigned)atoi(v);
        } else if (!strcmp(a, "--thread-counts")) {
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", v);
            for (char *t = strtok(buf, ","); t && ncounts < 32; t = strtok(NULL, ","))
                counts[ncounts++] = atoi(t);
        } else if (!strcmp(a, "--seconds")) {
            seconds = atof(v);
        } else if (!strcmp(a, "--version")) {
            version = atoi(v[0] == 'v' ? v + 1 : v);
        } else if (!strcmp(a, "--events")) {
            events = v;
        } else if (!strcmp(a, "--rate")) {
            rate = atof(v);
            rate_callbacks = 0;
        } else if (!strcmp(a, "--cb-rate")) {
            rate = atof(v);
            rate_callbacks = 1;
        } else if (!strcmp(a, "--knee")) {
            knee = atof(v);
            if (knee <= 0) {
                fprintf(stderr, "ncclscope-bench: --knee needs a time budget in seconds > 0\n");
                return 1;
            }
        } else if (!strcmp(a, "--cold")) {
            cold_kib = (unsigned)atoi(v);
        } else if (!strcmp(a, "--knee-start")) {
            knee_start = atof(v);
        } else if (!strcmp(a, "--json")) {
            json_path = v;
        } else {
            fprintf(stderr, "ncclscope-bench: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (seconds == 0)
        seconds = knee > 0 ? 0.5 : pattern ? 1.0 : 2.0;
    if (pattern && (replay_dir || knee > 0 || nmixes || ncounts || cold_kib || rate > 0)) {
        fprintf(stderr, "ncclscope-bench: --nccl-pattern has its own workload and pace: it takes "
                        "--plugin, --threads, --seconds, --rounds, --op-rate, --evict, --version, "
                        "--events, --json and --keep-traces\n");
        return 1;
    }
    if (pattern && (rounds < 1 || rounds > MAX_ROUNDS || !(op_rate >= 10 && op_rate <= 1e6) ||
                    evict_kib > 1048576 || proxy_ops < 0 || proxy_ops > 1)) {
        fprintf(stderr, "ncclscope-bench: --rounds 1..%d, --op-rate 10..1e6 operations/s, "
                        "--evict 0..1048576 KiB, --proxy-ops 0 or 1\n", MAX_ROUNDS);
        return 1;
    }
    if (knee > 0 && replay_dir) {
        fprintf(stderr, "ncclscope-bench: --knee paces the synthetic mixes; it cannot pace --replay\n");
        return 1;
    }
    if (max_threads < 1 || max_threads > 1024 || seconds <= 0 || version < 0 || version > 7 ||
        rate < 0 || knee_start <= 0) {
        fprintf(stderr, "ncclscope-bench: --threads 1..1024, --seconds > 0, --version v1..v7, "
                        "rates >= 0\n");
        return 1;
    }
    for (int i = 0; i < ncounts; i++)
        if (counts[i] < 1 || counts[i] > 1024) {
            fprintf(stderr, "ncclscope-bench: --thread-counts: 1..1024 each\n");
            return 1;
        }
    if (ncounts == 0) {
        for (int t = 1; t < max_threads; t *= 2)
            counts[ncounts++] = t;
        counts[ncounts++] = max_threads;
    }
    if (nplugins == 0)
        default_plugins(plugins, &nplugins, pattern);
    if (nplugins == 0) {
        fprintf(stderr, "ncclscope-bench: --plugin is required (no build-tree plugins found)\n");
        return 1;
    }
    if (nmixes == 0 && !replay_dir && !pattern) {
        mixes[nmixes++] = "allreduce64";
        mixes[nmixes++] = "allreduce1m";
        mixes[nmixes++] = "network";
    }
    for (int i = 0; i < nmixes; i++) {
        struct mix_op probe;
        if (mix_build(&probe, mixes[i]) != 0) {
            fprintf(stderr, "ncclscope-bench: unknown mix '%s' (allreduce64, allreduce1m, network)\n",
                    mixes[i]);
            return 1;
        }
    }
    static struct script_entry scripts[MAX_SCRIPTS];
    int nscripts = 0;
    if (replay_dir && (load_scripts(replay_dir, 0, scripts, &nscripts) != 0 || nscripts == 0)) {
        fprintf(stderr, "ncclscope-bench: %s: no usable recording or trace\n", replay_dir);
        return 1;
    }
    setenv("NCCLSCOPE_EVENTS", events, 1);
    cycle_calibrate();

    FILE *jf = NULL;
    if (json_path && !(jf = fopen(json_path, "w"))) {
        fprintf(stderr, "ncclscope-bench: %s: %s\n", json_path, strerror(errno));
        return 3;
    }
    if (jf)
        fprintf(jf, "[");
    int first = 1, failures = 0;
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    printf("ncclscope-bench %s on %s, %ld CPUs online, TSC %.3f GHz, fenced-read overhead %.1f ns, "
           "events=%s, %.2f s per %s\n",
           NSC_VERSION, host, sysconf(_SC_NPROCESSORS_ONLN), 1.0 / cycle_ns_per_tick(),
           (double)cycle_fence_overhead() * cycle_ns_per_tick(), events, seconds,
           knee > 0 ? "probe" : "configuration");
    if (knee > 0)
        printf("knee search: %.1f s per (plugin, mix, threads), starting at %.3g callbacks/s per writer\n",
               knee, knee_start);

    if (pattern) {
        struct pattern_config pc = {.version = version, .app_threads = threads_given ? max_threads : 1,
                                    .seconds = seconds, .op_rate = op_rate, .evict_kib = evict_kib,
                                    .proxy_ops = proxy_ops, .per_call = per_call,
                                    .keep_traces = keep};
        failures += run_pattern(plugins, nplugins, &pc, rounds, jf, &first);
        nmixes = 0; /* no mix runs after the pattern */
    }
    int nworkloads = replay_dir ? nscripts : nmixes;
    for (int w = 0; w < nworkloads; w++) {
        const char *wname = replay_dir ? scripts[w].name : mixes[w];
        int header = 0;
        int ntc = replay_dir ? 1 : ncounts;
        for (int c = 0; c < ntc; c++)
            for (int p = 0; p < nplugins; p++) {
                struct bench_config cfg = {
                    .plugin = plugins[p], .version = version, .threads = counts[c],
                    .seconds = seconds, .rate = rate, .rate_callbacks = rate_callbacks,
                    .keep_traces = keep, .cold_kib = cold_kib, .mix = replay_dir ? NULL : mixes[w],
                    .script = replay_dir ? &scripts[w].s : NULL};
                char err[1024];
                if (knee > 0) {
                    static struct knee_result kr;
                    int krc = bench_knee(&cfg, knee, knee_start, &kr, err, sizeof(err));
                    if (krc != 0) {
                        fprintf(stderr, "ncclscope-bench: %s, %s, %d threads: %s\n", plugins[p],
                                wname, counts[c], err);
                        failures++;
                    }
                    if (kr.nprobes == 0)
                        continue;
                    if (!header) {
                        print_knee_header(wname, seconds);
                        header = 1;
                    }
                    print_knee(&cfg, &kr);
                    fflush(stdout);
                    if (jf)
                        json_knee(jf, &first, &cfg, wname, &kr);
                    continue;
                }
                struct bench_result res;
                if (bench_run(&cfg, &res, err, sizeof(err)) != 0) {
                    fprintf(stderr, "ncclscope-bench: %s, %s, %d threads: %s\n", plugins[p], wname,
                            counts[c], err);
                    failures++;
                    continue;
                }
                if (!header) {
                    print_header(wname, &res);
                    header = 1;
                }
                print_rows(&cfg, &res);
                fflush(stdout);
                if (jf)
                    json_rows(jf, &first, &cfg, wname, &res);
            }
    }
    if (jf) {
        fprintf(jf, "\n]\n");
        fclose(jf);
    }
    for (int i = 0; i < nscripts; i++)
        nsc_script_free(&scripts[i].s);
    return failures ? 3 : 0;
}
