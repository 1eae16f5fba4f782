// SPDX-License-Identifier: Apache-2.0
/* python_callers.c - operations by Python call site (stats --by-caller). */
#include "python_callers.h"

#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "event_types.h"
#include "python_view.h"

#define IDMAP (1u << 16) /* direct-mapped: an old id is forgotten on collision */

struct row {
    char caller[256];  /* "" = no Python caller */
    char op[32];
    uint64_t ops, bytes, time_ns, gpu_ns, timed_on_gpu;
    struct row *next;
};

struct idmap {
    uint64_t id;
    struct row *row;
};

struct nsc_py_callers {
    struct row *rows;
    struct idmap *api;      /* API event id -> its caller's row (op unknown yet) */
    struct idmap *ops;      /* Coll/P2p id -> row */
    struct row **last_api;  /* per thread: the row of its last API call */
    uint32_t nthreads;
    uint64_t total_ns;
};

struct nsc_py_callers *nsc_py_callers_new(void) {
    struct nsc_py_callers *pc = calloc(1, sizeof(*pc));
    if (!pc)
        return NULL;
    pc->api = calloc(IDMAP, sizeof(*pc->api));
    pc->ops = calloc(IDMAP, sizeof(*pc->ops));
    if (!pc->api || !pc->ops) {
        nsc_py_callers_free(pc);
        return NULL;
    }
    return pc;
}

void nsc_py_callers_free(struct nsc_py_callers *pc) {
    if (!pc)
        return;
    for (struct row *r = pc->rows, *n; r; r = n) {
        n = r->next;
        free(r);
    }
    free(pc->api);
    free(pc->ops);
    free(pc->last_api);
    free(pc);
}

void nsc_py_callers_file(struct nsc_py_callers *pc) {
    memset(pc->api, 0, IDMAP * sizeof(*pc->api));
    memset(pc->ops, 0, IDMAP * sizeof(*pc->ops));
    if (pc->last_api)
        memset(pc->last_api, 0, pc->nthreads * sizeof(*pc->last_api));
}

static struct idmap *slot(struct idmap *m, uint64_t id) {
    return &m[(id * 0x9e3779b97f4a7c15ull) >> 48];
}

/* The row of (caller, op); caller "" = none. The caller is the stack's
 * first line. */
static struct row *row_of(struct nsc_py_callers *pc, const char *stack, const char *op) {
    char caller[256] = "";
    if (stack) {
        size_t n = strcspn(stack, "\n");
        if (n >= sizeof(caller))
            n = sizeof(caller) - 1;
        memcpy(caller, stack, n);
        caller[n] = '\0';
    }
    if (!op)
        op = "?";
    for (struct row *r = pc->rows; r; r = r->next)
        if (!strcmp(r->caller, caller) && !strcmp(r->op, op))
            return r;
    struct row *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    snprintf(r->caller, sizeof(r->caller), "%s", caller);
    snprintf(r->op, sizeof(r->op), "%s", op);
    r->next = pc->rows;
    pc->rows = r;
    return r;
}

static struct row **last_api(struct nsc_py_callers *pc, uint32_t thread) {
    if (thread >= 65536)
        return NULL;
    if (thread >= pc->nthreads) {
        uint32_t n = thread + 16;
        struct row **p = realloc(pc->last_api, n * sizeof(*p));
        if (!p)
            return NULL;
        memset(p + pc->nthreads, 0, (n - pc->nthreads) * sizeof(*p));
        pc->last_api = p;
        pc->nthreads = n;
    }
    return &pc->last_api[thread];
}

void nsc_py_callers_record(struct nsc_py_callers *pc, const struct nsc_decoder *d, uint32_t thread,
                           const struct nsc_rec *r) {
    if (r->h.kind != NSC_REC_START)
        return;
    const union nsc_desc *x = &r->u.start.d;
    const char *func = NULL;
    switch (r->h.etype) {
    case NSC_ET_COLL_API: func = nsc_decoder_str(d, x->coll_api.func); break;
    case NSC_ET_P2P_API: func = nsc_decoder_str(d, x->p2p_api.func); break;
    case NSC_ET_COLL:
    case NSC_ET_P2P: {
        /* its API call: the parent, else the thread's last one */
        struct idmap *a = slot(pc->api, r->u.start.parent);
        struct row **l = last_api(pc, thread);
        struct row *row = r->u.start.parent && a->id == r->u.start.parent ? a->row : l ? *l : NULL;
        struct idmap *o = slot(pc->ops, r->h.id);
        o->id = r->h.id;
        o->row = row;
        return;
    }
    default:
        return;
    }
    uint32_t sid = nsc_py_stack_id(r);
    struct row *row = row_of(pc, sid ? nsc_decoder_str(d, sid) : NULL, func);
    struct idmap *a = slot(pc->api, r->h.id);
    a->id = r->h.id;
    a->row = row;
    struct row **l = last_api(pc, thread);
    if (l)
        *l = row;
}

void nsc_py_callers_op(struct nsc_py_callers *pc, const struct nsc_op_done *op, uint64_t bytes) {
    struct idmap *o = slot(pc->ops, op->id);
    struct row *r = o->id == op->id && o->row ? o->row : NULL;
    /* the API row was named after the API call's function; an operation
     * without one is counted under its own function, without a caller */
    if (!r)
        r = row_of(pc, NULL, op->func);
    if (!r)
        return;
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    uint64_t t = end > op->start_ns ? end - op->start_ns : 0;
    if (op->gpu_end > op->gpu_start && op->gpu_start) {
        r->gpu_ns += op->gpu_end - op->gpu_start;
        r->timed_on_gpu++;
        t = op->gpu_end - op->gpu_start;
    }
    r->ops++;
    r->bytes += bytes;
    r->time_ns += t;
    pc->total_ns += t;
}

static int by_time(const void *a, const void *b) {
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? 1 : -1;
    int c = strcmp(x->caller, y->caller);
    return c ? c : strcmp(x->op, y->op);
}


void nsc_py_callers_print(const struct nsc_py_callers *pc, FILE *out, int json) {
    size_t n = 0, k = 0;
    uint64_t ops = 0, with_caller = 0, gpu = 0;
    for (const struct row *r = pc->rows; r; r = r->next)
        n++;
    const struct row **v = calloc(n + 1, sizeof(*v));
    if (!v)
        return;
    for (const struct row *r = pc->rows; r; r = r->next) {
        if (!r->ops)
            continue; /* an API call whose operation never completed in the trace */
        v[k++] = r;
        ops += r->ops;
        gpu += r->timed_on_gpu;
        if (r->caller[0])
            with_caller += r->ops;
    }
    qsort(v, k, sizeof(*v), by_time);
    double total = (double)pc->total_ns;
    const char *basis = gpu == ops && ops ? "GPU time (KernelCh)"
                        : gpu ? "GPU time where KernelCh was recorded, else enqueue to completion"
                              : "enqueue to completion";
    if (json) {
        fprintf(out, "{\"operations\": %llu, \"with_python_caller\": %llu, \"time_ns\": %llu, "
                     "\"time_basis\": \"%s\", \"callers\": [",
                (unsigned long long)ops, (unsigned long long)with_caller,
                (unsigned long long)pc->total_ns, basis);
        for (size_t i = 0; i < k; i++) {
            fprintf(out, "%s\n  {\"caller\": ", i ? "," : "");
            if (v[i]->caller[0])
                jw_print_string(out, v[i]->caller);
            else
                fputs("null", out);
            fprintf(out, ", \"op\": ");
            jw_print_string(out, v[i]->op);
            fprintf(out, ", \"rank_ops\": %llu, \"bytes\": %llu, \"time_us\": %.3f, "
                         "\"gpu_us\": %.3f, \"share\": %.4f}",
                    (unsigned long long)v[i]->ops, (unsigned long long)v[i]->bytes,
                    (double)v[i]->time_ns / 1e3, (double)v[i]->gpu_ns / 1e3,
                    total > 0 ? (double)v[i]->time_ns / total : 0.0);
        }
        fprintf(out, "\n]}\n");
    } else {
        fprintf(out, "%llu rank-operations, %llu with a Python caller (%.1f%%); time: %s, "
                     "%.3f ms in all\n\n",
                (unsigned long long)ops, (unsigned long long)with_caller,
                ops ? 100.0 * (double)with_caller / (double)ops : 0.0, basis, total / 1e6);
        fprintf(out, "%7s %12s %10s %14s  %-14s %s\n", "share", "time ms", "rank-ops", "bytes",
                "op", "Python caller");
        for (size_t i = 0; i < k; i++)
            fprintf(out, "%6.1f%% %12.3f %10llu %14llu  %-14s %s\n",
                    total > 0 ? 100.0 * (double)v[i]->time_ns / total : 0.0,
                    (double)v[i]->time_ns / 1e6, (unsigned long long)v[i]->ops,
                    (unsigned long long)v[i]->bytes, v[i]->op,
                    v[i]->caller[0] ? v[i]->caller : "(no Python caller)");
    }
    free(v);
}
