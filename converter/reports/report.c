// SPDX-License-Identifier: Apache-2.0
/* report.c - the HTML report: the numbers of `ncclscope stats` (one pass,
 * nsc_stats_collect) drawn on one self-contained page.
 *
 * Why binned lanes: a real job has millions of operations over minutes; one
 * rectangle per operation on a page-wide axis is one solid bar. Each rank's
 * lane shows, per time bin, the share of the bin its GPU spent in NCCL
 * kernels, stacked by operation. The bins live on one grid for every lane
 * that doubles its width (adjacent bins merged, exactly) when an operation
 * falls outside it, so memory stays bounded whatever the job's length. The
 * detail window below draws single operations, around the collective with
 * the largest GPU-start lag; with scripts on, a click on the overview moves
 * it and buttons zoom. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_track.h"
#include "event_types.h"
#include "json_escape.h"
#include "out_file.h"
#include "stats.h"
#include "trace_decode.h"
#include "version.h"

#define NB 200            /* overview bins */
#define MAX_KEYS 1024     /* (file, comm serial) pairs; more are not drawn */
#define MAX_LANES 256     /* lanes drawn */
#define NOPS 16           /* operation names kept; more share the last */
#define MAX_STORE 200000  /* operations kept for the detail window; more are thinned evenly */
#define MAX_DETAIL 6000   /* rectangles in the static detail window */
#define MAX_EMBED 8000    /* operations given to the zoom script */

/* The times a lane can draw, each on its own grid: GPU time (KernelCh),
 * host time (enqueue to completion, the operations with one), enqueue
 * (Coll start to its own stop, where the trace records no completion: what
 * the host spent issuing, never how long an operation took). */
enum kind { K_GPU, K_HOST, K_ENQ, NKINDS };

/* One (file, comm serial): a rank of a communicator in one process. */
struct key {
    int file;
    uint32_t serial;
    uint64_t comm_id;
    int rank, nranks;
    uint64_t ops;
    double *bins[NKINDS]; /* NB x NOPS ns busy per kind (enum kind), NULL until used */
    int lane;
};

/* An operation kept for the detail window. */
struct dop {
    uint64_t hs, he, gs, ge; /* host enqueue..completion (or its stop), GPU start..end (0: none) */
    uint32_t key;
    uint8_t op;
    uint8_t enq;             /* no completion: hs..he is its enqueue only */
};

struct file_info {
    int opened, ended;
    int multi; /* holds two ranks of one comm: several GPUs */
    char host[64];
    uint32_t pid, api;
    uint64_t records, lost, dropped, write, exit, unnamed;
};

struct lane {
    int file, rank, nranks;
    char label[160];
    double busy[NKINDS];
};

struct rep {
    struct key *keys;
    int nkeys, keys_full;
    char ops[NOPS][24];
    int nops;
    /* the bin grids of GPU [0] and host [1] times (apart: a replay's or a
     * badly mapped GPU clock must not squeeze the other): bin b covers
     * [origin + b*width, origin + (b+1)*width) */
    uint64_t origin[NKINDS], width[NKINDS];
    int grid[NKINDS];
    uint64_t lo[NKINDS], hi[NKINDS]; /* extent of each kind's intervals */
    uint64_t nint[NKINDS];           /* intervals of each kind */
    struct dop *store;
    size_t nstore, stride, seen;
    struct file_info *files;
    int oom;
};

static const char *const colors[NOPS] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                         "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                         "#9c755f", "#bab0ac", "#17becf", "#bcbd22",
                                         "#8c564b", "#1f77b4", "#d62728", "#7f7f7f"};

static int op_index(struct rep *r, const char *name) {
    if (!name)
        name = "?";
    for (int i = 0; i < r->nops; i++)
        if (!strcmp(r->ops[i], name))
            return i;
    if (r->nops == NOPS) /* the last name stands for the rest */
        return NOPS - 1;
    snprintf(r->ops[r->nops], sizeof(r->ops[0]), "%s", r->nops == NOPS - 1 ? "other" : name);
    return r->nops++;
}

static struct key *key_of(struct rep *r, int file, const struct nsc_op_done *op) {
    for (int i = r->nkeys - 1; i >= 0; i--)
        if (r->keys[i].file == file && r->keys[i].serial == op->comm_serial)
            return &r->keys[i];
    if (r->nkeys == MAX_KEYS) {
        r->keys_full = 1;
        return NULL;
    }
    struct key *k = &r->keys[r->nkeys++];
    memset(k, 0, sizeof(*k));
    k->file = file;
    k->serial = op->comm_serial;
    k->comm_id = op->comm_id;
    k->rank = op->rank;
    k->nranks = op->nranks;
    return k;
}

/* Widens the grid (doubling the width m times, moving the origin back by
 * whole new bins) until [lo, hi) fits; old bin i becomes bin shift + (i >> m). */
static void grid_fit(struct rep *r, int g, uint64_t lo, uint64_t hi) {
    if (!r->grid[g]) {
        r->grid[g] = 1;
        r->origin[g] = lo;
        r->width[g] = 1024;
    }
    if (lo >= r->origin[g] && hi <= r->origin[g] + (uint64_t)NB * r->width[g])
        return;
    uint64_t end = r->origin[g] + (uint64_t)NB * r->width[g];
    if (hi > end)
        end = hi;
    unsigned m = 0;
    uint64_t w = r->width[g], shift = 0;
    for (;;) {
        m++;
        w = r->width[g] << m;
        shift = lo < r->origin[g] ? (r->origin[g] - lo + w - 1) / w : 0;
        if (shift <= r->origin[g] / w && shift + (uint64_t)((NB - 1) >> m) < NB &&
            r->origin[g] - shift * w + (uint64_t)NB * w >= end)
            break;
        if (m > 40) /* a span past hours of ns: keep what fits */
            return;
    }
    for (int k = 0; k < r->nkeys; k++) {
        double *b = r->keys[k].bins[g];
        if (!b)
            continue;
        double tmp[NB * NOPS];
        memset(tmp, 0, sizeof(tmp));
        for (int i = 0; i < NB; i++)
            for (int o = 0; o < NOPS; o++)
                tmp[(shift + (uint64_t)(i >> m)) * NOPS + (uint64_t)o] += b[i * NOPS + o];
        memcpy(b, tmp, sizeof(tmp));
    }
    r->origin[g] -= shift * w;
    r->width[g] = w;
}

static void bin_add(struct rep *r, struct key *k, int g, int op, uint64_t s, uint64_t e) {
    if (e <= s)
        return;
    if (!k->bins[g] && !(k->bins[g] = calloc(NB * NOPS, sizeof(double)))) {
        r->oom = 1;
        return;
    }
    grid_fit(r, g, s, e);
    if (s < r->origin[g] || e > r->origin[g] + (uint64_t)NB * r->width[g])
        return;
    uint64_t b0 = (s - r->origin[g]) / r->width[g], b1 = (e - 1 - r->origin[g]) / r->width[g];
    for (uint64_t b = b0; b <= b1; b++) {
        uint64_t bs = r->origin[g] + b * r->width[g], be = bs + r->width[g];
        uint64_t x = s > bs ? s : bs, y = e < be ? e : be;
        k->bins[g][b * NOPS + (uint64_t)op] += (double)(y - x);
    }
    if (!r->nint[g] || s < r->lo[g])
        r->lo[g] = s;
    if (e > r->hi[g])
        r->hi[g] = e;
    r->nint[g]++;
}

static void on_op(void *ud, int file, const struct nsc_decoder *d, const struct nsc_op_done *op,
                  uint64_t gs, uint64_t ge) {
    (void)d;
    struct rep *r = ud;
    struct key *k = key_of(r, file, op);
    if (!k)
        return;
    k->ops++;
    int o = op_index(r, op->func);
    uint64_t he = op->end_ns ? op->end_ns : op->stop_ns;
    if (gs && ge > gs)
        bin_add(r, k, K_GPU, o, gs, ge);
    else
        gs = ge = 0;
    if (he > op->start_ns)
        bin_add(r, k, op->end_ns ? K_HOST : K_ENQ, o, op->start_ns, he);
    else
        he = 0;
    if (r->seen++ % r->stride)
        return;
    if (r->nstore == MAX_STORE) { /* thin evenly: keep every other, sample half as often */
        size_t n = 0;
        for (size_t i = 0; i < r->nstore; i += 2)
            r->store[n++] = r->store[i];
        r->nstore = n;
        r->stride *= 2;
    }
    r->store[r->nstore++] = (struct dop){op->start_ns, he, gs, ge, (uint32_t)(k - r->keys),
                                         (uint8_t)o, !op->end_ns};
}

static void on_file(void *ud, int file, const struct nsc_decoder *d) {
    struct rep *r = ud;
    struct file_info *fi = &r->files[file];
    if (!d)
        return;
    fi->opened = 1;
    fi->ended = d->ended;
    snprintf(fi->host, sizeof(fi->host), "%s", d->session.host);
    fi->pid = d->session.pid;
    fi->api = d->session.api_version;
    fi->records = d->records;
    fi->lost = d->losses.total;
    fi->dropped = d->losses.dropped;
    fi->write = d->losses.write;
    fi->exit = d->losses.exit;
    fi->unnamed = d->unnamed_events;
}

/* ---- output helpers ---- */

/* Text from the traces in HTML: UTF-8 kept, an invalid byte sequence as
 * U+FFFD (json_escape.h's rule, the same as the JSON outputs'; the page
 * says it is UTF-8), markup characters as entities. */
static void esc(FILE *f, const char *s) {
    while (s && *s) {
        if ((unsigned char)*s >= 0x80) {
            int valid;
            size_t n = nsc_utf8_seq((const unsigned char *)s, &valid);
            if (valid)
                fwrite(s, 1, n, f);
            else
                fputs("\xef\xbf\xbd", f);
            s += n;
            continue;
        }
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '\'')
            fputs("&#39;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
        s++;
    }
}

/* A duration in ns as text with a unit that keeps 3 significant digits. */
static const char *dur(char *buf, size_t n, double ns) {
    if (ns < 0)
        snprintf(buf, n, "-");
    else if (ns < 1e3)
        snprintf(buf, n, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, n, "%.3g us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.3g ms", ns / 1e6);
    else if (ns < 1e12)
        snprintf(buf, n, "%.3g s", ns / 1e9);
    else
        snprintf(buf, n, "%.0f s", ns / 1e9);
    return buf;
}


static void legend_item(FILE *f, const char *color, const char *text) {
    fprintf(f, "<li><span class='sw' style='background:%s'></span>", color);
    esc(f, text);
    fputs("</li>", f);
}

/* A tick's label: the unit follows the axis' end (tmax), the decimals the
 * step, so that neighbouring ticks never read the same. */
static const char *tick_label(char *buf, size_t n, double t, double step, double tmax) {
    double unit = tmax >= 1e9 ? 1e9 : tmax >= 1e6 ? 1e6 : tmax >= 1e3 ? 1e3 : 1;
    const char *name = unit == 1e9 ? "s" : unit == 1e6 ? "ms" : unit == 1e3 ? "us" : "ns";
    int dec = 0;
    for (double q = step / unit; q < 0.999 && dec < 6; q *= 10)
        dec++;
    snprintf(buf, n, "%.*f %s", dec, t / unit, name);
    return buf;
}

/* Tick step for a span: 1, 2 or 5 times a power of ten, about 8 ticks. */
static double tick_step(double span) {
    double s = pow(10, floor(log10(span / 8)));
    if (span / s > 40)
        s *= 5;
    else if (span / s > 16)
        s *= 2;
    return s;
}

/* ---- lanes: one per GPU ---- */

/* A file whose comms all have different commIds drives one GPU: one lane.
 * A file holding two ranks of one comm drives several; its keys are then
 * grouped by rank (a process's comms number their ranks in device order). */
static int make_lanes(struct rep *r, struct lane *lanes) {
    int n = 0;
    /* files with two ranks of one comm */
    for (int i = 0; i < r->nkeys; i++)
        r->keys[i].lane = -1;
    for (int i = 0; i < r->nkeys; i++)
        for (int j = i + 1; j < r->nkeys; j++)
            if (r->keys[j].file == r->keys[i].file && r->keys[j].comm_id == r->keys[i].comm_id)
                r->files[r->keys[i].file].multi = 1;
    for (int i = 0; i < r->nkeys; i++) {
        struct key *k = &r->keys[i];
        if (k->lane >= 0)
            continue;
        int multi = r->files[k->file].multi;
        if (n == MAX_LANES)
            break;
        struct lane *ln = &lanes[n];
        memset(ln, 0, sizeof(*ln));
        ln->file = k->file;
        ln->rank = k->rank;
        ln->nranks = k->nranks;
        uint64_t best = 0;
        for (int j = i; j < r->nkeys; j++) {
            struct key *x = &r->keys[j];
            if (x->file != k->file || x->lane >= 0 || (multi && x->rank != k->rank))
                continue;
            x->lane = n;
            /* named by its rank in the largest comm (most operations on a tie) */
            if (x->nranks > ln->nranks || (x->nranks == ln->nranks && x->ops > best)) {
                ln->rank = x->rank;
                ln->nranks = x->nranks;
                best = x->ops;
            }
        }
        struct file_info *fi = &r->files[k->file];
        snprintf(ln->label, sizeof(ln->label), "rank %d/%d · %s pid %u", ln->rank, ln->nranks,
                 fi->host, fi->pid);
        n++;
    }
    return n;
}

static int cmp_lane(const void *x, const void *y) {
    const struct lane *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    return a->file - b->file;
}

/* ---- the overview: GPU time per rank, binned ---- */

struct view {
    int g;               /* the kind drawn (enum kind): GPU time, else host time, else enqueue */
    uint64_t t0, t1;     /* the job's extent, on the grid */
    int b0, b1;          /* bins drawn */
    double W, L, R;      /* svg width, label column, right margin */
};

static double xof(const struct view *v, uint64_t t) {
    double span = (double)(v->t1 - v->t0);
    return v->L + (v->W - v->L - v->R) * ((double)t - (double)v->t0) / (span > 0 ? span : 1);
}

static void axis(FILE *f, const struct view *v, uint64_t a, uint64_t b, double ytop, double ybot) {
    double span = (double)(b - a);
    if (span <= 0)
        return;
    double step = tick_step(span);
    char buf[32];
    /* labels relative to the job's start */
    double first = ceil(((double)a - (double)v->t0) / step) * step;
    for (double t = first; t <= (double)b - (double)v->t0 + 1e-9; t += step) {
        double x = v->L + (v->W - v->L - v->R) * (t - ((double)a - (double)v->t0)) / span;
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' stroke='#ddd'/>"
                   "<text x='%.1f' y='%.0f' font-size='11' text-anchor='middle'>%s</text>\n",
                x, x, ytop, ybot, x, ybot + 14, tick_label(buf, sizeof(buf), t, step, (double)b - (double)v->t0));
    }
}

/* The busiest bin's share of its time (at most 1), rounded up to 1, 2 or
 * 5 times a power of ten: a lane's full height, so that a job whose GPUs
 * spend 0.1% in NCCL still shows its shape. */
static double lane_scale(const struct rep *r, const struct view *v, int nl, const double *bins) {
    double top = 0;
    for (int l = 0; l < nl; l++)
        for (int b = v->b0; b <= v->b1; b++) {
            double t = 0;
            for (int o = 0; o < NOPS; o++)
                t += bins[((size_t)l * NB + (size_t)b) * NOPS + (size_t)o];
            t /= (double)r->width[v->g];
            top = t > top ? t : top;
        }
    if (top >= 0.5 || top <= 0)
        return 1;
    double p = pow(10, floor(log10(top)));
    for (double m = 1; m <= 10; m = m == 1 ? 2 : m == 2 ? 5 : 10)
        if (m * p >= top * 0.9999)
            return m * p < 1 ? m * p : 1;
    return 1;
}

/* bins: per lane, NB x NOPS ns busy (the sum of its keys'); full: the
 * share of a bin a full lane height stands for. */
static void overview(FILE *f, struct rep *r, const struct view *v, struct lane *lanes, int nl,
                     const double *bins, double full) {
    const double T = 8, LH = 30, BH = 24;
    double H = T + LH * nl + 24;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' id='overview' width='%.0f' height='%.0f' "
               "viewBox='0 0 %.0f %.0f'>\n",
            v->W, H, v->W, H);
    axis(f, v, v->t0, v->t1, T, T + LH * nl);
    double bw = (v->W - v->L - v->R) / (double)(v->b1 - v->b0 + 1);
    for (int l = 0; l < nl; l++) {
        double y = T + LH * l;
        fprintf(f, "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='#f4f4f4'/>", v->L,
                y + LH - BH - 2, v->W - v->L - v->R, BH);
        char buf[32];
        double span = (double)(v->t1 - v->t0);
        fprintf(f, "<text x='4' y='%.0f' font-size='12'>", y + LH - 12);
        esc(f, lanes[l].label);
        fprintf(f, "</text><text x='%.0f' y='%.0f' font-size='11' text-anchor='end' fill='#555'>"
                   "%.1f%%</text>\n",
                v->L - 6, y + LH - 12, span > 0 ? 100.0 * lanes[l].busy[v->g] / span : 0.0);
        /* the lane's bins: the sum over its keys, each bin's stack scaled to
         * at most full (kernels of several streams overlap) */
        const double *lb = bins + (size_t)l * NB * NOPS;
        double tot[NB], stack[NB];
        memset(tot, 0, sizeof(tot));
        memset(stack, 0, sizeof(stack));
        for (int b = 0; b < NB; b++)
            for (int o = 0; o < NOPS; o++)
                tot[b] += lb[b * NOPS + o];
        for (int o = 0; o < r->nops; o++) {
            double sum = 0;
            int any = 0;
            for (int b = v->b0; b <= v->b1; b++) {
                double val = lb[b * NOPS + o];
                if (val <= 0)
                    continue;
                double scale = tot[b] > (double)r->width[v->g] ? (double)r->width[v->g] / tot[b] : 1.0;
                double h = BH * val * scale / (double)r->width[v->g] / full;
                if (!any)
                    fprintf(f, "<path fill='%s' d='", colors[o]);
                any = 1;
                double x = v->L + bw * (b - v->b0), yb = y + LH - 2 - stack[b];
                fprintf(f, "M%.1f %.2fh%.2fv%.2fh%.2fz", x, yb, bw, -h, -bw);
                stack[b] += h;
                sum += val;
            }
            if (any) {
                fprintf(f, "'><title>");
                esc(f, r->ops[o]);
                fprintf(f, " on ");
                esc(f, lanes[l].label);
                fprintf(f, ": %s</title></path>\n", dur(buf, sizeof(buf), sum));
            }
        }
    }
    fprintf(f, "</svg>\n");
}

/* ---- the detail window ---- */

static void interval(const struct dop *o, int g, uint64_t *s, uint64_t *e) {
    *s = g ? o->hs : o->gs;
    *e = g ? o->he : o->ge;
    if (g == K_HOST && o->enq) /* an enqueue is no host time */
        *s = *e = 0;
}

static void detail(FILE *f, struct rep *r, const struct view *v, const struct lane *lanes, int nl,
                   uint64_t a, uint64_t b, const struct nsc_stats_coll *mark, int mark_gpu) {
    const double T = 8, LH = 22;
    double H = T + LH * nl + 24;
    struct view dv = *v;
    dv.t0 = a;
    dv.t1 = b;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' id='detail' width='%.0f' height='%.0f' "
               "viewBox='0 0 %.0f %.0f'>\n",
            v->W, H, v->W, H);
    for (int l = 0; l < nl; l++) {
        double y = T + LH * l;
        fprintf(f, "<rect x='0' y='%.0f' width='%.0f' height='%.0f' fill='%s'/><text x='4' "
                   "y='%.0f' font-size='12'>",
                y, v->W, LH, l % 2 ? "#f7f7f7" : "#ffffff", y + 15);
        esc(f, lanes[l].label);
        fprintf(f, "</text>\n");
    }
    /* axis relative to the job's start */
    {
        double span = (double)(b - a);
        double step = tick_step(span);
        char buf[32];
        double first = ceil(((double)a - (double)v->t0) / step) * step;
        for (double t = first; t <= (double)b - (double)v->t0 + 1e-9; t += step) {
            double x = xof(&dv, (uint64_t)((double)v->t0 + t));
            fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' stroke='#ddd'/>"
                       "<text x='%.1f' y='%.0f' font-size='11' text-anchor='middle'>%s</text>\n",
                    x, x, T, T + LH * nl, x, T + LH * nl + 14, tick_label(buf, sizeof(buf), t, step, (double)b - (double)v->t0));
        }
    }
    /* The store is sorted by the drawn start: operations of one lane and
     * name that touch within a pixel become one rectangle (at most a few
     * per pixel column, whatever the window holds). */
    struct pend {
        double x0, x1, ns;
        uint64_t n;
        int op;
    } *pend = calloc((size_t)nl, sizeof(*pend));
    size_t drawn = 0;
    char buf[32];
    for (size_t i = 0; pend && i <= r->nstore && drawn < MAX_DETAIL; i++) {
        const struct dop *o = i < r->nstore ? &r->store[i] : NULL;
        uint64_t s = 0, e = 0;
        int lane = -1;
        if (o) {
            interval(o, v->g, &s, &e);
            lane = r->keys[o->key].lane;
            if (!e || e < a || s > b || lane < 0 || lane >= nl)
                continue;
        }
        double x0 = o ? xof(&dv, s < a ? a : s) : 0, x1 = o ? xof(&dv, e > b ? b : e) : 0;
        if (x1 - x0 < 1)
            x1 = x0 + 1;
        for (int l = 0; l < nl; l++) {
            struct pend *p = &pend[l];
            if (o && l != lane)
                continue;
            if (o && p->n && p->op == o->op && x0 <= p->x1 + 0.5) {
                p->x1 = x1 > p->x1 ? x1 : p->x1;
                p->ns += (double)(e - s);
                p->n++;
                x0 = -1; /* taken */
                continue;
            }
            if (p->n) {
                fprintf(f, "<rect x='%.1f' y='%.0f' width='%.1f' height='%.0f' fill='%s'><title>",
                        p->x0, T + LH * l + 3, p->x1 - p->x0, LH - 6, colors[p->op]);
                esc(f, r->ops[p->op]);
                if (p->n > 1)
                    fprintf(f, " &times;%llu", (unsigned long long)p->n);
                fprintf(f, " %s</title></rect>\n", dur(buf, sizeof(buf), p->ns));
                drawn++;
                p->n = 0;
            }
        }
        if (o && x0 >= 0)
            pend[lane] = (struct pend){x0, x1, (double)(e - s), 1, o->op};
    }
    free(pend);
    if (mark && mark->ranks && mark_gpu == !v->g) {
        double x0 = xof(&dv, mark->first_ns), x1 = xof(&dv, mark->last_ns);
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' stroke='#000' stroke-dasharray='3 2'/>"
                   "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' stroke='#e15759' stroke-width='2'/>\n",
                x0, x0, T, T + LH * nl, x1, x1, T, T + LH * nl);
    }
    fprintf(f, "</svg>\n");
    if (drawn == MAX_DETAIL)
        fprintf(f, "<p class='note'>The first %d operations of the window are drawn.</p>\n",
                MAX_DETAIL);
}

static int cmp_host(const void *x, const void *y) {
    const struct dop *a = x, *b = y;
    return a->hs < b->hs ? -1 : a->hs > b->hs;
}

static int cmp_gpu(const void *x, const void *y) {
    const struct dop *a = x, *b = y;
    return a->gs < b->gs ? -1 : a->gs > b->gs;
}

/* The operations the zoom script may draw: all when few, else the
 * MAX_EMBED nearest the window's centre (store sorted by the drawn start). */
static void embed(FILE *f, struct rep *r, const struct view *v, const struct lane *lanes, int nl,
                  uint64_t a, uint64_t b) {
    size_t lo = 0, hi = r->nstore;
    if (hi > MAX_EMBED) {
        uint64_t c = a / 2 + b / 2;
        size_t m = 0;
        while (m < r->nstore && (v->g ? r->store[m].hs : r->store[m].gs) < c)
            m++;
        lo = m > MAX_EMBED / 2 ? m - MAX_EMBED / 2 : 0;
        hi = lo + MAX_EMBED < r->nstore ? lo + MAX_EMBED : r->nstore;
    }
    fprintf(f, "<script>\nvar NSC={t0:%llu,a:%llu,b:%llu,end:%llu,g:%d,W:%.0f,L:%.0f,R:%.0f,lanes:[",
            (unsigned long long)v->t0, (unsigned long long)(a - v->t0),
            (unsigned long long)(b - v->t0), (unsigned long long)(v->t1 - v->t0), v->g, v->W, v->L,
            v->R);
    for (int l = 0; l < nl; l++) {
        if (l)
            fputc(',', f);
        nsc_json_print(f, lanes[l].label, NSC_JSON_ESC_SCRIPT);
    }
    fputs("],names:[", f);
    for (int o = 0; o < r->nops; o++) {
        if (o)
            fputc(',', f);
        nsc_json_print(f, r->ops[o], NSC_JSON_ESC_SCRIPT);
    }
    fputs("],colors:[", f);
    for (int o = 0; o < NOPS; o++)
        fprintf(f, "%s\"%s\"", o ? "," : "", colors[o]);
    fputs("],ops:[", f);
    int first = 1;
    for (size_t i = lo; i < hi; i++) {
        const struct dop *o = &r->store[i];
        uint64_t s, e;
        interval(o, v->g, &s, &e);
        int lane = r->keys[o->key].lane;
        if (!e || lane < 0 || lane >= nl || s < v->t0)
            continue;
        fprintf(f, "%s%d,%u,%llu,%llu", first ? "" : ",", lane, o->op,
                (unsigned long long)(s - v->t0), (unsigned long long)(e - s));
        first = 0;
    }
    fputs("]};\n", f);
    /* The zoom: redraws #detail from NSC.ops; a click on #overview centres
     * the window there. Without scripts the page shows the static window. */
    fputs("(function(){var d=document.getElementById('detail'),o=document.getElementById('overview');\n"
          "if(!d||!o)return;var N='http://www.w3.org/2000/svg',a=NSC.a,b=NSC.b,LH=22,T=8;\n"
          "function fmt(t){return t<1e3?t.toFixed(0)+' ns':t<1e6?(t/1e3).toPrecision(3)+' us':"
          "t<1e9?(t/1e6).toPrecision(3)+' ms':t<1e12?(t/1e9).toPrecision(3)+' s':(t/1e9).toFixed(0)+' s';}\n"
          "function tl(t,st){var u=b>=1e9?1e9:b>=1e6?1e6:b>=1e3?1e3:1,dec=0;"
          "for(var q=st/u;q<0.999&&dec<6;q*=10)dec++;return (t/u).toFixed(dec)+' '+"
          "(u==1e9?'s':u==1e6?'ms':u==1e3?'us':'ns');}\n"
          "function el(n,at,p){var e=document.createElementNS(N,n);for(var k in at)e.setAttribute(k,at[k]);"
          "p.appendChild(e);return e;}\n"
          "function draw(){while(d.firstChild)d.removeChild(d.firstChild);var w=NSC.W-NSC.L-NSC.R,"
          "nl=NSC.lanes.length,s=b-a;function X(t){return NSC.L+w*(t-a)/s;}\n"
          "for(var l=0;l<nl;l++){el('rect',{x:0,y:T+LH*l,width:NSC.W,height:LH,fill:l%2?'#f7f7f7':'#fff'},d);"
          "el('text',{x:4,y:T+LH*l+15,'font-size':12},d).textContent=NSC.lanes[l];}\n"
          "var st=Math.pow(10,Math.floor(Math.log10(s/8)));if(s/st>40)st*=5;else if(s/st>16)st*=2;\n"
          "for(var t=Math.ceil(a/st)*st;t<=b;t+=st){el('line',{x1:X(t),x2:X(t),y1:T,y2:T+LH*nl,stroke:'#ddd'},d);"
          "el('text',{x:X(t),y:T+LH*nl+14,'font-size':11,'text-anchor':'middle'},d).textContent=tl(t,st);}\n"
          "var O=NSC.ops,n=0,P=[];function fl(l){var p=P[l];if(!p)return;var r=el('rect',{x:p[0],"
          "y:T+LH*l+3,width:p[1]-p[0],height:LH-6,fill:NSC.colors[p[2]]},d);el('title',{},r)"
          ".textContent=NSC.names[p[2]]+(p[3]>1?' \u00d7'+p[3]:'')+' '+fmt(p[4]);n++;P[l]=null;}\n"
          "for(var i=0;i<O.length&&n<20000;i+=4){var s0=O[i+2],e0=s0+O[i+3],l=O[i];"
          "if(e0<a||s0>b)continue;var x0=X(Math.max(s0,a)),x1=Math.max(X(Math.min(e0,b)),x0+1),p=P[l];"
          "if(p&&p[2]==O[i+1]&&x0<=p[1]+0.5){p[1]=Math.max(p[1],x1);p[3]++;p[4]+=O[i+3];continue;}"
          "fl(l);P[l]=[x0,x1,O[i+1],1,O[i+3]];}\nfor(var l=0;l<nl;l++)fl(l);\n"
          "document.getElementById('win').textContent=fmt(a)+' to '+fmt(b);}\n"
          "function zoom(k){var c=(a+b)/2,h=(b-a)*k/2;h=Math.max(h,1000);a=Math.max(0,c-h);"
          "b=Math.min(NSC.end,c+h);draw();}\n"
          "var z=document.getElementById('zoom');z.hidden=false;\n"
          "document.getElementById('zin').onclick=function(){zoom(0.5);};\n"
          "document.getElementById('zout').onclick=function(){zoom(2);};\n"
          "document.getElementById('zall').onclick=function(){a=0;b=NSC.end;draw();};\n"
          "o.addEventListener('click',function(ev){var r=o.getBoundingClientRect(),"
          "x=(ev.clientX-r.left)*NSC.W/r.width;if(x<NSC.L)return;var t=(x-NSC.L)/(NSC.W-NSC.L-NSC.R)*NSC.end,"
          "h=(b-a)/2;a=Math.max(0,t-h);b=Math.min(NSC.end,t+h);draw();});})();\n"
          "</script>\n",
          f);
    if (lo > 0 || hi < r->nstore)
        fprintf(f, "<p class='note'>Zooming draws the %zu operations nearest the window.</p>\n",
                hi - lo);
}

/* ---- tables from the stats ---- */

static void ops_table(FILE *f, const struct nsc_stats_result *s) {
    fputs("<table class='ops'><tr><th>comm</th><th>op</th><th>datatype</th><th>size &le;</th>"
          "<th>count</th><th>timing</th><th>GPU p50</th><th>GPU p99</th><th>wait p50</th>"
          "<th>wait p99</th><th>transfer p50</th><th>transfer p99</th><th>busbw GB/s</th>"
          "<th>algbw GB/s</th><th>bw from</th><th>queue p50</th><th>queue p99</th>"
          "<th>host p50</th><th>note</th></tr>\n",
          f);
    char t[9][32];
    for (size_t i = 0; i < s->nrows; i++) {
        const struct nsc_stats_row *x = &s->rows[i];
        char sz[24];
        nsc_stats_size_label(sz, sizeof(sz), x->bucket);
        fprintf(f, "<tr%s><td>%016llx</td><td>", x->host_only ? " class='host'" : "",
                (unsigned long long)x->comm_id);
        esc(f, x->func);
        fputs("</td><td>", f);
        esc(f, x->dtype);
        /* p50/p99: GPU time, or host time in host-only rows; none without
         * a completion (stats_model.c numbers()) */
        const double v[9] = {x->p50, x->p99, x->wait_p50, x->wait_p99, x->xfer_p50, x->xfer_p99,
                             x->queue_p50, x->queue_p99, x->host_p50};
        for (int k = 0; k < 9; k++)
            dur(t[k], sizeof(t[k]), v[k]);
        fprintf(f, "</td><td>%s</td><td>%llu</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                   "<td>%s</td><td>%s</td><td>%s</td>",
                sz, (unsigned long long)x->count, x->timing, t[0], t[1], t[2], t[3], t[4], t[5]);
        if (x->algbw < 0)
            fputs("<td>-</td><td>-</td><td>-</td>", f);
        else
            fprintf(f, "<td>%.2f</td><td>%.2f</td><td>%s</td>", x->busbw, x->algbw,
                    x->bw_from ? x->bw_from : "-");
        fprintf(f, "<td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", t[6], t[7], t[8],
                x->note);
    }
    fputs("</table>\n", f);
}

/* GPU p50 by size, one line per (comm, op, datatype); log-log axes. The
 * legend is an HTML list beside it: its entries wrap, they never overlap. */
static void latency_chart(FILE *f, const struct nsc_stats_result *s) {
    const double W = 640, H = 300, L = 70, R = 16, T = 14, B = 42;
    unsigned bmin = 63, bmax = 0;
    double lmin = 1e300, lmax = 0;
    for (size_t i = 0; i < s->nrows; i++) {
        double p = s->rows[i].p50 / 1e3;
        if (p <= 0)
            continue;
        if (s->rows[i].bucket < bmin)
            bmin = s->rows[i].bucket;
        if (s->rows[i].bucket > bmax)
            bmax = s->rows[i].bucket;
        lmin = p < lmin ? p : lmin;
        lmax = p > lmax ? p : lmax;
    }
    if (bmax < bmin || lmax <= 0) {
        fputs("<p>No operation with GPU time or a completion: no latency to draw (an enqueue is "
              "not one).</p>\n",
              f);
        return;
    }
    if (bmax == bmin)
        bmax = bmin + 1;
    double y0 = floor(log10(lmin)), y1 = ceil(log10(lmax));
    if (y1 <= y0)
        y1 = y0 + 1;
    fprintf(f, "<div class='chart'><svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
               "height='%.0f'>\n",
            W, H);
    for (double e = y0; e <= y1; e++) {
        double y = T + (H - T - B) * (1 - (e - y0) / (y1 - y0));
        fprintf(f, "<line x1='%.0f' x2='%.0f' y1='%.1f' y2='%.1f' stroke='#ddd'/>"
                   "<text x='%.0f' y='%.1f' text-anchor='end' font-size='11'>%g us</text>\n",
                L, W - R, y, y, L - 6, y + 4, pow(10, e));
    }
    unsigned every = (bmax - bmin) / 10 + 1;
    for (unsigned b = bmin; b <= bmax; b++) {
        if ((b - bmin) % every)
            continue;
        double x = L + (W - L - R) * (double)(b - bmin) / (double)(bmax - bmin);
        char lab[16];
        nsc_stats_size_label(lab, sizeof(lab), b);
        fprintf(f, "<text x='%.1f' y='%.0f' text-anchor='middle' font-size='11'>%s</text>\n", x,
                H - B + 16, lab);
    }
    fprintf(f, "<text x='%.0f' y='%.0f' text-anchor='middle' font-size='12'>message size (nccl-tests' "
               "convention)</text>\n",
            L + (W - L - R) / 2, H - 6);
    int series = 0;
    char names[64][112];
    for (size_t i = 0; i < s->nrows;) {
        size_t j = i;
        const struct nsc_stats_row *x = &s->rows[i];
        while (j < s->nrows && s->rows[j].comm_id == x->comm_id && s->rows[j].is_p2p == x->is_p2p &&
               !strcmp(s->rows[j].func, x->func) && !strcmp(s->rows[j].dtype, x->dtype))
            j++;
        if (series < 64) {
            fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2' points='",
                    colors[series % NOPS]);
            for (size_t k = i; k < j; k++) {
                double p = s->rows[k].p50 / 1e3;
                if (p <= 0)
                    continue;
                double px = L + (W - L - R) * (double)(s->rows[k].bucket - bmin) / (double)(bmax - bmin);
                double py = T + (H - T - B) * (1 - (log10(p) - y0) / (y1 - y0));
                fprintf(f, "%.1f,%.1f ", px, py);
            }
            fputs("'/>\n", f);
            /* a dot per size: a series of one size has no line */
            for (size_t k = i; k < j; k++) {
                double p = s->rows[k].p50 / 1e3;
                if (p <= 0)
                    continue;
                double px = L + (W - L - R) * (double)(s->rows[k].bucket - bmin) / (double)(bmax - bmin);
                double py = T + (H - T - B) * (1 - (log10(p) - y0) / (y1 - y0));
                fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3' fill='%s'/>", px, py,
                        colors[series % NOPS]);
            }
            snprintf(names[series], sizeof(names[0]), "%s %s%s", x->func, x->dtype,
                     x->host_only ? " (host: enqueue to completion)" : "");
            series++;
        }
        i = j;
    }
    fputs("</svg><ul class='legend' id='chart-legend'>", f);
    for (int i = 0; i < series; i++)
        legend_item(f, colors[i % NOPS], names[i]);
    fputs("</ul></div>\n", f);
}

/* A colour from white to red for a share of the largest cell. */
static void heat(FILE *f, double share) {
    int g = (int)(255 - 150 * share), b = (int)(255 - 160 * share);
    fprintf(f, " style='background:rgb(255,%d,%d)'", g, b);
}

static void wait_matrices(FILE *f, const struct nsc_stats_result *s) {
    char buf[32];
    for (size_t w = 0; w < s->nwaits; w++) {
        const struct nsc_stats_waits *m = &s->waits[w];
        int n = m->nranks;
        double max = 0;
        for (int i = 0; i < n * n; i++)
            max = (double)m->wait_ns[i] > max ? (double)m->wait_ns[i] : max;
        /* ranks that made someone wait or waited: the others add nothing */
        char *use = calloc((size_t)n, 1);
        if (!use)
            continue;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (m->count[i * n + j])
                    use[i] = use[j] = 1;
        fprintf(f, "<table class='waits' data-comm='%016llx'><caption>comm %016llx, %d ranks: "
                   "row rank's kernel started last; column rank's started first and waited"
                   "</caption>\n<tr><th>late &darr; / waited &rarr;</th>",
                (unsigned long long)m->comm_id, (unsigned long long)m->comm_id, n);
        for (int j = 0; j < n; j++)
            if (use[j])
                fprintf(f, "<th data-rank='%d'>rank %d</th>", j, j);
        fputs("<th>made others wait</th><th>last in</th><th>host-late</th><th>gpu-late</th></tr>\n",
              f);
        for (int i = 0; i < n; i++) {
            if (!use[i])
                continue;
            fprintf(f, "<tr><th data-rank='%d'>rank %d</th>", i, i);
            for (int j = 0; j < n; j++) {
                if (!use[j])
                    continue;
                uint64_t c = m->count[i * n + j];
                double v = (double)m->wait_ns[i * n + j];
                if (!c) {
                    fputs("<td></td>", f);
                    continue;
                }
                fputs("<td", f);
                heat(f, max > 0 ? v / max : 0);
                fprintf(f, " data-late='%d' data-waited='%d' data-wait-ns='%.0f'>%s<br><small>%llu&times;"
                           "</small></td>",
                        i, j, v, dur(buf, sizeof(buf), v), (unsigned long long)c);
            }
            const struct nsc_stats_late *lt = NULL;
            for (size_t k = 0; k < s->nlate; k++)
                if (s->late[k].comm_id == m->comm_id && s->late[k].rank == i)
                    lt = &s->late[k];
            if (lt)
                fprintf(f, "<td class='total' data-rank='%d'>%s</td><td>%llu of %llu</td><td>%llu</td>"
                           "<td>%llu</td>",
                        i, dur(buf, sizeof(buf), (double)lt->wait_ns), (unsigned long long)lt->last,
                        (unsigned long long)lt->colls, (unsigned long long)lt->host_late,
                        (unsigned long long)lt->gpu_late);
            else
                fputs("<td></td><td></td><td></td><td></td>", f);
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
        free(use);
    }
}

static void enqueue_table(FILE *f, const struct nsc_stats_result *s) {
    char buf[32];
    if (!s->nby_enqueue) {
        fputs("<p>No collective seen on more than one rank.</p>\n", f);
        return;
    }
    fputs("<table><tr><th>comm</th><th>seq</th><th>op</th><th>ranks</th><th>last rank</th>"
          "<th>first rank</th><th>lag</th></tr>\n",
          f);
    for (size_t i = 0; i < s->nby_enqueue; i++) {
        const struct nsc_stats_coll *c = &s->by_enqueue[i];
        fprintf(f, "<tr><td>%016llx</td><td>%llu</td><td>", (unsigned long long)c->comm_id,
                (unsigned long long)c->seq);
        esc(f, c->func);
        fprintf(f, "</td><td>%u</td><td>%d</td><td>%d</td><td>%s</td></tr>\n", c->ranks,
                c->last_rank, c->first_rank, dur(buf, sizeof(buf), (double)(c->last_ns - c->first_ns)));
    }
    fputs("</table>\n", f);
}

static void files_table(FILE *f, struct rep *r, const char *const *files, int nfiles) {
    fputs("<table class='files'><tr><th>file</th><th>host</th><th>pid</th><th>API</th>"
          "<th>records</th><th>records lost</th><th>complete</th></tr>\n",
          f);
    for (int i = 0; i < nfiles; i++) {
        const struct file_info *fi = &r->files[i];
        fputs("<tr><td>", f);
        esc(f, files[i]);
        if (!fi->opened) {
            fputs("</td><td colspan='6'>could not be read</td></tr>\n", f);
            continue;
        }
        fputs("</td><td>", f);
        esc(f, fi->host);
        if (fi->api)
            fprintf(f, "</td><td>%u</td><td>v%u</td><td>%llu</td><td>%llu", fi->pid, fi->api,
                    (unsigned long long)fi->records, (unsigned long long)fi->lost);
        else /* the Python package's session, no NCCL communicator */
            fprintf(f, "</td><td>%u</td><td>none</td><td>%llu</td><td>%llu", fi->pid,
                    (unsigned long long)fi->records, (unsigned long long)fi->lost);
        if (fi->lost != fi->dropped)
            fprintf(f, " (%llu dropped, %llu to write errors, %llu at exit)",
                    (unsigned long long)fi->dropped, (unsigned long long)fi->write,
                    (unsigned long long)fi->exit);
        if (fi->unnamed)
            fprintf(f, "; %llu events named \"?\"", (unsigned long long)fi->unnamed);
        fprintf(f, "</td><td>%s</td></tr>\n", fi->ended ? "yes" : "no (crashed or still running)");
    }
    fputs("</table>\n", f);
}

static const char style[] =
    "<style>body{font-family:sans-serif;margin:24px;color:#222;max-width:1160px}"
    "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;"
    "padding:3px 8px;font-size:13px;text-align:right}th{background:#eee}"
    "caption{text-align:left;font-size:13px;padding:4px 0}"
    "table.ops td:nth-child(2),table.ops td:nth-child(3),table.ops td:nth-child(6),"
    "table.files td:first-child{text-align:left}tr.host td{color:#777;font-style:italic}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}p{font-size:14px;max-width:1100px}"
    ".note{font-size:12px;color:#666}"
    "ul.legend{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 16px;"
    "font-size:13px}ul.legend li{display:flex;align-items:center;white-space:nowrap}"
    ".sw{display:inline-block;width:12px;height:12px;margin-right:5px;flex:none}"
    ".chart{display:flex;gap:20px;align-items:flex-start}"
    ".chart ul.legend{flex-direction:column;flex-wrap:nowrap;max-width:300px}"
    "svg{display:block}#overview{cursor:crosshair}"
    "button{font-size:13px;margin-right:6px}"
    "pre{background:#f5f5f5;padding:8px;font-size:12px}</style>";

static void body(FILE *f, struct rep *r, const struct nsc_stats_result *s, const char *const *files,
                 int nfiles, const char *alignment_text) {
    char b1[32], b2[32], b3[32];
    struct lane *lanes = calloc(MAX_LANES, sizeof(*lanes));
    int nl = lanes ? make_lanes(r, lanes) : 0;
    struct view v = {0};
    v.g = r->nint[K_GPU] ? K_GPU : r->nint[K_HOST] ? K_HOST : K_ENQ;
    v.W = 1100;
    v.L = 250;
    v.R = 12;
    /* sort lanes, then renumber the keys */
    if (nl) {
        int *old = malloc((size_t)nl * sizeof(int));
        for (int l = 0; l < nl; l++)
            lanes[l].busy[0] = (double)l; /* carry the old index */
        qsort(lanes, (size_t)nl, sizeof(*lanes), cmp_lane);
        if (old) {
            for (int l = 0; l < nl; l++)
                old[(int)lanes[l].busy[0]] = l;
            for (int k = 0; k < r->nkeys; k++)
                if (r->keys[k].lane >= 0)
                    r->keys[k].lane = old[r->keys[k].lane];
            free(old);
        }
        for (int l = 0; l < nl; l++)
            memset(lanes[l].busy, 0, sizeof(lanes[l].busy));
        for (int k = 0; k < r->nkeys; k++)
            for (int g = 0; g < NKINDS; g++)
                if (r->keys[k].lane >= 0 && r->keys[k].bins[g])
                    for (int i = 0; i < NB * NOPS; i++)
                        lanes[r->keys[k].lane].busy[g] += r->keys[k].bins[g][i];
    }
    int have = r->grid[v.g] && r->nint[v.g];
    if (have) {
        v.b0 = (int)((r->lo[v.g] - r->origin[v.g]) / r->width[v.g]);
        v.b1 = (int)((r->hi[v.g] - 1 - r->origin[v.g]) / r->width[v.g]);
        v.t0 = r->origin[v.g] + (uint64_t)v.b0 * r->width[v.g];
        v.t1 = r->origin[v.g] + (uint64_t)(v.b1 + 1) * r->width[v.g];
    }
    /* summary: the lead numbers */
    uint64_t gops = 0, rops = 0;
    for (size_t i = 0; i < s->nrows; i++) {
        gops += s->rows[i].gpu_ops;
        rops += s->rows[i].rank_ops;
    }
    fprintf(f, "<p id='summary'>%d trace file(s), %d rank lane(s), %llu rank-operations",
            nfiles, nl, (unsigned long long)s->ops);
    if (have)
        fprintf(f, " over %s", dur(b1, sizeof(b1), (double)(r->hi[v.g] - r->lo[v.g])));
    uint64_t enq = 0;
    for (size_t i = 0; i < s->nrows; i++)
        if (!s->rows[i].bw_from && !s->rows[i].unsampled)
            enq += s->rows[i].rank_ops;
    if (gops)
        fprintf(f, "; %llu with GPU time (KernelCh %%globaltimer). Times below are GPU time "
                   "unless marked host (enqueue to completion on the host).",
                (unsigned long long)gops);
    else if (v.g == K_HOST)
        fprintf(f, "; none with GPU time (no KernelCh recorded, or a replayed trace whose GPU "
                   "timers do not match its host clock): times are host time, enqueue to "
                   "completion.");
    if (s->skipped)
        fprintf(f, " %llu rank-operations left out as warm-up (--skip-first).",
                (unsigned long long)s->skipped);
    if (s->outside)
        fprintf(f, " %llu rank-operations outside the --time window left out.",
                (unsigned long long)s->outside);
    fputs("</p>\n", f);
    if (s->sampled_ops < s->kernel_ops)
        fprintf(f, "<p id='kernel-sample'><b>KernelCh sampled</b> "
                   "(<code>NCCLSCOPE_KERNEL_SAMPLE</code>, docs/config.md): %llu of %llu "
                   "rank-operations asked for KernelCh, for GPU time and a completion of their "
                   "own. GPU percentiles, "
                   "wait, transfer and bandwidths (timing <i>gpu (sampled)</i>) come from those "
                   "only, and the lanes below show the GPU time of that sample, not of every "
                   "kernel.</p>\n",
                (unsigned long long)s->sampled_ops, (unsigned long long)s->kernel_ops);
    if (enq)
        fprintf(f, "<p id='no-completion'><b>No completion recorded (enqueue only)</b> for %llu "
                   "rank-operations: the trace has no KernelCh (nor ProxyOp, which only network "
                   "transfers have), so they have no latency and no bandwidth, only their enqueue. "
                   "Record KernelCh for GPU time: <code>NCCLSCOPE_EVENTS=default,KernelCh</code> "
                   "(docs/config.md).</p>\n",
                (unsigned long long)enq);
    /* the largest GPU-time operation groups first */
    fputs("<h2>Operations: GPU time, then queue time</h2>\n", f);
    ops_table(f, s);
    fputs("<p class='note'>GPU p50/p99: GPU time, first KernelCh %globaltimer start to last GPU "
          "end across channels. Wait: GPU start to the last rank's GPU start; transfer: the last "
          "rank's GPU start to GPU end (AllReduce, AllGather, ReduceScatter and AlltoAll whose "
          "every rank has GPU times on the aligned timeline; a Broadcast's or Reduce's rank can "
          "finish before the last starts). busbw/algbw (nccl-tests' formulas) from the p50 of "
          "the time in <i>bw from</i>: transfer where every rank-operation of the row has one "
          "(no waiting for peers, as nccl-tests measures), else GPU time. Queue: enqueue to GPU "
          "start. Host: enqueue to completion on the host. Rows in grey italics have no KernelCh: "
          "their p50/p99 are host time, their bandwidths from it; rows without any completion "
          "show none (enqueue to the Coll's stop is not the operation's time). Count: distinct "
          "collectives in the files given.</p>\n",
          f);
    fputs("<h2>Latency by message size (p50: GPU time; host: enqueue to completion)</h2>\n", f);
    latency_chart(f, s);
    /* the lanes */
    fprintf(f, "<h2>%s per rank over the job</h2>\n",
            v.g == K_GPU    ? "GPU time"
            : v.g == K_HOST ? "Host time (enqueue to completion)"
                            : "Enqueue time (no completion recorded)");
    if (!have) {
        fputs("<p>No completed operation to draw.</p>\n", f);
    } else {
        double *bins = calloc((size_t)nl * NB * NOPS, sizeof(double));
        double full = 1;
        if (bins) {
            for (int k = 0; k < r->nkeys; k++)
                if (r->keys[k].lane >= 0 && r->keys[k].bins[v.g])
                    for (int i = 0; i < NB * NOPS; i++)
                        bins[(size_t)r->keys[k].lane * NB * NOPS + (size_t)i] += r->keys[k].bins[v.g][i];
            full = lane_scale(r, &v, nl, bins);
        }
        fprintf(f, "<p>Each lane is one GPU; each of its %d bins (%s wide) is filled by the share of "
                   "the bin %s, stacked by operation; <b id='scale'>a full lane is %g%% of the "
                   "bin</b>. The percentage is the lane's share of the whole job. Hover for totals; "
                   "with scripts on, click to move the window below.</p>\n",
                v.b1 - v.b0 + 1, dur(b1, sizeof(b1), (double)r->width[v.g]),
                v.g == K_GPU ? "its GPU ran NCCL kernels"
                : v.g == K_ENQ ? "the host spent enqueuing operations (no completion recorded: "
                                 "this is not how long they took)"
                : gops ? "spent between enqueue and completion (the GPU timers are not on the "
                         "host clock here: a replayed trace, or no clock mapping)"
                       : "spent between enqueue and completion (no GPU time in this trace)",
                full * 100);
        fputs("<ul class='legend' id='op-legend'>", f);
        for (int o = 0; o < r->nops; o++)
            legend_item(f, colors[o], r->ops[o]);
        fputs("</ul>\n", f);
        if (bins) {
            overview(f, r, &v, lanes, nl, bins, full);
            free(bins);
        }
        if (r->keys_full || nl == MAX_LANES)
            fprintf(f, "<p class='note'>Only the first %d lanes are drawn.</p>\n", nl);
        /* the window: around the collective whose kernels started furthest
         * apart (GPU), else whose enqueues were (host) */
        const struct nsc_stats_coll *mark = NULL;
        int mark_gpu = 0;
        if (!v.g && s->worst_gpu.ranks) {
            mark = &s->worst_gpu;
            mark_gpu = 1;
        } else if (s->nby_enqueue) {
            mark = &s->by_enqueue[0];
        }
        uint64_t span = v.t1 - v.t0, width = span / 40, c = v.t0 + span / 2;
        if (mark && mark->last_ns >= mark->first_ns && mark->first_ns >= v.t0) {
            uint64_t lag = mark->last_ns - mark->first_ns;
            width = lag * 4 > width ? lag * 4 : width;
            c = mark->first_ns + lag / 2;
        } else { /* no straggler: the busiest bin over all lanes */
            double best = -1;
            for (int bi = v.b0; bi <= v.b1; bi++) {
                double sum = 0;
                for (int k = 0; k < r->nkeys; k++)
                    if (r->keys[k].bins[v.g])
                        for (int o = 0; o < NOPS; o++)
                            sum += r->keys[k].bins[v.g][bi * NOPS + o];
                if (sum > best) {
                    best = sum;
                    c = r->origin[v.g] + (uint64_t)bi * r->width[v.g] + r->width[v.g] / 2;
                }
            }
        }
        if (width < 2000)
            width = 2000;
        if (width > span)
            width = span;
        uint64_t a = c > v.t0 + width / 2 ? c - width / 2 : v.t0;
        if (a + width > v.t1)
            a = v.t1 > width ? v.t1 - width : v.t0;
        uint64_t b = a + width;
        fprintf(f, "<h2>Window: single operations, <span id='win'>%s to %s</span></h2>\n",
                dur(b1, sizeof(b1), (double)(a - v.t0)), dur(b2, sizeof(b2), (double)(b - v.t0)));
        if (mark && mark_gpu)
            fprintf(f, "<p>Around %s #%llu, the collective whose kernels started furthest apart: "
                       "rank %d's started %s after rank %d's (dashed line: first GPU start, red: "
                       "last).</p>\n",
                    mark->func, (unsigned long long)mark->seq, mark->last_rank,
                    dur(b3, sizeof(b3), (double)(mark->last_ns - mark->first_ns)), mark->first_rank);
        else if (mark)
            fprintf(f, "<p>Around %s #%llu, the collective whose enqueues were furthest apart: rank "
                       "%d entered %s after rank %d (lines: first and last enqueue).</p>\n",
                    mark->func, (unsigned long long)mark->seq, mark->last_rank,
                    dur(b3, sizeof(b3), (double)(mark->last_ns - mark->first_ns)), mark->first_rank);
        fputs("<p id='zoom' hidden><button id='zin'>zoom in</button><button id='zout'>zoom out"
              "</button><button id='zall'>whole job</button></p>\n",
              f);
        qsort(r->store, r->nstore, sizeof(*r->store), v.g ? cmp_host : cmp_gpu);
        detail(f, r, &v, lanes, nl, a, b, mark, mark_gpu);
        if (r->stride > 1)
            fprintf(f, "<p class='note'>%zu of %zu operations are kept for the window (thinned "
                       "evenly); the lanes above count all.</p>\n",
                    r->nstore, r->seen);
        embed(f, r, &v, lanes, nl, a, b);
    }
    fputs("<h2>Stragglers by GPU start: who made whom wait</h2>\n", f);
    if (s->nwaits) {
        fputs("<p>In each collective whose every rank has a GPU start, the rank whose kernel started "
              "last made the others wait; the cell adds up how long the rank that started first "
              "waited for it (last minus first GPU start) and how often. A row's sum is the rank's "
              "total in <code>ncclscope stats</code>; host-late: it was enqueued late, gpu-late: "
              "enqueued on time, its stream started the kernel late.</p>\n",
              f);
        wait_matrices(f, s);
    } else {
        fputs("<p>No collective with every rank's GPU start (KernelCh) in these files.</p>\n", f);
    }
    fputs("<h2>Stragglers by enqueue</h2>\n<p>Collectives whose last rank entered latest after the "
          "first (same commHash, function and seqNumber).</p>\n",
          f);
    enqueue_table(f, s);
    fputs("<h2>Files</h2>\n", f);
    files_table(f, r, files, nfiles);
    if (alignment_text && *alignment_text) {
        fputs("<h2>Clock alignment</h2>\n<pre>", f);
        esc(f, alignment_text);
        fputs("</pre>\n", f);
    }
    free(lanes);
}

int nsc_report(const char *const *files, int nfiles, const int64_t *shift_ns, const char *out_path,
               const char *alignment_text, const struct nsc_report_window *w) {
    FILE *f = stdout;
    struct nsc_out of;
    char err[1200];
    struct rep *r = calloc(1, sizeof(*r));
    if (!r || !(r->keys = calloc(MAX_KEYS, sizeof(*r->keys))) ||
        !(r->store = malloc(MAX_STORE * sizeof(*r->store))) ||
        !(r->files = calloc((size_t)nfiles + 1, sizeof(*r->files)))) {
        fprintf(stderr, "ncclscope report: out of memory\n");
        if (r) {
            free(r->keys);
            free(r->store);
        }
        free(r);
        return 3;
    }
    r->stride = 1;
    struct nsc_stats_hooks hooks = {on_op, on_file, r};
    struct nsc_stats_opts so = {files, nfiles, shift_ns, 0, 20, NULL, 0, &hooks, "report"};
    if (w) {
        so.skip_first = w->skip_first;
        so.window = w->window;
        so.t_from = w->t_from;
        so.t_to = w->t_to;
        so.jobs = w->jobs;
    }
    struct nsc_stats_result s;
    int rc = nsc_stats_collect(&so, &s);
    if (rc == 3 || r->oom) {
        if (rc != 3)
            fprintf(stderr, "ncclscope report: out of memory\n");
        rc = 3;
        goto out;
    }
    if (strcmp(out_path, "-") != 0) {
        if (nsc_out_open(&of, out_path, files, nfiles, err, sizeof(err)) != 0) {
            fprintf(stderr, "ncclscope report: cannot write %s\n", err);
            rc = 3;
            goto out;
        }
        if (!(f = fdopen(of.fd, "w"))) {
            fprintf(stderr, "ncclscope report: cannot write %s: %s\n", out_path, strerror(errno));
            close(of.fd);
            nsc_out_finish(&of, 0, err, sizeof(err));
            rc = 3;
            goto out;
        }
    }
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>ncclscope report</title>\n"
               "%s</head><body>\n<h1>ncclscope report</h1>\n",
            style);
    body(f, r, &s, files, nfiles, alignment_text);
    fprintf(f, "<p class='note'>Written by ncclscope %s. Self-contained: nothing is fetched; the "
               "page reads without scripts (they only zoom the window). For every event, convert "
               "the same files with <code>ncclscope convert</code> and open them in Perfetto.</p>\n"
               "</body></html>\n",
            NSC_VERSION);
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
    if (werr)
        rc = 3;
out:
    nsc_stats_result_free(&s);
    for (int k = 0; k < r->nkeys; k++) {
        for (int g = 0; g < NKINDS; g++)
            free(r->keys[k].bins[g]);
    }
    free(r->keys);
    free(r->store);
    free(r->files);
    free(r);
    return rc;
}
