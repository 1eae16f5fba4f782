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
    uint64_t ops, bytes;
    uint64_t gpu_ns, gpu_ops;           /* GPU time (KernelCh), of the operations with one */
    uint64_t wait_ns, xfer_ns, split_ops; /* its split at the last rank's GPU start */
    uint64_t host_ns, host_ops;         /* no GPU time: enqueue to completion on the host */
    uint64_t enqueue_only;              /* neither: no completion recorded */
    uint64_t unsampled;                 /* KernelCh sampled, not for these: no GPU time */
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

void *nsc_py_callers_op(struct nsc_py_callers *pc, const struct nsc_op_done *op, uint64_t bytes) {
    struct idmap *o = slot(pc->ops, op->id);
    struct row *r = o->id == op->id && o->row ? o->row : NULL;
    /* the API row was named after the API call's function; an operation
     * without one is counted under its own function, without a caller */
    if (!r)
        r = row_of(pc, NULL, op->func);
    if (!r)
        return NULL;
    if (op->gpu_end > op->gpu_start && op->gpu_start) {
        r->gpu_ns += op->gpu_end - op->gpu_start;
        r->gpu_ops++;
    } else if (nsc_op_unsampled(op)) {
        r->unsampled++; /* neither GPU time nor a latency of its own */
    } else if (op->end_ns) {
        r->host_ns += op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
        r->host_ops++;
    } else {
        r->enqueue_only++;
    }
    r->ops++;
    r->bytes += bytes;
    return r;
}

void nsc_py_callers_split(void *row, uint64_t wait_ns, uint64_t xfer_ns) {
    struct row *r = row;
    r->wait_ns += wait_ns;
    r->xfer_ns += xfer_ns;
    r->split_ops++;
}

/* The time shares are of: GPU time where any operation has it (operations
 * without are left out of the shares, their host time shown apart), else
 * host time where any has a completion; else none (basis 0). Mixing the two
 * would weigh queueing on the host against kernels. */
enum basis { BASIS_NONE, BASIS_GPU, BASIS_HOST };

static uint64_t basis_ns(const struct row *r, enum basis b) {
    return b == BASIS_GPU ? r->gpu_ns : b == BASIS_HOST ? r->host_ns : 0;
}

/* Largest share first: by GPU time, then host time (the basis when no row
 * has GPU time, and the order of the rows without it), then operations. */
static int by_time(const void *a, const void *b) {
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns < y->gpu_ns ? 1 : -1;
    if (x->host_ns != y->host_ns)
        return x->host_ns < y->host_ns ? 1 : -1;
    if (x->ops != y->ops)
        return x->ops < y->ops ? 1 : -1;
    int c = strcmp(x->caller, y->caller);
    return c ? c : strcmp(x->op, y->op);
}

void nsc_py_callers_print(const struct nsc_py_callers *pc, FILE *out, int json) {
    size_t n = 0, k = 0;
    uint64_t ops = 0, with_caller = 0, gpu_ops = 0, host_ops = 0, enq = 0, gpu_ns = 0, host_ns = 0;
    uint64_t wait_ns = 0, xfer_ns = 0, split = 0, unsampled = 0;
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
        gpu_ops += r->gpu_ops;
        host_ops += r->host_ops;
        enq += r->enqueue_only;
        unsampled += r->unsampled;
        gpu_ns += r->gpu_ns;
        host_ns += r->host_ns;
        wait_ns += r->wait_ns;
        xfer_ns += r->xfer_ns;
        split += r->split_ops;
        if (r->caller[0])
            with_caller += r->ops;
    }
    enum basis b = gpu_ops ? BASIS_GPU : host_ops ? BASIS_HOST : BASIS_NONE;
    qsort(v, k, sizeof(*v), by_time);
    double total = (double)(b == BASIS_GPU ? gpu_ns : host_ns);
    const char *basis = b == BASIS_GPU ? "GPU time (KernelCh %globaltimer)"
                        : b == BASIS_HOST ? "enqueue to completion on the host (no KernelCh; "
                                            "queueing included)"
                                          : NULL;
    if (json) {
        fprintf(out, "{\"operations\": %llu, \"with_python_caller\": %llu, \"time_basis\": ",
                (unsigned long long)ops, (unsigned long long)with_caller);
        if (basis)
            fprintf(out, "\"%s\"", b == BASIS_GPU ? "gpu" : "host");
        else
            fputs("null", out);
        fprintf(out, ", \"time_ns\": %llu, \"gpu_ops\": %llu, \"host_ops\": %llu, "
                     "\"enqueue_only\": %llu, ",
                (unsigned long long)(b == BASIS_GPU ? gpu_ns : host_ns), (unsigned long long)gpu_ops,
                (unsigned long long)host_ops, (unsigned long long)enq);
        if (unsampled)
            fprintf(out, "\"not_sampled\": %llu, \"sample_note\": \"KernelCh sampled "
                         "(NCCLSCOPE_KERNEL_SAMPLE): shares are of the sampled operations' GPU "
                         "time\", ",
                    (unsigned long long)unsampled);
        fputs("\"callers\": [", out);
        for (size_t i = 0; i < k; i++) {
            const struct row *r = v[i];
            fprintf(out, "%s\n  {\"caller\": ", i ? "," : "");
            if (r->caller[0])
                jw_print_string(out, r->caller);
            else
                fputs("null", out);
            fprintf(out, ", \"op\": ");
            jw_print_string(out, r->op);
            fprintf(out,
                    ", \"rank_ops\": %llu, \"bytes\": %llu, \"gpu_ops\": %llu, \"gpu_us\": %.3f, "
                    "\"split_ops\": %llu, \"wait_us\": %.3f, \"transfer_us\": %.3f, "
                    "\"host_ops\": %llu, \"host_us\": %.3f, \"enqueue_only\": %llu, ",
                    (unsigned long long)r->ops, (unsigned long long)r->bytes,
                    (unsigned long long)r->gpu_ops, (double)r->gpu_ns / 1e3,
                    (unsigned long long)r->split_ops, (double)r->wait_ns / 1e3,
                    (double)r->xfer_ns / 1e3, (unsigned long long)r->host_ops,
                    (double)r->host_ns / 1e3, (unsigned long long)r->enqueue_only);
            if (unsampled)
                fprintf(out, "\"not_sampled\": %llu, ", (unsigned long long)r->unsampled);
            fputs("\"share\": ", out);
            if (basis)
                fprintf(out, "%.4f}", total > 0 ? (double)basis_ns(r, b) / total : 0.0);
            else
                fputs("null}", out);
        }
        fprintf(out, "\n]}\n");
        free(v);
        return;
    }
    fprintf(out, "%llu rank-operations, %llu with a Python caller (%.1f%%)\n",
            (unsigned long long)ops, (unsigned long long)with_caller,
            ops ? 100.0 * (double)with_caller / (double)ops : 0.0);
    if (basis)
        fprintf(out, "share: of %s, %.3f ms in all (%llu rank-operations)\n", basis, total / 1e6,
                (unsigned long long)(b == BASIS_GPU ? gpu_ops : host_ops));
    if (unsampled)
        fprintf(out, "KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): %llu rank-operation(s) not "
                     "sampled have no GPU time; shares are of the sampled ones' (a sample of each "
                     "comm's operations)\n",
                (unsigned long long)unsampled);
    if (split)
        fprintf(out, "of the GPU time, %.3f ms waiting for the last rank's kernel to start, %.3f ms "
                     "after (transfer; %llu rank-operations of collectives every rank timed)\n",
                (double)wait_ns / 1e6, (double)xfer_ns / 1e6, (unsigned long long)split);
    if (enq)
        fprintf(out, "no completion recorded (enqueue only) for %llu rank-operation(s): no time %s\n"
                     "for them; record KernelCh for GPU time: NCCLSCOPE_EVENTS=default,KernelCh "
                     "(docs/config.md)\n",
                (unsigned long long)enq, basis ? "or share" : "and no share");
    fputc('\n', out);
    fprintf(out, "%7s %10s %10s %10s %10s %10s %10s %14s  %-14s %s\n", "share", "gpu ms", "wait ms",
            "xfer ms", "host ms", "rank-ops", "enq-only", "bytes", "op", "Python caller");
    for (size_t i = 0; i < k; i++) {
        const struct row *r = v[i];
        char sh[16], g[16], w[16], x[16], h[16];
        snprintf(sh, sizeof(sh), basis ? "%.1f%%" : "-",
                 total > 0 ? 100.0 * (double)basis_ns(r, b) / total : 0.0);
        snprintf(g, sizeof(g), r->gpu_ops ? "%.3f" : "-", (double)r->gpu_ns / 1e6);
        snprintf(w, sizeof(w), r->split_ops ? "%.3f" : "-", (double)r->wait_ns / 1e6);
        snprintf(x, sizeof(x), r->split_ops ? "%.3f" : "-", (double)r->xfer_ns / 1e6);
        snprintf(h, sizeof(h), r->host_ops ? "%.3f" : "-", (double)r->host_ns / 1e6);
        fprintf(out, "%7s %10s %10s %10s %10s %10llu %10llu %14llu  %-14s %s\n", sh, g, w, x, h,
                (unsigned long long)r->ops, (unsigned long long)r->enqueue_only,
                (unsigned long long)r->bytes, r->op,
                r->caller[0] ? r->caller : "(no Python caller)");
    }
    fputs("\ngpu ms: GPU time (KernelCh); wait/xfer ms: the GPU time before and after the last "
          "rank's\nGPU start (AllReduce, AllGather, ReduceScatter, AlltoAll); host ms: enqueue to "
          "completion\non the host, of the operations without GPU time; enq-only: operations with "
          "no completion.\n",
          out);
    free(v);
}
