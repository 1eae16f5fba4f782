/* report.c - the HTML report. */
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_track.h"
#include "out_file.h"
#include "stats.h"
#include "trace_decode.h"
#include "version.h"

#define MAX_BARS 20000 /* rectangles in the timeline; more are thinned evenly */
#define MAX_ROWS 256

struct bar {
    uint64_t start, end;
    uint16_t row;
    uint8_t op; /* index into the op names */
    uint8_t enqueue_only;
};

struct rowinfo {
    int file;
    uint32_t serial;
    char label[128];
};

struct rep {
    struct bar *bars;
    size_t n, stride, seen;
    struct rowinfo rows[MAX_ROWS];
    int nrows;
    char ops[16][24];
    int nops;
    int file;
    uint64_t t0, t1;
    int damaged;
    struct nsc_decoder *d;
};

static int op_index(struct rep *r, const char *name) {
    if (!name)
        name = "?";
    for (int i = 0; i < r->nops; i++)
        if (!strcmp(r->ops[i], name))
            return i;
    if (r->nops == 16)
        return 15;
    snprintf(r->ops[r->nops], sizeof(r->ops[0]), "%s", name);
    return r->nops++;
}

static int row_index(struct rep *r, uint32_t serial, const struct nsc_op_done *op) {
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].file == r->file && r->rows[i].serial == serial)
            return i;
    if (r->nrows == MAX_ROWS)
        return -1;
    struct rowinfo *ri = &r->rows[r->nrows];
    ri->file = r->file;
    ri->serial = serial;
    snprintf(ri->label, sizeof(ri->label), "%s pid %u rank %d/%d", r->d->session.host,
             r->d->session.pid, op->rank, op->nranks);
    return r->nrows++;
}

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct rep *r = ud;
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    if (!end || end < op->start_ns)
        return;
    if (!r->t0 || op->start_ns < r->t0)
        r->t0 = op->start_ns;
    if (end > r->t1)
        r->t1 = end;
    if (r->seen++ % r->stride)
        return;
    int row = row_index(r, op->comm_serial, op);
    if (row < 0)
        return;
    if (r->n == MAX_BARS) { /* thin evenly: keep every other, sample half as often */
        size_t k = 0;
        for (size_t i = 0; i < r->n; i += 2)
            r->bars[k++] = r->bars[i];
        r->n = k;
        r->stride *= 2;
    }
    r->bars[r->n++] = (struct bar){op->start_ns, end, (uint16_t)row, (uint8_t)op_index(r, op->func),
                                   (uint8_t)!op->end_ns};
}

struct file_run {
    struct rep *r;
    struct nsc_coll_track *t;
    int64_t shift;
};

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *rec,
                      const struct nsc_rec *ext) {
    struct file_run *fr = ud;
    if (!fr->t)
        fr->t = nsc_track_new(d, fr->shift, on_op, fr->r);
    if (fr->t)
        nsc_track_record(fr->t, thread, rec, ext);
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct file_run *fr = ud;
    fr->r->damaged = 1;
    fprintf(stderr, "ncclscope report: %s\n", msg);
}

static const char *const colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

static void esc(FILE *f, const char *s) {
    for (; *s; s++)
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
}

static void timeline(FILE *f, struct rep *r) {
    const double W = 1100, L = 250, R = 20, T = 30, RH = 22;
    double H = T + RH * r->nrows + 40;
    double span = (double)(r->t1 - r->t0);
    if (span <= 0)
        span = 1;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' class='timeline'>\n", W, H);
    for (int i = 0; i < r->nrows; i++) {
        double y = T + RH * i;
        fprintf(f, "<rect x='0' y='%.0f' width='%.0f' height='%.0f' fill='%s'/>", y, W, RH,
                i % 2 ? "#f7f7f7" : "#ffffff");
        fprintf(f, "<text x='4' y='%.0f' font-size='12'>", y + 15);
        esc(f, r->rows[i].label);
        fprintf(f, "</text>\n");
    }
    for (int k = 0; k <= 10; k++) {
        double x = L + (W - L - R) * k / 10.0;
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' stroke='#ccc'/>"
                   "<text x='%.1f' y='%.0f' font-size='11' text-anchor='middle'>%.3g ms</text>\n",
                x, x, T - 4, H - 30, x, H - 14, span * k / 10.0 / 1e6);
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct bar *b = &r->bars[i];
        double x = L + (W - L - R) * (double)(b->start - r->t0) / span;
        double w = (W - L - R) * (double)(b->end - b->start) / span;
        if (w < 0.5)
            w = 0.5;
        fprintf(f, "<rect x='%.1f' y='%.0f' width='%.1f' height='%.0f' fill='%s'%s><title>",
                x, T + RH * b->row + 3, w, RH - 6, colors[b->op % 10],
                b->enqueue_only ? " fill-opacity='0.4'" : "");
        esc(f, r->ops[b->op]);
        fprintf(f, " %.2f us%s</title></rect>\n", (double)(b->end - b->start) / 1e3,
                b->enqueue_only ? " (enqueue only)" : "");
    }
    fprintf(f, "</svg>\n<p class='legend'>");
    for (int i = 0; i < r->nops; i++) {
        fprintf(f, "<span style='color:%s'>&#9632;</span> ", colors[i % 10]);
        esc(f, r->ops[i]);
        fprintf(f, " &nbsp; ");
    }
    fprintf(f, "</p>\n");
}

int nsc_report(const char *const *files, int nfiles, const int64_t *shift_ns, const char *out_path,
               const char *alignment_text) {
    FILE *f = stdout;
    struct nsc_out of;
    char err[1200];
    if (strcmp(out_path, "-") != 0) {
        if (nsc_out_open(&of, out_path, files, nfiles, err, sizeof(err)) != 0) {
            fprintf(stderr, "ncclscope report: cannot write %s\n", err);
            return 3;
        }
        if (!(f = fdopen(of.fd, "w"))) {
            fprintf(stderr, "ncclscope report: cannot write %s: %s\n", out_path, strerror(errno));
            close(of.fd);
            nsc_out_finish(&of, 0, err, sizeof(err));
            return 3;
        }
    }
    struct rep *r = calloc(1, sizeof(*r));
    if (!r || !(r->bars = malloc(MAX_BARS * sizeof(*r->bars)))) {
        fprintf(stderr, "ncclscope report: out of memory\n");
        free(r);
        if (f != stdout) {
            fclose(f);
            nsc_out_finish(&of, 0, err, sizeof(err));
        }
        return 3;
    }
    r->stride = 1;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>ncclscope report</title>\n"
               "<style>body{font-family:sans-serif;margin:24px;color:#222}"
               "table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;"
               "padding:3px 8px;font-size:13px;text-align:right}th{background:#eee}"
               "td:nth-child(3),td:nth-child(4){text-align:left}"
               "h1{font-size:22px}h2{font-size:17px;margin-top:28px}.legend{font-size:13px}"
               "pre{background:#f5f5f5;padding:8px;font-size:12px}</style></head><body>\n"
               "<h1>ncclscope report</h1>\n<p>%d trace file(s), written by ncclscope %s.</p>\n<table>"
               "<tr><th>file</th><th>host</th><th>pid</th><th>API</th><th>records</th>"
               "<th>records lost</th><th>complete</th></tr>\n",
            nfiles, NSC_VERSION);
    for (int i = 0; i < nfiles; i++) {
        struct nsc_decoder d;
        if (nsc_decoder_open(&d, files[i]) != NSC_OK) {
            fprintf(stderr, "ncclscope report: %s\n", d.rd.err);
            r->damaged = 1;
            continue;
        }
        r->file = i;
        r->d = &d;
        struct file_run fr = {r, NULL, shift_ns ? shift_ns[i] : 0};
        struct nsc_decode_ops ops = {.record = on_record, .error = on_error};
        nsc_decoder_run(&d, &ops, &fr);
        nsc_track_finish(fr.t);
        fprintf(f, "<tr><td>");
        esc(f, files[i]);
        fprintf(f, "</td><td>");
        esc(f, d.session.host);
        fprintf(f, "</td><td>%u</td><td>v%u</td><td>%llu</td><td>%llu", d.session.pid,
                d.session.api_version, (unsigned long long)d.records,
                (unsigned long long)d.losses.total);
        if (d.losses.total != d.losses.dropped)
            fprintf(f, " (%llu dropped, %llu to write errors, %llu at exit)",
                    (unsigned long long)d.losses.dropped, (unsigned long long)d.losses.write,
                    (unsigned long long)d.losses.exit);
        if (d.unnamed_events)
            fprintf(f, "; %llu events named \"?\"", (unsigned long long)d.unnamed_events);
        fprintf(f, "</td><td>%s</td></tr>\n", d.ended ? "yes" : "no (crashed or still running)");
        nsc_decoder_close(&d);
    }
    fprintf(f, "</table>\n");
    if (alignment_text && *alignment_text) {
        fprintf(f, "<h2>Clock alignment</h2>\n<pre>");
        esc(f, alignment_text);
        fprintf(f, "</pre>\n");
    }
    fprintf(f, "<h2>Timeline: operations per rank, enqueue to completion</h2>\n"
               "<p>%zu operations%s; hover a bar for its name and duration; pale bars have no "
               "completion event (enqueue only).</p>\n",
            r->seen, r->stride > 1 ? " (thinned evenly to fit)" : "");
    timeline(f, r);
    fflush(f);
    struct nsc_stats_opts so = {files, nfiles, shift_ns, 2, 20, f};
    int rc = nsc_stats(&so);
    fprintf(f, "<p style='font-size:12px;color:#777'>Self-contained: no scripts, no network. "
               "For every event, convert the same files with <code>ncclscope convert</code> and open "
               "them in Perfetto.</p>\n</body></html>\n");
    int werr = ferror(f) || fflush(f) != 0;
    int e = errno;
    if (f == stdout && werr)
        fprintf(stderr, "ncclscope report: standard output: write failed: %s\n", strerror(e));
    if (f != stdout) {
        if (fclose(f) != 0 && !werr) {
            werr = 1;
            e = errno;
        }
        if (werr)
            fprintf(stderr, "ncclscope report: %s: write failed: %s (nothing written there)\n",
                    out_path, strerror(e));
        if (nsc_out_finish(&of, !werr, err, sizeof(err)) != 0) {
            fprintf(stderr, "ncclscope report: %s\n", err);
            werr = 1;
        }
    }
    free(r->bars);
    int dam = r->damaged;
    free(r);
    if (werr)
        return 3;
    return rc ? rc : dam ? 2 : 0;
}
