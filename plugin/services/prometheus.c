// SPDX-License-Identifier: Apache-2.0
/* prometheus.c - live metrics as a Prometheus text file
 * (<dir>/<host>-<pid>.prom, for node-exporter's textfile collector): a
 * copy of the tables taken under mu, formatted without it, written to a
 * temporary name and renamed. The ops thread. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "intern.h"
#include "live_metrics_int.h"
#include "log.h"
#include "op_rules.h"
#include "thread_state.h"
#include "version.h"

/* ---- the file ---- */

/* Label values: printable ASCII, with \ " and newline escaped. */
static void put_label(FILE *f, const char *v) {
    for (; *v; v++) {
        unsigned char ch = (unsigned char)*v;
        if (ch == '\\' || ch == '"')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch >= 0x20 && ch < 0x7f)
            fputc(ch, f);
        else
            fputc('_', f);
    }
}

static void comm_labels(FILE *f, const struct comm *c) {
    fprintf(f, "comm=\"%016" PRIx64 "\",rank=\"%d\"", c->described ? c->info.comm_id : 0,
            c->described ? c->info.rank : -1);
}

static void series_labels(FILE *f, const struct comm *c, const struct series *s, const char *op) {
    comm_labels(f, c);
    fputs(",op=\"", f);
    put_label(f, op);
    fprintf(f, "\",size=\"%s\"", size_name[s->size]);
}

struct snapshot {
    struct series *series;
    uint32_t nseries;
    struct comm *comms;
    uint32_t ncomms;
    uint64_t overflow, done_total;
};

/* A finalized comm with nothing in flight that files have shown so far for
 * retain_ns: forgotten now. */
static int comm_expired(const struct nsc_live *m, const struct comm *c) {
    return c->finalized && !c->in_flight && c->gone_ns && m->now_ns - c->gone_ns >= m->retain_ns;
}

/* Copies what the file shows; forgets finalized comms (and their series)
 * once shown for retain_ns. Under mu. */
static int take_snapshot(struct nsc_live *m, struct snapshot *sn) {
    sn->series = malloc((m->nseries + 1) * sizeof(*sn->series));
    sn->comms = malloc((m->ncomms + 1) * sizeof(*sn->comms));
    if (!sn->series || !sn->comms)
        return -1;
    sn->nseries = sn->ncomms = 0;
    for (uint32_t i = 0; i < SERIES_CAP; i++)
        if (m->series[i].serial)
            sn->series[sn->nseries++] = m->series[i];
    int dead = 0;
    for (uint32_t i = 0; i < COMMS_CAP; i++)
        if (m->comms[i].serial) {
            struct comm *c = &m->comms[i];
            if (c->finalized && !c->in_flight && !c->gone_ns) /* this file is the first */
                c->gone_ns = m->now_ns ? m->now_ns : 1;
            sn->comms[sn->ncomms++] = *c;
            dead += comm_expired(m, c);
        }
    sn->overflow = m->overflow;
    sn->done_total = m->done_total;
    if (dead) /* both tables without the expired comms */
        live_rebuild(m, sn->comms, sn->ncomms, comm_expired);
    m->compacted = 0;
    return 0;
}

static const struct comm *find_comm(const struct snapshot *sn, uint32_t serial) {
    for (uint32_t i = 0; i < sn->ncomms; i++)
        if (sn->comms[i].serial == serial)
            return &sn->comms[i];
    return NULL;
}

static void write_hist(FILE *f, const struct comm *c, const struct series *s, const char *op,
                       int t) {
    const struct lat *l = &s->lat[t];
    uint64_t cum = 0;
    for (unsigned i = 0; i <= NLAT; i++) {
        cum += l->b[i];
        fputs("ncclscope_latency_seconds_bucket{", f);
        series_labels(f, c, s, op);
        fprintf(f, ",timing=\"%s\",le=\"", timing_name[t]);
        if (i < NLAT)
            fprintf(f, "%g", lat_le[i]);
        else
            fputs("+Inf", f);
        fprintf(f, "\"} %" PRIu64 "\n", cum);
    }
    fputs("ncclscope_latency_seconds_sum{", f);
    series_labels(f, c, s, op);
    fprintf(f, ",timing=\"%s\"} %.9g\n", timing_name[t], l->sum);
    fputs("ncclscope_latency_seconds_count{", f);
    series_labels(f, c, s, op);
    fprintf(f, ",timing=\"%s\"} %" PRIu64 "\n", timing_name[t], l->count);
}

static _Atomic(void (*)(FILE *, int)) live_extra;

void nsc_live_set_extra(void (*fn)(FILE *f, int pid)) {
    atomic_store_explicit(&live_extra, fn, memory_order_release);
}

static void format(FILE *f, struct nsc_live *m, const struct snapshot *sn) {
    fprintf(f, "# HELP ncclscope_operations_total NCCL operations started (Coll, P2p, CeColl), per communicator, operation and per-rank message size.\n"
               "# TYPE ncclscope_operations_total counter\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!c || !c->described)
            continue; /* labels come with the comm's description, at the next chunk */
        fputs("ncclscope_operations_total{", f);
        series_labels(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?");
        fprintf(f, "} %" PRIu64 "\n", s->ops);
    }
    fprintf(f, "# HELP ncclscope_bytes_total Bytes of those operations (count x datatype size, per rank).\n"
               "# TYPE ncclscope_bytes_total counter\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!c || !c->described)
            continue;
        fputs("ncclscope_bytes_total{", f);
        series_labels(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?");
        fprintf(f, "} %" PRIu64 "\n", s->bytes);
    }
    fprintf(f, "# HELP ncclscope_latency_seconds Completed operations' latency: GPU time from KernelCh (timing=\"gpu\"), else, for operations with ProxyOps, enqueue to their last ProxyOp's stop (timing=\"host\"); an operation with neither (not sampled, no network) has none.\n"
               "# TYPE ncclscope_latency_seconds histogram\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!c || !c->described)
            continue;
        for (int t = 0; t < 2; t++)
            if (s->lat[t].count)
                write_hist(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?", t);
    }
    fprintf(f, "# HELP ncclscope_gpu_seconds_total GPU time (first KernelCh start to last KernelChStop) of the operations completed with timing=\"gpu\".\n"
               "# TYPE ncclscope_gpu_seconds_total counter\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!s->lat[T_GPU].count || !c || !c->described)
            continue;
        fputs("ncclscope_gpu_seconds_total{", f);
        series_labels(f, c, s, nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?");
        fprintf(f, "} %.9g\n", s->lat[T_GPU].sum);
    }
    fprintf(f, "# HELP ncclscope_gpu_bus_bytes_total Bus bytes (nccl-tests' size and bus factor) of the same operations: rate(ncclscope_gpu_bus_bytes_total[w]) / rate(ncclscope_gpu_seconds_total[w]) is their bus bandwidth.\n"
               "# TYPE ncclscope_gpu_bus_bytes_total counter\n");
    for (uint32_t i = 0; i < sn->nseries; i++) {
        const struct series *s = &sn->series[i];
        const struct comm *c = find_comm(sn, s->serial);
        if (!s->lat[T_GPU].count || !c || !c->described)
            continue;
        const char *op = nsc_intern_text(s->func) ? nsc_intern_text(s->func) : "?";
        fputs("ncclscope_gpu_bus_bytes_total{", f);
        series_labels(f, c, s, op);
        fprintf(f, "} %.17g\n", nsc_op_bus_bytes(op, s->p2p, c->info.nranks, s->gpu_bytes));
    }
    fprintf(f, "# HELP ncclscope_operations_in_flight Operations started and not completed.\n"
               "# TYPE ncclscope_operations_in_flight gauge\n");
    for (uint32_t i = 0; i < sn->ncomms; i++) {
        if (!sn->comms[i].described)
            continue;
        fputs("ncclscope_operations_in_flight{", f);
        comm_labels(f, &sn->comms[i]);
        fprintf(f, "} %" PRIu64 "\n", sn->comms[i].in_flight);
    }
    for (int done = 0; done < 2; done++) {
        const char *name = done ? "ncclscope_last_completed_seq" : "ncclscope_last_enqueued_seq";
        fprintf(f, "# HELP %s The highest seqNumber of the communicator's collectives of this operation %s (NCCL numbers each operation's collectives on its own).\n"
                   "# TYPE %s gauge\n",
                name, done ? "completed" : "enqueued", name);
        for (uint32_t i = 0; i < sn->ncomms; i++) {
            const struct comm *c = &sn->comms[i];
            if (!c->described)
                continue;
            for (unsigned k = 0; k < NFSEQ && c->fseq[k].func; k++) {
                const struct fseq *q = &c->fseq[k];
                if (done && !q->any_done)
                    continue;
                const char *op = nsc_intern_text(q->func) ? nsc_intern_text(q->func) : "?";
                fprintf(f, "%s{", name);
                comm_labels(f, c);
                fputs(",op=\"", f);
                put_label(f, op);
                fprintf(f, "\"} %" PRIu64 "\n", done ? q->done : q->enq);
            }
        }
    }
    fprintf(f, "# HELP ncclscope_last_completion_timestamp_seconds Unix time of the communicator's last completed operation (of its first operation's start while none completed). It stays what it was in the file of a process that died.\n"
               "# TYPE ncclscope_last_completion_timestamp_seconds gauge\n");
    for (uint32_t i = 0; i < sn->ncomms; i++) {
        const struct comm *c = &sn->comms[i];
        uint64_t t = c->last_done_ticks ? c->last_done_unix_ns : c->first_unix_ns;
        if (!t || !c->described)
            continue;
        fputs("ncclscope_last_completion_timestamp_seconds{", f);
        comm_labels(f, c);
        fprintf(f, "} %.3f\n", (double)t * 1e-9);
    }
    uint64_t drops = atomic_load_explicit(&nsc_thread_sentinel()->drops_ring, memory_order_relaxed);
    uint64_t records = 0;
    uint32_t nt = nsc_thread_count();
    for (uint32_t i = 0; i < nt; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        drops += atomic_load_explicit(&t->drops_ring, memory_order_relaxed);
        records += atomic_load_explicit(&t->ring.head, memory_order_relaxed);
    }
    /* Per process, labelled with its pid: the processes of a host share the
     * directory and node-exporter serves all their files as one scrape,
     * where series of the same name and labels would collide. */
    fprintf(f, "# HELP ncclscope_build_info The ncclscope writing this file (value 1).\n"
               "# TYPE ncclscope_build_info gauge\n"
               "ncclscope_build_info{pid=\"%d\",version=\"", m->pid);
    put_label(f, NSC_VERSION);
    fputs("\"} 1\n", f);
    fprintf(f, "# HELP ncclscope_records_total Records written into the rings.\n"
               "# TYPE ncclscope_records_total counter\n"
               "ncclscope_records_total{pid=\"%d\"} %" PRIu64 "\n"
               "# HELP ncclscope_dropped_records_total Records dropped: ring or record memory full, or a thread over NCCLSCOPE_MAX_THREADS.\n"
               "# TYPE ncclscope_dropped_records_total counter\n"
               "ncclscope_dropped_records_total{pid=\"%d\"} %" PRIu64 "\n"
               "# HELP ncclscope_recording 1 while ncclscope records, 0 after a stop command.\n"
               "# TYPE ncclscope_recording gauge\n"
               "ncclscope_recording{pid=\"%d\"} %d\n"
               "# HELP ncclscope_metrics_overflow_total Operations or series the metrics could not follow (a bound was reached).\n"
               "# TYPE ncclscope_metrics_overflow_total counter\n"
               "ncclscope_metrics_overflow_total{pid=\"%d\"} %" PRIu64 "\n",
            m->pid, records, m->pid, drops, m->pid, atomic_load_explicit(&live_recorded_mask, memory_order_relaxed) != 0, m->pid, sn->overflow);
    void (*extra)(FILE *, int) = atomic_load_explicit(&live_extra, memory_order_acquire);
    if (extra)
        extra(f, m->pid); /* hook: the hang suspect level's series */
}

/* The directory, as mkdir -p (0755: node-exporter runs as another user). */
static void make_dirs(const char *file) {
    char tmp[1500];
    snprintf(tmp, sizeof(tmp), "%s", file);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
}

int nsc_live_write(int final) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (!m)
        return 0;
    struct snapshot sn;
    memset(&sn, 0, sizeof(sn));
    pthread_mutex_lock(&m->mu);
    live_now(m);
    /* Host-timed ops whose grace ended while nothing was drained; at the
     * end, when everything was drained, every op that stopped. */
    live_settle(m, final ? 0 : GRACE_NS);
    int rc = take_snapshot(m, &sn);
    pthread_mutex_unlock(&m->mu);
    int err = ENOMEM;
    if (rc == 0) {
        /* A fresh file of our own (mkostemp: O_CREAT | O_EXCL, mode 0600),
         * never a name someone could have planted a link at: the directory
         * is often writable by others (node-exporter's), and a symlink at a
         * fixed temporary name made a job running as root truncate and
         * overwrite its target at every start. */
        char tmp[sizeof(m->tmp)];
        snprintf(tmp, sizeof(tmp), "%s", m->tmp);
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
            make_dirs(m->tmp);
            snprintf(tmp, sizeof(tmp), "%s", m->tmp);
            fd = mkostemp(tmp, O_CLOEXEC);
        }
        /* 0644 whatever the job's umask: node-exporter runs as another user */
        if (fd >= 0 && fchmod(fd, 0644) != 0) {
            err = errno;
            close(fd);
            unlink(tmp);
            fd = -1;
            errno = err;
        }
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            err = errno;
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
            rc = -1;
        } else {
            format(f, m, &sn);
            int bad = ferror(f);
            if (fclose(f) != 0 || bad) {
                err = errno ? errno : EIO;
                rc = -1;
            } else if (rename(tmp, m->path) != 0) { /* replaces a link, never follows it */
                err = errno;
                rc = -1;
            }
            if (rc != 0)
                unlink(tmp);
        }
    }
    free(sn.series);
    free(sn.comms);
    if (rc != 0 && !m->failing)
        nsc_log_warn("ncclscope: cannot write the metrics file %s: %s", m->path, strerror(err));
    else if (rc == 0 && m->failing)
        nsc_log_info("ncclscope: writing the metrics file %s works again", m->path);
    m->failing = rc != 0;
    return rc;
}

void nsc_live_remove(void) {
    struct nsc_live *m = atomic_load_explicit(&nsc_live_on, memory_order_relaxed);
    if (m)
        unlink(m->path);
}

