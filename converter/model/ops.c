// SPDX-License-Identifier: Apache-2.0
/* ops.c - one pass per file through the operation tracker (ops.h). */
#include "ops.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoded.h"
#include "event_types.h"
#include "gpu_clock.h"
#include "op_rules.h"
#include "python_view.h"
#include "result.h"

struct pass {
    const struct nsc_ops_hooks *h;
    void *ud;
    int64_t shift;
    struct nsc_coll_track *t;
    int oom, damaged;
    int session; /* the session hook was called */
};

/* The session hook, once per file. */
static void session_once(struct pass *p, const struct nsc_decoder *d) {
    if (p->session)
        return;
    p->session = 1;
    if (p->h->session)
        p->h->session(p->ud, d);
}

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    struct pass *p = ud;
    if (!p->t && !p->oom) {
        /* The SESSION block came first: the tracker knows the event mask. */
        session_once(p, d);
        if (!(p->t = nsc_track_new(d, p->shift, p->h->op, p->ud)))
            p->oom = 1;
    }
    if (p->h->record)
        p->h->record(p->ud, d, thread, r);
    if (p->t)
        nsc_track_record(p->t, thread, r, ext);
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct pass *p = ud;
    p->damaged = 1;
    if (p->h->error)
        p->h->error(p->ud, msg);
}

static void on_hang_block(void *ud, struct nsc_decoder *d, const void *data, size_t len) {
    struct pass *p = ud;
    if (p->h->hang)
        p->h->hang(p->ud, d, data, len);
}

static void no_op(void *ud, const struct nsc_op_done *op) {
    (void)ud;
    (void)op;
}

int nsc_ops_pass(const char *path, int64_t shift_ns, const struct nsc_ops_hooks *h, void *ud) {
    struct nsc_ops_hooks hooks = *h;
    if (!hooks.op)
        hooks.op = no_op;
    struct pass p = {&hooks, ud, shift_ns, NULL, 0, 0, 0};
    struct nsc_decoder d;
    if (nsc_decoder_open(&d, path) != NSC_OK) {
        if (h->error)
            h->error(ud, nsc_decoder_error(&d));
        return 3;
    }
    struct nsc_decode_ops ops = {.record = on_record, .error = on_error, .hang = on_hang_block};
    nsc_decoder_run(&d, &ops, &p);
    /* A file with its SESSION block and no record (a rank killed before its
     * first flush) still says what it records: without this, hang counted
     * it among the files that record no KernelCh (mask 0). */
    if (nsc_decoder_session(&d))
        session_once(&p, &d);
    nsc_track_finish(p.t);
    if (h->done)
        h->done(ud, &d);
    nsc_decoder_close(&d);
    if (p.oom)
        return -1;
    return p.damaged ? 2 : 0;
}

int nsc_dec_read_session(const char *path, struct nsc_session *s) {
    struct nsc_decoder d;
    if (nsc_decoder_open(&d, path) != NSC_OK)
        return -1;
    static const struct nsc_decode_ops none;
    nsc_decoder_step(&d, &none, NULL); /* the first block: the SESSION block */
    const struct nsc_session *got = nsc_decoder_session(&d);
    if (got)
        *s = *got;
    nsc_decoder_close(&d);
    return got ? 0 : -1;
}

uint64_t nsc_op_bytes(const struct nsc_op_done *op) {
    uint64_t b = op->count * (uint64_t)nsc_dtype_size(op->dtype);
    return (uint64_t)((double)b * nsc_op_size_factor(op->func, op->is_p2p, op->nranks));
}

/* ---- rows ---- */

struct rows {
    nsc_op_row_fn fn;
    void *ud;
    int stop;
    const struct nsc_decoder *d;
    struct nsc_gpu_clock *gpu;
    uint32_t ngpu;
    uint32_t *last_api;   /* per thread: py_stack string id of its last API call */
    uint32_t nthreads;
    char *err;
    size_t errlen;
};

/* An operation's caller: the Python stack of the last NCCL API call of the
 * thread that enqueued it (the API call is its parent from v5 on, and the
 * same thread's last one before). */
static void rows_record(void *ud, const struct nsc_decoder *d, uint32_t thread,
                        const struct nsc_rec *r) {
    struct rows *w = ud;
    w->d = d;
    if (r->h.kind != NSC_REC_START ||
        (r->h.etype != NSC_ET_COLL_API && r->h.etype != NSC_ET_P2P_API &&
         r->h.etype != NSC_ET_GROUP_API))
        return;
    if (thread >= w->nthreads) {
        uint32_t n = thread + 16;
        uint32_t *v = realloc(w->last_api, n * sizeof(*v));
        if (!v)
            return;
        memset(v + w->nthreads, 0, (n - w->nthreads) * sizeof(*v));
        w->last_api = v;
        w->nthreads = n;
    }
    uint32_t id = nsc_py_stack_id(r);
    if (id || r->h.etype != NSC_ET_GROUP_API) /* a group keeps the caller of what it groups */
        w->last_api[thread] = id;
}

static void rows_op(void *ud, const struct nsc_op_done *op) {
    struct rows *w = ud;
    if (w->stop)
        return;
    struct nsc_op_row row;
    memset(&row, 0, sizeof(row));
    const struct nsc_comm_info *ci = w->d ? nsc_decoder_comm(w->d, op->comm_serial) : NULL;
    row.comm_id = op->comm_id;
    row.comm_name = ci ? ci->name : "";
    row.rank = op->rank;
    row.nranks = op->nranks;
    row.op = op->func ? op->func : "?";
    row.seq = op->seq;
    row.is_p2p = op->is_p2p;
    row.peer = op->is_p2p ? op->peer : -1;
    row.enqueue_ns = op->start_ns;
    row.end_ns = op->end_ns ? op->end_ns : op->stop_ns;
    if (op->gpu_start && op->gpu_end > op->gpu_start) {
        row.gpu_ns = op->gpu_end - op->gpu_start;
        const struct nsc_gpu_clock *g =
            op->comm_serial < w->ngpu && w->gpu[op->comm_serial].have ? &w->gpu[op->comm_serial]
                                                                     : NULL;
        if (g) {
            row.gpu_start_ns = nsc_shift_ns(op->gpu_start, g->offset_ns);
            row.gpu_end_ns = nsc_shift_ns(op->gpu_end, g->offset_ns);
            row.queue_ns = row.gpu_start_ns > op->start_ns ? row.gpu_start_ns - op->start_ns : 0;
        }
    }
    row.count = op->count;
    row.bytes = nsc_op_bytes(op);
    row.dtype = op->dtype;
    row.algo = op->algo;
    row.proto = op->proto;
    row.channels = op->nch;
    row.at_end = op->at_end;
    row.sampled = op->sampled;
    row.inferred = op->inferred;
    char caller[256];
    uint32_t sid = op->thread < w->nthreads ? w->last_api[op->thread] : 0;
    const char *s = sid && w->d ? nsc_decoder_str(w->d, sid) : NULL;
    if (s) {
        size_t n = strcspn(s, "\n");
        if (n >= sizeof(caller))
            n = sizeof(caller) - 1;
        memcpy(caller, s, n);
        caller[n] = '\0';
        row.py_caller = caller;
    }
    if (w->fn(w->ud, &row))
        w->stop = 1;
}

static void rows_error(void *ud, const char *msg) {
    struct rows *w = ud;
    if (w->err && w->errlen && !w->err[0])
        snprintf(w->err, w->errlen, "%s", msg);
}

static void rows_session(void *ud, const struct nsc_decoder *d) {
    struct rows *w = ud;
    w->d = d;
}

int nsc_ops_rows(const char *path, int64_t shift_ns, nsc_op_row_fn fn, void *ud, char *err,
                 size_t errlen) {
    struct rows w;
    memset(&w, 0, sizeof(w));
    w.fn = fn;
    w.ud = ud;
    w.err = err;
    w.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    /* The GPU clock needs the whole file's KernelCh before the first row. A
     * replay re-timed the host calls and kept the recorded GPU timers: its
     * GPU times stand, its mapping does not (no GPU start then). */
    struct nsc_session s;
    if (nsc_dec_read_session(path, &s) == 0 && (s.event_mask >> NSC_ET_KERNEL_CH) & 1 &&
        !nsc_session_replayed(&s) && nsc_gpu_clock_scan(path, shift_ns, &w.gpu, &w.ngpu) != 0) {
        w.gpu = NULL;
        w.ngpu = 0;
    }
    struct nsc_ops_hooks h = {.session = rows_session, .record = rows_record, .op = rows_op,
                              .error = rows_error};
    int rc = nsc_ops_pass(path, shift_ns, &h, &w);
    free(w.gpu);
    free(w.last_api);
    return rc;
}
