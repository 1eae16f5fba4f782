// SPDX-License-Identifier: Apache-2.0
/* python_view.c - Python slices and callers in the converter's output. */
#include "python_view.h"

#include <stdlib.h>
#include <string.h>

#include "event_types.h"

#define MAX_SERIALS 4     /* comm processes one Python call is copied into */
#define MAX_DEPTH 4096    /* deeper calls are counted, not drawn */
#define RESYNC 16         /* an exit may close this many calls above its own */

struct frame {
    uint64_t start;
    uint32_t loc;
    uint8_t c_call, nserial;
    uint32_t serial[MAX_SERIALS];
};

struct pythread {
    struct frame *f;
    uint32_t n, cap, too_deep;
};

struct nsc_pyview {
    nsc_py_slice_fn fn;
    void *ud;
    struct pythread *t;
    uint32_t nt;
    uint64_t calls, skipped, unmatched;
};

struct nsc_pyview *nsc_pyview_new(nsc_py_slice_fn fn, void *ud) {
    struct nsc_pyview *v = calloc(1, sizeof(*v));
    if (v) {
        v->fn = fn;
        v->ud = ud;
    }
    return v;
}

void nsc_pyview_free(struct nsc_pyview *v) {
    if (!v)
        return;
    for (uint32_t i = 0; i < v->nt; i++)
        free(v->t[i].f);
    free(v->t);
    free(v);
}

static struct pythread *thread_of(struct nsc_pyview *v, uint32_t i) {
    if (i >= 65536)
        return NULL;
    if (i >= v->nt) {
        uint32_t n = i + 8;
        struct pythread *t = realloc(v->t, n * sizeof(*t));
        if (!t)
            return NULL;
        memset(t + v->nt, 0, (n - v->nt) * sizeof(*t));
        v->t = t;
        v->nt = n;
    }
    return &v->t[i];
}

static void add_serial(struct frame *f, uint32_t s) {
    for (unsigned i = 0; i < f->nserial; i++)
        if (f->serial[i] == s)
            return;
    if (f->nserial < MAX_SERIALS)
        f->serial[f->nserial++] = s;
}

/* Hands frame fr of thread ti over as slices, and tells its caller which
 * communicators it made calls on. */
static void close_frame(struct nsc_pyview *v, const struct nsc_decoder *d, uint32_t ti,
                        struct pythread *t, uint64_t end, int exc, int unfinished) {
    struct frame *fr = &t->f[--t->n];
    const char *loc = nsc_decoder_str(d, fr->loc);
    struct nsc_py_slice s = {ti, NSC_PY_SERIAL, fr->start, end < fr->start ? fr->start : end,
                             loc ? loc : "?", fr->c_call, exc, unfinished};
    v->calls++;
    v->fn(v->ud, &s);
    for (unsigned i = 0; i < fr->nserial; i++) {
        s.serial = fr->serial[i];
        v->fn(v->ud, &s);
        if (t->n)
            add_serial(&t->f[t->n - 1], fr->serial[i]);
    }
}

void nsc_pyview_record(struct nsc_pyview *v, const struct nsc_decoder *d, uint32_t thread,
                       const struct nsc_rec *r, uint64_t ns) {
    if (r->h.kind == NSC_REC_START) {
        /* an NCCL call inside the Python call open on this thread */
        struct pythread *t = thread < v->nt ? &v->t[thread] : NULL;
        if (t && t->n)
            add_serial(&t->f[t->n - 1], r->h.aux);
        return;
    }
    if (r->h.kind != NSC_REC_PY)
        return;
    struct pythread *t = thread_of(v, thread);
    if (!t)
        return;
    switch (r->h.etype) {
    case NSC_PY_CALL:
    case NSC_PY_C_CALL:
        if (t->too_deep || t->n >= MAX_DEPTH) {
            t->too_deep++;
            return;
        }
        if (t->n == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 64;
            struct frame *f = realloc(t->f, cap * sizeof(*f));
            if (!f) {
                t->too_deep++;
                return;
            }
            t->f = f;
            t->cap = cap;
        }
        t->f[t->n++] = (struct frame){ns, r->h.aux, (uint8_t)(r->h.etype == NSC_PY_C_CALL), 0, {0}};
        break;
    case NSC_PY_RETURN:
    case NSC_PY_C_RETURN: {
        if (t->too_deep) {
            t->too_deep--;
            return;
        }
        /* the matching call: the innermost open call of this location */
        uint32_t lo = t->n > RESYNC ? t->n - RESYNC : 0, i = t->n;
        while (i > lo && t->f[i - 1].loc != r->h.aux)
            i--;
        if (i == lo) {
            v->unmatched++; /* tracing began inside it, or its call was dropped */
            return;
        }
        while (t->n > i) /* calls above it lost their exits: they end here, unfinished */
            close_frame(v, d, thread, t, ns, 0, 1);
        close_frame(v, d, thread, t, ns, r->u.state.arg != 0, 0);
        break;
    }
    case NSC_PY_SKIPPED:
        v->skipped += r->u.state.arg;
        break;
    default:
        break;
    }
}

void nsc_pyview_finish(struct nsc_pyview *v, const struct nsc_decoder *d, uint64_t end_ns) {
    for (uint32_t i = 0; i < v->nt; i++)
        while (v->t[i].n)
            close_frame(v, d, i, &v->t[i], end_ns, 0, 1);
}

void nsc_pyview_counts(const struct nsc_pyview *v, uint64_t *calls, uint64_t *skipped,
                       uint64_t *unmatched) {
    *calls = v ? v->calls : 0;
    *skipped = v ? v->skipped : 0;
    *unmatched = v ? v->unmatched : 0;
}

uint32_t nsc_py_stack_id(const struct nsc_rec *r) {
    if (r->h.kind != NSC_REC_START)
        return 0;
    switch (r->h.etype) {
    case NSC_ET_GROUP_API: return r->u.start.d.group_api.py_stack;
    case NSC_ET_COLL_API: return r->u.start.d.coll_api.py_stack;
    case NSC_ET_P2P_API: return r->u.start.d.p2p_api.py_stack;
    default: return 0;
    }
}
