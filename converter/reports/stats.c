// SPDX-License-Identifier: Apache-2.0
/* stats.c - `ncclscope stats`: the tables of stats_model.h as text or
 * JSON, or --by-caller's table from the same pass. */
#include "stats.h"

#include <string.h>

#include "json_writer.h"
#include "python_callers.h"
#include "result.h"


void nsc_stats_size_label(char *buf, size_t n, unsigned bucket) {
    uint64_t v = 1ull << bucket;
    if (v >= (1ull << 30))
        snprintf(buf, n, "%lluG", (unsigned long long)(v >> 30));
    else if (v >= (1ull << 20))
        snprintf(buf, n, "%lluM", (unsigned long long)(v >> 20));
    else if (v >= 1024)
        snprintf(buf, n, "%lluK", (unsigned long long)(v >> 10));
    else
        snprintf(buf, n, "%lluB", (unsigned long long)v);
}


/* , "key": value in us, or null when there is none (v < 0). */
static void json_us(FILE *f, const char *key, double v) {
    if (v < 0)
        fprintf(f, ", \"%s\": null", key);
    else
        fprintf(f, ", \"%s\": %.3f", key, v / 1e3);
}

/* , "key": GB/s, or null when there is none (v < 0). */
static void json_bw(FILE *f, const char *key, double v) {
    if (v < 0)
        fprintf(f, ", \"%s\": null", key);
    else
        fprintf(f, ", \"%s\": %.3f", key, v);
}

static void print_losses_text(FILE *f, const struct nsc_stats_lost *l) {
    fprintf(f, "lost by the plugin: %llu records (%llu dropped, %llu to write errors, %llu at exit)",
            (unsigned long long)l->records, (unsigned long long)l->dropped,
            (unsigned long long)l->write, (unsigned long long)l->exit);
    if (l->failed_writes || l->write_errno) {
        const char *en = nsc_errno_name(l->write_errno);
        fprintf(f, "; %llu failed writes", (unsigned long long)l->failed_writes);
        if (l->write_errno)
            fprintf(f, ", the last: %s (%s)", en ? en : "errno", strerror(l->write_errno));
    }
    fprintf(f, "\nnames lost: %llu strings past the plugin's table (%llu events show \"?\"), %llu "
               "comm descriptions not kept\n",
            (unsigned long long)l->string_overflow, (unsigned long long)l->unnamed,
            (unsigned long long)l->comm_overflow);
    if (l->memory_budget)
        fprintf(f, "record memory: peak %.1f MiB of a %.1f MiB budget (the file with the highest)\n",
                (double)l->memory_peak / 1048576.0, (double)l->memory_budget / 1048576.0);
}

static void print_losses_json(FILE *f, const struct nsc_stats_lost *l) {
    const char *en = l->write_errno ? nsc_errno_name(l->write_errno) : NULL;
    fprintf(f,
            "\"lost\": {\"records\": %llu, \"dropped\": %llu, \"write_records\": %llu, "
            "\"exit_records\": %llu, \"events_dropped\": %llu, \"failed_writes\": %llu, "
            "\"write_errno\": %d, \"write_error\": ",
            (unsigned long long)l->records, (unsigned long long)l->dropped,
            (unsigned long long)l->write, (unsigned long long)l->exit,
            (unsigned long long)l->events, (unsigned long long)l->failed_writes, l->write_errno);
    if (en)
        jw_print_string(f, en);
    else
        fputs("null", f);
    fprintf(f,
            ", \"string_overflow\": %llu, \"unnamed_events\": %llu, \"comm_overflow\": %llu, "
            "\"memory_peak_bytes\": %llu, \"memory_budget_bytes\": %llu}, ",
            (unsigned long long)l->string_overflow, (unsigned long long)l->unnamed,
            (unsigned long long)l->comm_overflow, (unsigned long long)l->memory_peak,
            (unsigned long long)l->memory_budget);
}

/* Which clock each time of --json is (the keys say it, this says how). */
static const char clocks_json[] =
    "\"clocks\": {\"gpu\": \"gpu_*_us: GPU time, KernelCh %globaltimer, first GPU start to last "
    "GPU end across channels\", \"wait\": \"wait_*_us: GPU start to the last rank's GPU start "
    "(GPU times mapped to the host clock and aligned across hosts)\", \"transfer\": "
    "\"transfer_*_us: the last rank's GPU start to this rank's GPU end\", \"queue\": "
    "\"queue_*_us: enqueue on the host to GPU start\", \"host\": \"p50_us, p99_us, max_us: "
    "enqueue to completion on the host (last KernelCh/ProxyOp stop), of the operations with a "
    "completion; null when none has one (enqueue only)\", \"stragglers\": \"lag_us: enqueue "
    "(host) of the last rank minus the first's\", \"gpu_stragglers\": \"wait_us: GPU starts, "
    "the last rank's minus the first's, summed\"}, ";

/* The hint where no completion was recorded: what would give one. */
static void no_completion_hint(FILE *f, uint64_t ops) {
    fprintf(f, "\nno completion recorded (enqueue only) for %llu rank-operation(s): the trace has\n"
               "no KernelCh (nor ProxyOp, which only network transfers have), so there is no\n"
               "latency, share or bandwidth for them, only their enqueue. Record KernelCh for\n"
               "GPU time: NCCLSCOPE_EVENTS=default,KernelCh (docs/config.md).\n",
            (unsigned long long)ops);
}

static void print(const struct nsc_stats_opts *o, const struct nsc_stats_result *a) {
    size_t nrows = a->nrows, top = a->nby_enqueue, nlate = a->nlate;
    const struct nsc_stats_coll *st = a->by_enqueue;
    const struct nsc_stats_late *late = a->late;
    FILE *f = o->out;
    if (o->json) {
        fprintf(f, "{\"files\": %d, \"operations\": %llu, \"skipped_first\": %llu, "
                   "\"outside_window\": %llu, ",
                o->nfiles, (unsigned long long)a->ops, (unsigned long long)a->skipped,
                (unsigned long long)a->outside);
        print_losses_json(f, &a->lost);
        int sampled = a->sampled_ops < a->kernel_ops; /* KernelCh for some operations only */
        if (sampled)
            fprintf(f,
                    "\"kernel_sampled\": {\"sampled\": %llu, \"operations\": %llu, \"note\": "
                    "\"KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): GPU-time percentiles, wait, "
                    "transfer and bandwidths of a row come from its sampled rank-operations "
                    "(gpu_ops of rank_ops)\"}, ",
                    (unsigned long long)a->sampled_ops, (unsigned long long)a->kernel_ops);
        fputs(clocks_json, f);
        fprintf(f, "\"rows\": [");
        for (size_t i = 0; i < nrows; i++) {
            const struct nsc_stats_row *r = &a->rows[i];
            fprintf(f, "%s\n  {\"comm\": \"%016llx\", \"nranks\": %d, \"op\": ", i ? "," : "",
                    (unsigned long long)r->comm_id, r->nranks);
            jw_print_string(f, r->func);
            fprintf(f, ", \"p2p\": %s, \"dtype\": ", r->is_p2p ? "true" : "false");
            jw_print_string(f, r->dtype);
            fprintf(f,
                    ", \"size_max_bytes\": %llu, \"avg_bytes\": %.0f, "
                    "\"count\": %llu, \"rank_ops\": %llu, \"enqueue_only\": %llu",
                    (unsigned long long)(1ull << r->bucket),
                    r->avg_bytes, (unsigned long long)r->count, (unsigned long long)r->rank_ops,
                    (unsigned long long)r->enqueue_only);
            json_us(f, "p50_us", r->host_p50);
            json_us(f, "p99_us", r->host_p99);
            json_us(f, "max_us", r->host_max);
            json_bw(f, "algbw_GBps", r->algbw);
            json_bw(f, "busbw_GBps", r->busbw);
            fputs(", \"bw_from\": ", f);
            if (r->bw_from)
                fprintf(f, "\"%s\"", r->bw_from);
            else
                fputs("null", f);
            fprintf(f, ", \"timing\": \"%s\", \"gpu_ops\": %llu", r->timing,
                    (unsigned long long)r->gpu_ops);
            if (sampled)
                fprintf(f, ", \"sampled\": %llu", (unsigned long long)r->sampled);
            json_us(f, "gpu_p50_us", r->gpu_p50);
            json_us(f, "gpu_p99_us", r->gpu_p99);
            json_us(f, "gpu_max_us", r->gpu_max);
            fprintf(f, ", \"split_ops\": %llu", (unsigned long long)r->split_ops);
            json_us(f, "wait_p50_us", r->wait_p50);
            json_us(f, "wait_p99_us", r->wait_p99);
            json_us(f, "transfer_p50_us", r->xfer_p50);
            json_us(f, "transfer_p99_us", r->xfer_p99);
            json_us(f, "queue_p50_us", r->queue_p50);
            json_us(f, "queue_p99_us", r->queue_p99);
            json_bw(f, "host_algbw_GBps", r->host_algbw);
            json_bw(f, "host_busbw_GBps", r->host_busbw);
            fputc('}', f);
        }
        fprintf(f, "\n], \"stragglers\": [");
        for (size_t i = 0; i < top; i++) {
            fprintf(f, "%s\n  {\"comm\": \"%016llx\", \"seq\": %llu, \"op\": ", i ? "," : "",
                    (unsigned long long)st[i].comm_id, (unsigned long long)st[i].seq);
            jw_print_string(f, st[i].func);
            fprintf(f, ", \"ranks\": %u, \"last_rank\": %d, \"first_rank\": %d, \"lag_us\": %.3f}",
                    st[i].ranks, st[i].last_rank, st[i].first_rank,
                    (double)(st[i].last_ns - st[i].first_ns) / 1e3);
        }
        fprintf(f, "\n], \"gpu_stragglers\": [");
        for (size_t i = 0; i < nlate; i++) {
            const struct nsc_stats_late *l = &late[i];
            fprintf(f,
                    "%s\n  {\"comm\": \"%016llx\", \"rank\": %d, \"collectives\": %llu, "
                    "\"last\": %llu, \"wait_us\": %.3f, \"host_late\": %llu, \"gpu_late\": %llu}",
                    i ? "," : "", (unsigned long long)l->comm_id, l->rank,
                    (unsigned long long)l->colls, (unsigned long long)l->last,
                    (double)l->wait_ns / 1e3, (unsigned long long)l->host_late,
                    (unsigned long long)l->gpu_late);
        }
        fprintf(f, "\n]}\n");
    } else {
        fprintf(f, "%d file(s), %llu rank-operations", o->nfiles, (unsigned long long)a->ops);
        if (o->skip_first)
            fprintf(f, "; %llu left out as warm-up (the first %llu of each rank of a comm)",
                    (unsigned long long)a->skipped, (unsigned long long)o->skip_first);
        if (o->window)
            fprintf(f, "; %llu outside %g:%g s from the job's start",
                    (unsigned long long)a->outside, o->t_from, o->t_to);
        fputc('\n', f);
        print_losses_text(f, &a->lost);
        if (a->sampled_ops < a->kernel_ops)
            fprintf(f,
                    "KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): %llu of %llu rank-operations asked "
                    "for KernelCh (GPU time and a completion of their own); a row's GPU "
                    "percentiles, wait, transfer and bandwidths (clock gpu~) come from those "
                    "only\n",
                    (unsigned long long)a->sampled_ops, (unsigned long long)a->kernel_ops);
        fputc('\n', f);
        fprintf(f, "%-16s %5s %-14s %-12s %7s %8s %8s %-7s %10s %10s %10s %10s %10s %10s %10s "
                   "%9s %9s %-8s %s\n",
                "comm", "ranks", "op", "dtype", "size<=", "count", "rank-ops", "clock", "p50 us",
                "p99 us", "max us", "wait p50", "xfer p50", "queue p50", "host p50", "algbw",
                "busbw", "bw from", "");
        uint64_t enq_only_ops = 0;
        for (size_t i = 0; i < nrows; i++) {
            const struct nsc_stats_row *r = &a->rows[i];
            char sz[16], t[7][16], ab[16], bb[16];
            nsc_stats_size_label(sz, sizeof(sz), r->bucket);
            const double us[7] = {r->p50, r->p99, r->max, r->wait_p50, r->xfer_p50, r->queue_p50,
                                  r->host_p50};
            for (int c = 0; c < 7; c++)
                snprintf(t[c], sizeof(t[c]), us[c] < 0 ? "-" : "%.2f", us[c] / 1e3);
            snprintf(ab, sizeof(ab), r->algbw < 0 ? "-" : "%.2f", r->algbw);
            snprintf(bb, sizeof(bb), r->busbw < 0 ? "-" : "%.2f", r->busbw);
            if (!r->bw_from && !r->unsampled)
                enq_only_ops += r->rank_ops;
            fprintf(f,
                    "%016llx %5d %-14s %-12s %7s %8llu %8llu %-7s %10s %10s %10s %10s %10s %10s "
                    "%10s %9s %9s %-8s %s\n",
                    (unsigned long long)r->comm_id, r->nranks, r->func, r->dtype, sz,
                    (unsigned long long)r->count, (unsigned long long)r->rank_ops,
                    !r->bw_from ? "-" : r->host_only ? "host" : r->unsampled ? "gpu~"
                    : r->gpu_ops < r->rank_ops ? "gpu*" : "gpu",
                    t[0], t[1], t[2], t[3], t[4], t[5], t[6], ab, bb,
                    r->bw_from ? r->bw_from : "-", r->note);
        }
        fprintf(f, "\nclock gpu: p50/p99/max are GPU time (KernelCh %%globaltimer, first GPU start to\n"
                   "last GPU end across channels); gpu*: only some operations had KernelCh; host:\n"
                   "no KernelCh, p50/p99/max are enqueue to completion on the host (a ProxyOp's\n"
                   "stop); -: no completion recorded (enqueue only), no latency. wait p50: GPU\n"
                   "start to the last rank's GPU start, xfer p50: the last rank's GPU start to GPU\n"
                   "end (AllReduce, AllGather, ReduceScatter, AlltoAll whose every rank has GPU\n"
                   "times, on one aligned timeline). queue p50: enqueue to GPU start; host p50:\n"
                   "enqueue to completion. algbw/busbw in GB/s (nccl-tests' formulas) from the p50\n"
                   "of the time in `bw from`: transfer (no waiting for peers, as nccl-tests starts\n"
                   "all ranks together) where every rank-operation of the row has one, else GPU\n"
                   "time, else host time. count: distinct collectives (comm, op, seqNumber) in the\n"
                   "files given.\n");
        if (a->sampled_ops < a->kernel_ops)
            fputs("gpu~: KernelCh sampled, the row's GPU times are those of its sampled\n"
                  "rank-operations (the others have none of their own): a sample, not every\n"
                  "operation; bandwidths from transfer time where every sampled one has it.\n",
                  f);
        if (enq_only_ops)
            no_completion_hint(f, enq_only_ops);
        if (nlate) {
            fprintf(f, "\nstragglers by GPU start: per rank, how often its kernel started last in a\n"
                       "collective and how long the first rank waited for it; late on the host\n"
                       "(enqueued late) or on the GPU (enqueued on time, started late)\n");
            fprintf(f, "%-16s %5s %11s %8s %12s %9s %8s\n", "comm", "rank", "collectives", "last",
                    "wait us", "host-late", "gpu-late");
            for (size_t i = 0; i < nlate && i < (size_t)o->top; i++)
                fprintf(f, "%016llx %5d %11llu %8llu %12.2f %9llu %8llu\n",
                        (unsigned long long)late[i].comm_id, late[i].rank,
                        (unsigned long long)late[i].colls, (unsigned long long)late[i].last,
                        (double)late[i].wait_ns / 1e3, (unsigned long long)late[i].host_late,
                        (unsigned long long)late[i].gpu_late);
        }
        fprintf(f, "\nstragglers by enqueue: the %zu collectives whose last rank entered latest after\n"
                   "the first\n",
                top);
        fprintf(f, "%-16s %10s %-14s %5s %9s %10s %12s\n", "comm", "seq", "op", "ranks", "last rank",
                "first rank", "lag us");
        for (size_t i = 0; i < top; i++)
            fprintf(f, "%016llx %10llu %-14s %5u %9d %10d %12.2f\n",
                    (unsigned long long)st[i].comm_id, (unsigned long long)st[i].seq,
                    st[i].func, st[i].ranks, st[i].last_rank, st[i].first_rank,
                    (double)(st[i].last_ns - st[i].first_ns) / 1e3);
    }
}

static struct nsc_stats_input input_of(const struct nsc_stats_opts *o) {
    struct nsc_stats_input in = {.files = o->files, .nfiles = o->nfiles, .shift_ns = o->shift_ns,
                                 .hooks = o->hooks, .cmd = o->cmd, .jobs = o->jobs,
                                 .skip_first = o->skip_first, .window = o->window,
                                 .t_from = o->t_from, .t_to = o->t_to, .top = o->top};
    return in;
}

/* --by-caller: python_callers.h's table is the pass's tags */
static void callers_file(void *ud) { nsc_py_callers_file(ud); }

static void callers_record(void *ud, const struct nsc_decoder *d, uint32_t thread,
                           const struct nsc_rec *r) {
    nsc_py_callers_record(ud, d, thread, r);
}

static void *callers_op(void *ud, const struct nsc_op_done *op, uint64_t bytes) {
    return nsc_py_callers_op(ud, op, bytes);
}

int nsc_stats(const struct nsc_stats_opts *o) {
    struct nsc_stats_input in = input_of(o);
    if (o->by_caller) {
        struct nsc_py_callers *pc = nsc_py_callers_new();
        if (!pc) {
            fprintf(stderr, "ncclscope %s: out of memory\n", o->cmd ? o->cmd : "stats");
            return 3;
        }
        struct nsc_stats_tags tags = {callers_file, callers_record, callers_op,
                                      nsc_py_callers_split, pc};
        in.tags = &tags;
        int rc = nsc_stats_model_run(&in, NULL);
        if (rc != 3)
            nsc_py_callers_print(pc, o->out, o->json);
        nsc_py_callers_free(pc);
        return rc;
    }
    struct nsc_stats_result res;
    int rc = nsc_stats_model_run(&in, &res);
    if (rc == 3)
        return rc;
    print(o, &res);
    nsc_stats_result_free(&res);
    return rc;
}

int nsc_stats_collect(const struct nsc_stats_opts *o, struct nsc_stats_result *res) {
    struct nsc_stats_input in = input_of(o);
    in.waits = 1;
    return nsc_stats_model_run(&in, res);
}
