// SPDX-License-Identifier: Apache-2.0
/*
 * job.c - `ncclscope convert`: one pass per file, its records fanned out to
 * the model (events, operations, Python calls) and from there to the
 * timeline, which writes to the sink (docs/converter.md, "Pipeline").
 *
 * Before that pass, two short ones: the session block of every file (its
 * pid and host, for parents across processes; the job's start, for --time)
 * and, for files with KernelCh, the GPU clock scan (model/gpu_clock.h: the
 * offset must be known before the first GPU slice is placed).
 *
 * With -j N (JSON output, no --split), N files are laid out at once, each
 * by its own timeline into a spool (sinks/spool.h: its JSON events encoded,
 * in a temporary file), and written in file order through the run's
 * timeline, which resolves the collective chains against the files before:
 * the bytes of -j 1.
 */
#include "convert.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_track.h"
#include "decoded.h"
#include "event_types.h"
#include "events.h"
#include "gpu_clock.h"
#include "parallel.h"
#include "python_view.h"
#include "result.h"
#include "sink.h"
#include "spool.h"
#include "timeline.h"
#include "trace_decode.h"

/* What one file's pass adds to the run. */
struct file_res {
    struct nsc_convert_result res;
    uint64_t orphans_by_type[16];
    /* -j: the file laid out apart (spool.h) and its messages, written in
     * file order */
    FILE *spool;
    struct nsc_timeline_totals tot;
    char *msg;
    size_t msglen;
    int failed;
    uint64_t last_ns;             /* its last record's time, on the merged timeline */
};

/* One file's pass: the model's state and where it goes. */
struct file_pass {
    struct job *j;
    int index;
    const char *path;
    int64_t shift_ns;
    struct nsc_decoder dec;
    struct nsc_events ev;
    struct nsc_coll_track *track; /* operations: enqueue to completion */
    struct nsc_pyview *py;        /* Python slices; made at the first PY record */
    uint64_t last_ns;
    struct nsc_timeline *tl;      /* the run's, or the file's own (-j) */
    struct nsc_sink *sink;
    FILE *msg;                    /* stderr, or the file's messages (-j) */
    struct file_res *r;
    int progress;                 /* progress lines (one file at a time only) */
};

struct job {
    const struct nsc_convert_opts *o;
    struct nsc_timeline *tl;
    struct nsc_sink *sink;
    struct nsc_timeline_opts to;
    struct nsc_file_meta *meta;   /* per file, for the run's metadata */
    uint32_t *masks;
    struct file_res *fres;        /* -j: per file */
    struct nsc_convert_result res;
    uint64_t orphans_by_type[16];
    uint64_t records_seen;
    double progress_t;
    uint64_t last_ns;             /* the job's last record (0: none) */
};

static void say_sink_error(struct nsc_sink *s, FILE *out) {
    const char *e = nsc_sink_error(s);
    if (e)
        fprintf(out, "ncclscope convert: %s\n", e);
}

static void on_op_done(void *ud, const struct nsc_op_done *op) {
    struct file_pass *p = ud;
    nsc_timeline_op(p->tl, op);
    say_sink_error(p->sink, p->msg);
}

static void on_py_slice(void *ud, const struct nsc_py_slice *s) {
    struct file_pass *p = ud;
    nsc_timeline_py_slice(p->tl, s);
    say_sink_error(p->sink, p->msg);
}

/* Progress on stderr for long conversions: at most every 2 s. */
static void progress(struct job *j, const struct file_pass *p) {
    if (!p->progress || (++j->records_seen & 0xfffff) != 0 || j->o->quiet)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (!j->progress_t)
        j->progress_t = now;
    else if (now - j->progress_t >= 2.0) {
        j->progress_t = now;
        fprintf(stderr, "ncclscope convert: file %d/%d, %.1f M records read, %.0f MB written\n",
                p->index + 1, j->o->nfiles, (double)j->records_seen / 1e6,
                (double)nsc_sink_bytes(j->sink) / 1e6);
    }
}

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    struct file_pass *p = ud;
    progress(p->j, p);
    uint64_t ns = nsc_shift_ns(nsc_decoder_mono_ns(d, r->h.ticks), p->shift_ns);
    if (ns > p->last_ns && r->h.kind != NSC_REC_THREAD)
        p->last_ns = ns;
    /* The SESSION block came first, so the tracker knows the event mask. */
    if (!p->track)
        p->track = nsc_track_new(d, p->shift_ns, on_op_done, p);
    if (p->track)
        nsc_track_record(p->track, thread, r, ext);
    if (r->h.kind == NSC_REC_PY && !p->py)
        p->py = nsc_pyview_new(on_py_slice, p);
    if (p->py)
        nsc_pyview_record(p->py, d, thread, r, ns);
    struct nsc_event *e;
    switch (r->h.kind) {
    case NSC_REC_START:
        if ((e = nsc_events_start(&p->ev, thread, r, ext, ns))) {
            nsc_timeline_started(p->tl, e);
            if (e->has_stop)
                nsc_timeline_event(p->tl, e, 0, 0);
        }
        break;
    case NSC_REC_STOP:
        if ((e = nsc_events_stop(&p->ev, thread, r, ns)))
            nsc_timeline_event(p->tl, e, 0, 0);
        break;
    case NSC_REC_STATE:
        nsc_events_state(&p->ev, r, ns);
        break;
    case NSC_REC_COMM_INIT:
        nsc_timeline_marker(p->tl, thread, r->h.aux, ns, "ncclscope: comm init");
        break;
    case NSC_REC_COMM_FINALIZE:
        nsc_timeline_marker(p->tl, thread, r->h.aux, ns, "ncclscope: comm finalize");
        break;
    case NSC_REC_MARK: { /* a user's mark (control API): an instant named by its text */
        const char *text = nsc_decoder_str(d, r->h.aux);
        uint32_t serial = nsc_decoder_comm(d, 1) ? 1 : 0; /* drawn in the first comm's process */
        nsc_timeline_marker(p->tl, thread, serial, ns, text ? text : "mark");
        break;
    }
    default:
        break;
    }
    say_sink_error(p->sink, p->msg);
}

static void on_comm(void *ud, struct nsc_decoder *d, const struct nsc_comm_info *ci) {
    (void)d;
    struct file_pass *p = ud;
    nsc_timeline_comm(p->tl, ci->serial);
}

static void on_stats(void *ud, struct nsc_decoder *d, const struct nsc_stats_header *h,
                     const struct nsc_thread_stats *t) {
    (void)d;
    struct file_pass *p = ud;
    struct nsc_file_meta *m = &p->j->meta[p->index];
    free((void *)m->tstats);
    struct nsc_thread_stats *c = malloc((h->nthreads + 1) * sizeof(*t));
    if (c)
        memcpy(c, t, h->nthreads * sizeof(*t));
    m->tstats = c;
    m->ntstats = c ? h->nthreads : 0;
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct file_pass *p = ud;
    p->r->res.damaged++;
    fprintf(p->msg, "ncclscope convert: %s\n", msg);
}

/* On stderr, what a file lost beyond ring drops (those are in the summary
 * line): nothing lost goes unsaid. */
static void losses_warning(FILE *out, const char *path, const struct nsc_decoder *d) {
    const struct nsc_losses *l = nsc_dec_losses(d);
    const struct nsc_stats_header *h = nsc_dec_stats(d);
    uint64_t unnamed = nsc_dec_unnamed(d);
    if (l->write || h->write_errors) {
        const char *en = nsc_errno_name(h->write_errno);
        char last[160] = ", writing resumed after them";
        if (h->write_errno)
            snprintf(last, sizeof(last), ", the last: %s (%s)", en ? en : "errno",
                     strerror(h->write_errno));
        fprintf(out,
                "ncclscope convert: %s: WARNING: %llu records lost to write errors (%u failed "
                "writes%s)\n",
                path, (unsigned long long)l->write, h->write_errors, last);
    }
    if (l->exit)
        fprintf(out,
                "ncclscope convert: %s: WARNING: %llu records were still in memory when the "
                "process stopped waiting for the writer at finalize/exit; they are not in the file\n",
                path, (unsigned long long)l->exit);
    if (h->string_overflow || unnamed)
        fprintf(out,
                "ncclscope convert: %s: WARNING: %llu strings past the plugin's table; %llu "
                "events show \"?\" for a name\n",
                path, (unsigned long long)h->string_overflow,
                (unsigned long long)unnamed);
    if (h->comm_overflow)
        fprintf(out,
                "ncclscope convert: %s: WARNING: %llu comm descriptions were not kept; their "
                "events have no rank or commHash\n",
                path, (unsigned long long)h->comm_overflow);
}

/* Said with -v: each comm's GPU clock mapping. */
static void gpu_clocks_say(const struct job *j, const struct nsc_file_meta *m, FILE *out) {
    const struct nsc_convert_opts *o = j->o;
    if (o->quiet || !o->verbose || m->replayed)
        return;
    for (uint32_t k = 0; k < m->ngpu; k++)
        if (m->gpu[k].have)
            fprintf(out,
                    "ncclscope convert: %s comm #%u: host = GPU %%globaltimer %+.6f s "
                    "(min over %llu KernelCh of host stop - GPU end; median "
                    "notice delay %.2f us; %llu impossible intervals)\n",
                    m->path, k, (double)m->gpu[k].offset_ns / 1e9,
                    (unsigned long long)m->gpu[k].kernels,
                    (double)m->gpu[k].median_delay_ns / 1e3,
                    (unsigned long long)m->gpu[k].impossible);
}

/* The short passes before the main one, per file (files several at a time:
 * -j): its SESSION block, and for files with KernelCh/KernelPhase the GPU
 * clock of each comm (the offset must be known before the first GPU slice
 * is placed). */
struct prepass {
    struct job *j;
    uint32_t *pids, *masks;
    char (*hosts)[64];
    uint64_t *t0;
};

static void prepass_file(void *ud, int i) {
    struct prepass *p = ud;
    struct nsc_file_meta *m = &p->j->meta[i];
    struct nsc_session s;
    p->t0[i] = UINT64_MAX;
    if (nsc_dec_read_session(m->path, &s) != 0)
        return;
    p->pids[i] = s.pid;
    p->masks[i] = s.event_mask;
    m->replayed = nsc_session_replayed(&s);
    p->t0[i] = nsc_shift_ns(s.start.mono_ns, m->shift_ns);
    memcpy(p->hosts[i], s.host, 63);
    struct nsc_gpu_clock *gpu = NULL;
    uint32_t ngpu = 0;
    if (s.event_mask & ((1u << NSC_ET_KERNEL_CH) | (1u << NSC_ET_KERNEL_PHASE)) &&
        nsc_gpu_clock_scan(m->path, m->shift_ns, &gpu, &ngpu) == 0) {
        m->gpu = gpu;
        m->ngpu = ngpu;
    }
}

/* One file, start to end, laid out by tl into sink; messages to msg. */
static void convert_file(struct job *j, int i, struct nsc_timeline *tl, struct nsc_sink *sink,
                         FILE *msg, struct file_res *r) {
    const struct nsc_convert_opts *o = j->o;
    struct nsc_file_meta *m = &j->meta[i];
    uint32_t mask = j->masks[i];
    struct file_pass p;
    memset(&p, 0, sizeof(p));
    p.j = j;
    p.index = i;
    p.path = o->files[i];
    p.shift_ns = m->shift_ns;
    p.tl = tl;
    p.sink = sink;
    p.msg = msg;
    p.r = r;
    p.progress = tl == j->tl;
    if (nsc_decoder_open(&p.dec, p.path) != NSC_OK) {
        fprintf(msg, "ncclscope convert: %s\n", nsc_decoder_error(&p.dec));
        r->res.damaged++;
        m->path = NULL; /* no line in the metadata */
        return;
    }
    gpu_clocks_say(j, m, msg);
    if (nsc_events_init(&p.ev) != 0) {
        fprintf(msg, "ncclscope convert: out of memory\n");
        r->res.damaged++;
        m->path = NULL;
        nsc_decoder_close(&p.dec);
        return;
    }
    if (nsc_timeline_file_begin(tl, i, p.path, &p.dec, &p.ev, m->gpu, m->ngpu) != 0)
        fprintf(msg, "ncclscope convert: %s: out of memory: its events have no tracks\n", p.path);
    struct nsc_decode_ops ops = {
        .record = on_record, .comm = on_comm, .stats = on_stats, .error = on_error};
    nsc_decoder_run(&p.dec, &ops, &p);
    nsc_track_finish(p.track);
    p.track = NULL;
    nsc_timeline_ops_done(tl);
    say_sink_error(sink, msg);
    struct nsc_timeline_counts n;
    memset(&n, 0, sizeof(n));
    /* Whatever is still open never stopped: shown up to the file's last
     * timestamp, marked unfinished (what a hung job looks like). The
     * messages below read the counts of the operations, final by now. */
    nsc_timeline_file_counts(tl, &n);
    if (!o->quiet && m->replayed && (mask & (1u << NSC_ET_KERNEL_CH)))
        /* Host and GPU times of a replay do not relate: no check of the
         * mapping (its GPU starts before their enqueue are no error). */
        fprintf(msg,
                "ncclscope convert: %s: replayed by ncclscope replay (host calls re-timed, GPU "
                "timers as recorded): GPU tracks are placed by the replay's clocks, not checked\n",
                p.path);
    else if (!o->quiet && o->verbose && (n.ops_async || n.gpu_before_enqueue || n.gpu_impossible))
        fprintf(msg,
                "ncclscope convert: %s: %llu operations drawn as async slices (more than %d "
                "in flight or completed out of order), "
                "%llu GPU starts mapped before their enqueue, %llu impossible GPU intervals "
                "flagged\n",
                p.path, (unsigned long long)n.ops_async, NSC_GPU_LANES,
                (unsigned long long)n.gpu_before_enqueue, (unsigned long long)n.gpu_impossible);
    for (struct nsc_event *e; (e = nsc_events_next_open(&p.ev));) {
        nsc_timeline_event(tl, e, 1, p.last_ns);
        say_sink_error(sink, msg);
    }
    nsc_timeline_gpu_flush(tl);
    if (p.py)
        nsc_pyview_finish(p.py, &p.dec, p.last_ns);
    nsc_timeline_file_end(tl, p.last_ns, &m->counts);
    say_sink_error(sink, msg);
    if (!o->quiet)
        losses_warning(msg, p.path, &p.dec);
    /* what the metadata needs of the file, which is closed now */
    struct nsc_decode_counts dc;
    nsc_decoder_counts(&p.dec, &dc);
    const struct nsc_losses *l = nsc_dec_losses(&p.dec);
    m->session = *nsc_dec_session(&p.dec);
    m->records = dc.records;
    m->dropped = l->dropped;
    m->losses = *l;
    m->stats = *nsc_dec_stats(&p.dec);
    m->unnamed_events = dc.unnamed_events;
    m->ended = nsc_decoder_ended(&p.dec);
    if (p.py) {
        m->have_py = 1;
        nsc_pyview_counts(p.py, &m->py_calls, &m->py_skipped, &m->py_unmatched);
    }
    if (!nsc_decoder_session(&p.dec))
        m->path = NULL; /* no line in the metadata */
    r->last_ns = p.last_ns;
    r->res.drops += m->dropped;
    r->res.lost += l->total;
    r->res.lost_write += l->write;
    r->res.lost_exit += l->exit;
    r->res.unnamed += dc.unnamed_events;
    r->res.orphan_records += p.ev.orphan_records;
    for (int k = 0; k < 16; k++)
        r->orphans_by_type[k] += p.ev.orphans_by_type[k];
    nsc_pyview_free(p.py);
    nsc_events_free(&p.ev);
    nsc_decoder_close(&p.dec);
}

static void add_res(struct job *j, const struct file_res *r) {
    if (r->last_ns > j->last_ns)
        j->last_ns = r->last_ns;
    j->res.damaged += r->res.damaged;
    j->res.drops += r->res.drops;
    j->res.lost += r->res.lost;
    j->res.lost_write += r->res.lost_write;
    j->res.lost_exit += r->res.lost_exit;
    j->res.unnamed += r->res.unnamed;
    j->res.orphan_records += r->res.orphan_records;
    for (int k = 0; k < 16; k++)
        j->orphans_by_type[k] += r->orphans_by_type[k];
}

/* -j: N files laid out at once, each by its own timeline into a spool (a
 * temporary file: memory stays per open file), then written in file order
 * through the run's timeline and sink, which resolves the collective
 * chains against the files before: the bytes of a sequential run. */
static void convert_one_apart(void *ud, int i) {
    struct job *j = ud;
    struct file_res *r = &j->fres[i];
    FILE *msg = open_memstream(&r->msg, &r->msglen);
    r->spool = tmpfile();
    struct nsc_sink *sink =
        r->spool ? nsc_sink_open_spool(r->spool, j->o->format == NSC_OUT_PERFETTO
                                                     ? NSC_SINK_PERFETTO
                                                     : NSC_SINK_JSON)
                 : NULL;
    struct nsc_timeline *tl = sink ? nsc_timeline_new(&j->to, sink) : NULL;
    if (!msg || !tl) {
        r->failed = 1;
    } else {
        convert_file(j, i, tl, sink, msg, r);
        nsc_timeline_totals(tl, &r->tot);
        if (nsc_sink_error(sink) || nsc_timeline_spool_failed(tl))
            r->failed = 1;
    }
    nsc_timeline_free(tl);
    if (sink && nsc_sink_close_spool(sink) != 0)
        r->failed = 1;
    if (r->spool && fflush(r->spool) != 0)
        r->failed = 1;
    nsc_spool_thread_done();
    if (msg)
        fclose(msg);
}

static void write_in_order(void *ud, int i) {
    struct job *j = ud;
    struct file_res *r = &j->fres[i];
    int ok = !r->failed && r->spool && fseek(r->spool, 0, SEEK_SET) == 0;
    if (ok && r->msg)
        fputs(r->msg, stderr);
    free(r->msg);
    r->msg = NULL;
    if (ok && nsc_timeline_replay(j->tl, r->spool) != 0) {
        /* events of it are written already: nothing can take them back */
        fprintf(stderr, "ncclscope convert: %s: its temporary file (-j) could not be read back; "
                        "its output is incomplete\n", j->o->files[i]);
        r->res.damaged++;
    }
    say_sink_error(j->sink, stderr);
    if (r->spool)
        fclose(r->spool);
    r->spool = NULL;
    if (ok) {
        nsc_timeline_add_totals(j->tl, &r->tot);
        add_res(j, r);
        return;
    }
    /* It could not be laid out apart (no temporary file, no memory): here,
     * in its turn, as -j 1 would. */
    struct file_res again;
    memset(&again, 0, sizeof(again));
    j->meta[i].path = j->o->files[i];
    convert_file(j, i, j->tl, j->sink, stderr, &again);
    add_res(j, &again);
}

static void convert_parallel(struct job *j, int jobs) {
    j->fres = calloc((size_t)j->o->nfiles, sizeof(*j->fres));
    if (!j->fres || nsc_parallel(j->o->nfiles, jobs, convert_one_apart, write_in_order, j) != 0) {
        free(j->fres);
        j->fres = NULL;
        for (int i = 0; i < j->o->nfiles; i++) { /* no thread: one at a time */
            struct file_res r;
            memset(&r, 0, sizeof(r));
            convert_file(j, i, j->tl, j->sink, stderr, &r);
            add_res(j, &r);
        }
        return;
    }
    free(j->fres);
    j->fres = NULL;
}

int nsc_convert(const struct nsc_convert_opts *o, struct nsc_convert_result *res) {
    struct job j;
    memset(&j, 0, sizeof(j));
    j.o = o;
    int out_err = 1;
    size_t n1 = (size_t)o->nfiles + 1;
    uint32_t *pids = calloc(n1, sizeof(*pids));
    char(*hosts)[64] = calloc(n1, sizeof(*hosts));
    uint32_t *masks = calloc(n1, sizeof(*masks));
    j.meta = calloc(n1, sizeof(*j.meta));
    if (!pids || !hosts || !masks || !j.meta) {
        fprintf(stderr, "ncclscope convert: out of memory\n");
        goto done;
    }
    char err[1300];
    struct nsc_sink_opts so = {o->format == NSC_OUT_PERFETTO ? NSC_SINK_PERFETTO : NSC_SINK_JSON,
                               o->out_path, o->split_bytes, o->files, o->nfiles};
    j.sink = nsc_sink_open(&so, err, sizeof(err));
    if (!j.sink) {
        fprintf(stderr, "ncclscope convert: %s\n", err);
        goto done;
    }
    /* Before the main pass: which pid each file holds, so PXN parents from
     * another process can be linked; the job's start; the GPU clocks. */
    uint64_t t_origin = UINT64_MAX;
    uint64_t *t0 = calloc(n1, sizeof(*t0));
    if (!t0) {
        fprintf(stderr, "ncclscope convert: out of memory\n");
        goto done;
    }
    for (int i = 0; i < o->nfiles; i++) {
        j.meta[i].path = o->files[i];
        j.meta[i].shift_ns = o->shift_ns ? o->shift_ns[i] : 0;
    }
    struct prepass pp = {&j, pids, masks, hosts, t0};
    int jobs = o->jobs > 0 ? o->jobs : nsc_jobs_default();
    if (nsc_parallel(o->nfiles, jobs, prepass_file, NULL, &pp) != 0)
        nsc_parallel(o->nfiles, 1, prepass_file, NULL, &pp);
    for (int i = 0; i < o->nfiles; i++)
        if (t0[i] < t_origin)
            t_origin = t0[i];
    free(t0);
    j.to = (struct nsc_timeline_opts){o->ranks, o->nranks, o->comm, o->t_from, o->t_to,
                                   o->event_mask, o->flows, t_origin, o->nfiles,
                                   pids, (const char(*)[64])hosts};
    j.tl = nsc_timeline_new(&j.to, j.sink);
    if (!j.tl) {
        fprintf(stderr, "ncclscope convert: out of memory\n");
        goto done;
    }
    j.masks = masks;
    /* Files laid out apart only for JSON without parts: a JSON event's bytes
     * depend on nothing written before it, so they are encoded in parallel;
     * the protobuf's do (interned strings, described tracks), and where a
     * part ends depends on every byte before. Measured on tests/data, a
     * protobuf spool cost more CPU than it saved. */
    if (o->format == NSC_OUT_JSON && !o->split_bytes && jobs > 1 && o->nfiles > 1)
        convert_parallel(&j, jobs);
    else
        for (int i = 0; i < o->nfiles; i++) {
            struct file_res r;
            memset(&r, 0, sizeof(r));
            convert_file(&j, i, j.tl, j.sink, stderr, &r);
            add_res(&j, &r);
        }
    struct nsc_timeline_totals tot;
    nsc_timeline_totals(j.tl, &tot);
    j.res.events = tot.events;
    j.res.unfinished = tot.unfinished;
    j.res.filtered = tot.filtered;
    j.res.ranks_matched = tot.ranks_matched;
    j.res.comm_matched = tot.comm_matched;
    j.res.parts = (unsigned long long)nsc_sink_parts(j.sink);
    /* the range --time selects from, for the CLI's warning when it missed */
    j.res.span_s = t_origin == UINT64_MAX || j.last_ns == 0
                       ? -1
                       : (double)(j.last_ns > t_origin ? j.last_ns - t_origin : 0) / 1e9;
    /* The run's metadata: the JSON document's "metadata", or in the
     * protobuf trace an instant on the first file's summary track. */
    struct nsc_args meta;
    if (nsc_args_init(&meta) != 0) {
        fprintf(stderr, "ncclscope convert: out of memory\n");
        goto done;
    }
    struct nsc_run_meta rm = {j.meta, o->nfiles, tot.unfinished, j.res.parts, tot.filtered,
                              tot.flows, tot.chains_not_linked, j.orphans_by_type,
                              j.res.lost, j.res.drops, j.res.lost_write, j.res.lost_exit,
                              j.res.unnamed, j.res.orphan_records, j.res.damaged};
    nsc_timeline_run_meta(&meta, &rm);
    err[0] = '\0';
    int rc = nsc_sink_finish(j.sink, &meta, t_origin == UINT64_MAX ? 0 : t_origin, err,
                             sizeof(err));
    j.sink = NULL;
    nsc_args_free(&meta);
    if (rc != 0 && err[0])
        fprintf(stderr, "ncclscope convert: %s\n", err);
    out_err = rc != 0;
done:
    nsc_sink_abort(j.sink);
    nsc_timeline_free(j.tl);
    for (int i = 0; j.meta && i < o->nfiles; i++) {
        free((void *)j.meta[i].gpu);
        free((void *)j.meta[i].tstats);
    }
    free(j.meta);
    free(pids);
    free(hosts);
    free(masks);
    if (res)
        *res = j.res;
    if (out_err)
        return 3;
    return j.res.damaged ? 2 : 0;
}
