// SPDX-License-Identifier: Apache-2.0
/* test_conv_ops.c - operations from a file (converter/model/coll_track.h
 * through model/ops.h): a collective joined with its KernelCh children on
 * another thread (GPU interval = first start to last end across channels,
 * completion = last child's stop), children written before their
 * collective's START, an operation in flight at the end with its open
 * child, a session without children (enqueue only), and the per-file rows
 * API (GPU times on the host clock, queue time, bytes, caller). */
#include "check.h"
#include "conv_trace.h"
#include "ops.h"

static const char *const strs[] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE", NULL};
#define MASK_GPU ((1u << NSC_ET_COLL) | (1u << NSC_ET_KERNEL_CH))

/* host = GPU + 1000 (the fastest notice: KernelCh 12, no delay) */
static void build(struct ct_trace *t) {
    ct_begin(t, MASK_GPU, "h", 1, 0, strs, 0xc0ffee, 2, 4);
    ct_coll(t, 0, 10, 1900, 1, 256, 2);
    ct_rec(t, 0, NSC_REC_STOP, NSC_ET_COLL, 10, 1950);
    ct_kernel_ch(t, 1, 11, 10, 0, 1960, 1050, 1150, 2160);
    ct_kernel_ch(t, 1, 12, 10, 1, 1970, 1000, 1200, 2200);
    /* op 20: its KernelCh is in the file before its START (drain order) */
    ct_kernel_ch(t, 1, 21, 20, 0, 3050, 2100, 2150, 3170);
    ct_coll(t, 0, 20, 3000, 2, 1024, 1);
    ct_rec(t, 0, NSC_REC_STOP, NSC_ET_COLL, 20, 3010);
    /* op 30: in flight when the file ends; its channel never stopped */
    ct_coll(t, 0, 30, 4000, 3, 8, 1);
    ct_rec(t, 0, NSC_REC_STOP, NSC_ET_COLL, 30, 4010);
    struct nsc_rec *k = ct_rec(t, 1, NSC_REC_START, NSC_ET_KERNEL_CH, 31, 4020);
    k->u.start.parent = 30;
    k->u.start.d.kernel_ch.ch = 5;
    k->u.start.d.kernel_ch.ptimer = 3100;
    ct_finish(t);
}

struct got {
    struct nsc_op_done op[8];
    struct nsc_track_child open[8];
    unsigned n, nopen;
    int errors;
};

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct got *g = ud;
    if (g->n < 8) {
        g->op[g->n] = *op;
        g->op[g->n].func = g->op[g->n].dtype = g->op[g->n].algo = g->op[g->n].proto = NULL;
        if (op->nopen && g->nopen + op->nopen <= 8) {
            memcpy(g->open + g->nopen, op->open, op->nopen * sizeof(*op->open));
            g->nopen += op->nopen;
        }
        CHECK(op->func && !strcmp(op->func, "AllReduce") && op->algo && !strcmp(op->algo, "RING"));
        g->n++;
    }
}

/* counts (struct counted in children_far_ahead): operations, those with
 * their one channel done, those in flight at the end */
static void count_op(void *ud, const struct nsc_op_done *op) {
    unsigned *c = ud;
    c[0]++;
    c[1] += op->kernel_channels_done == 1 && op->gpu_end != 0;
    c[2] += op->at_end != 0;
}

static void on_error(void *ud, const char *msg) {
    struct got *g = ud;
    g->errors++;
    fprintf(stderr, "unexpected: %s\n", msg);
}

static void operations(const char *path) {
    struct got g;
    memset(&g, 0, sizeof(g));
    struct nsc_ops_hooks h = {.op = on_op, .error = on_error};
    CHECK(nsc_ops_pass(path, 0, &h, &g) == 0);
    CHECK(g.errors == 0);
    CHECK(g.n == 3);
    const struct nsc_op_done *a = &g.op[0], *b = &g.op[1], *c = &g.op[2];
    CHECK(a->id == 10 && a->seq == 1 && a->rank == 2 && a->nranks == 4 && a->comm_id == 0xc0ffee);
    CHECK(a->start_ns == 1900 && a->stop_ns == 1950 && a->end_ns == 2200);
    CHECK(a->gpu_start == 1000 && a->gpu_end == 1200);
    CHECK(a->children == 2 && a->kernel_channels_done == 2 && !a->at_end);
    CHECK(b->id == 20 && b->children == 1 && b->gpu_start == 2100 && b->gpu_end == 2150 &&
          b->end_ns == 3170 && !b->at_end);
    CHECK(c->id == 30 && c->at_end && c->nopen == 1 && c->children == 1 &&
          c->kernel_channels_done == 0 && c->gpu_start == 3100 && c->gpu_end == 0);
    CHECK(g.nopen == 1 && g.open[0].id == 31 && g.open[0].op_id == 30 && g.open[0].ch == 5 &&
          g.open[0].etype == NSC_ET_KERNEL_CH);
    /* shift moves every host time, never a GPU timer */
    memset(&g, 0, sizeof(g));
    CHECK(nsc_ops_pass(path, 500, &h, &g) == 0);
    CHECK(g.n == 3 && g.op[0].start_ns == 2400 && g.op[0].end_ns == 2700 &&
          g.op[0].gpu_start == 1000);
}

/* Without KernelCh or ProxyOp in the session: done at the Coll's STOP. */
static void enqueue_only(void) {
    struct ct_trace t;
    ct_begin(&t, 1u << NSC_ET_COLL, "h", 1, 0, strs, 1, 0, 2);
    ct_coll(&t, 0, 10, 2000, 9, 4, 2);
    ct_rec(&t, 0, NSC_REC_STOP, NSC_ET_COLL, 10, 2500);
    ct_finish(&t);
    char path[64];
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    struct got g;
    memset(&g, 0, sizeof(g));
    struct nsc_ops_hooks h = {.op = on_op};
    CHECK(nsc_ops_pass(path, 0, &h, &g) == 0);
    CHECK(g.n == 1 && g.op[0].stop_ns == 2500 && g.op[0].end_ns == 0 && !g.op[0].at_end);
    unlink(path);
    free(t.b.p);
    CHECK(nsc_ops_pass("/nonexistent/x.nsc", 0, &h, &g) == 3);
}

struct rows {
    struct nsc_op_row r[8];
    char caller[8][64];
    unsigned n;
};

static int on_row(void *ud, const struct nsc_op_row *row) {
    struct rows *w = ud;
    if (w->n < 8) {
        w->r[w->n] = *row;
        snprintf(w->caller[w->n], 64, "%s", row->py_caller ? row->py_caller : "");
        w->n++;
    }
    return 0;
}

static void rows(const char *path) {
    struct rows w;
    memset(&w, 0, sizeof(w));
    char err[256];
    CHECK(nsc_ops_rows(path, 0, on_row, &w, err, sizeof(err)) == 0);
    CHECK(w.n == 3);
    const struct nsc_op_row *a = &w.r[0], *b = &w.r[1];
    CHECK(a->rank == 2 && a->seq == 1 && a->comm_id == 0xc0ffee && a->channels == 2);
    CHECK(a->enqueue_ns == 1900 && a->end_ns == 2200);
    /* offset 1000: GPU 1000..1200 is host 2000..2200, 100 ns after the enqueue */
    CHECK(a->gpu_start_ns == 2000 && a->gpu_end_ns == 2200 && a->gpu_ns == 200);
    CHECK(a->queue_ns == 100);
    CHECK(a->bytes == 256 * 4 && a->count == 256); /* AllReduce: count x float32 */
    CHECK(b->gpu_start_ns == 3100 && b->queue_ns == 100 && b->gpu_ns == 50);
    CHECK(w.r[2].at_end && w.r[2].gpu_ns == 0 && w.r[2].gpu_start_ns == 0);
    CHECK(!strcmp(w.caller[0], "")); /* no Python stack recorded */
}

/* One thread's ring drained far ahead of another's: 20,000 operations,
 * KernelCh records before any of their Colls. Every operation completes
 * with its channel (a direct-mapped table of 16,384 parents forgot the
 * older of two colliding ones: their operations looked stuck). */
static void children_far_ahead(void) {
    enum { N = 20000 };
    struct ct_trace t;
    ct_begin(&t, MASK_GPU, "h", 1, 0, strs, 7, 0, 2);
    for (uint64_t i = 0; i < N; i++)
        ct_kernel_ch(&t, 1, 100000 + i, 1 + i, 0, 10000 + 10 * i, 1000 + 10 * i, 1005 + 10 * i,
                     10008 + 10 * i);
    for (uint64_t i = 0; i < N; i++) {
        ct_coll(&t, 0, 1 + i, 9000 + 10 * i, i, 256, 1);
        ct_rec(&t, 0, NSC_REC_STOP, NSC_ET_COLL, 1 + i, 9001 + 10 * i);
    }
    ct_finish(&t);
    char path[64];
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    struct counted {
        unsigned n, done, at_end;
    } c = {0, 0, 0};
    struct nsc_ops_hooks h = {.op = count_op};
    CHECK(nsc_ops_pass(path, 0, &h, &c) == 0);
    CHECK(c.n == N && c.done == N && c.at_end == 0);
    unlink(path);
    free(t.b.p);
}

int main(void) {
    struct ct_trace t;
    build(&t);
    char path[64];
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    operations(path);
    rows(path);
    unlink(path);
    free(t.b.p);
    enqueue_only();
    children_far_ahead();
    return check_summary();
}
