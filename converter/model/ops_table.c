// SPDX-License-Identifier: Apache-2.0
/* ops_table.c - a trace file's operations, channels, steps, comms and losses as columns. */
#include "ops_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_align.h"
#include "coll_track.h"
#include "event_types.h"
#include "gpu_clock.h"
#include "hash.h"
#include "ops.h"
#include "trace_decode.h"

const char *const nsc_ot_table_names[NSC_OT_NTABLES] = {
    "ops", "kernel_channels", "proxy_steps", "comms", "drops", "errors"};

#define SPEC(name, type) {#name, NSC_OT_##type},
static const struct nsc_ot_colspec spec_ops[] = {NSC_OT_OPS(SPEC)};
static const struct nsc_ot_colspec spec_kch[] = {NSC_OT_KCH(SPEC)};
static const struct nsc_ot_colspec spec_steps[] = {NSC_OT_STEPS(SPEC)};
static const struct nsc_ot_colspec spec_comms[] = {NSC_OT_COMMS(SPEC)};
static const struct nsc_ot_colspec spec_drops[] = {NSC_OT_DROPS(SPEC)};
static const struct nsc_ot_colspec spec_errors[] = {NSC_OT_ERRORS(SPEC)};
#undef SPEC

/* Column numbers, per table: O_<name>, K_<name>, ... */
#define ENUM(p) ENUM_##p
#define E_O(name, type) O_##name,
#define E_K(name, type) K_##name,
#define E_S(name, type) S_##name,
#define E_C(name, type) C_##name,
#define E_D(name, type) D_##name,
#define E_E(name, type) E_##name,
enum { NSC_OT_OPS(E_O) O_N };
enum { NSC_OT_KCH(E_K) K_N };
enum { NSC_OT_STEPS(E_S) S_N };
enum { NSC_OT_COMMS(E_C) C_N };
enum { NSC_OT_DROPS(E_D) D_N };
enum { NSC_OT_ERRORS(E_E) E_N };

static const struct {
    const struct nsc_ot_colspec *spec;
    unsigned n;
} schemas[NSC_OT_NTABLES] = {{spec_ops, O_N},   {spec_kch, K_N},   {spec_steps, S_N},
                             {spec_comms, C_N}, {spec_drops, D_N}, {spec_errors, E_N}};

const struct nsc_ot_colspec *nsc_ot_schema(enum nsc_ot_table_id t, unsigned *ncols) {
    *ncols = schemas[t].n;
    return schemas[t].spec;
}

/* ---- growing columns ---- */

static size_t col_size(enum nsc_ot_type t) { return t == NSC_OT_STR ? sizeof(uint32_t) : sizeof(int64_t); }

/* Room for one more row; returns its index, or SIZE_MAX (out of memory:
 * the file's tables stop growing, the caller reports it). */
static size_t row_new(struct nsc_ot_file *f, struct nsc_ot_table *t) {
    if (f->oom)
        return SIZE_MAX;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        for (unsigned c = 0; c < t->ncols; c++) {
            void *p = realloc(t->col[c], cap * col_size(t->spec[c].type));
            if (!p) {
                f->oom = 1;
                return SIZE_MAX;
            }
            t->col[c] = p;
        }
        t->cap = cap;
    }
    size_t r = t->nrows++;
    for (unsigned c = 0; c < t->ncols; c++) /* a column nobody sets reads 0 / "" */
        memset((char *)t->col[c] + r * col_size(t->spec[c].type), 0, col_size(t->spec[c].type));
    return r;
}

static void set_i(struct nsc_ot_table *t, size_t r, unsigned c, int64_t v) {
    if (r != SIZE_MAX)
        ((int64_t *)t->col[c])[r] = v;
}

static void set_s(struct nsc_ot_table *t, size_t r, unsigned c, uint32_t v) {
    if (r != SIZE_MAX)
        ((uint32_t *)t->col[c])[r] = v;
}

/* ---- the string pool ---- */

static uint32_t str_id(struct nsc_ot_file *f, const char *s) {
    if (!s || !*s || f->oom)
        return 0;
    if ((f->nstr + 1) * 2 > f->str_hash_cap) {
        uint32_t cap = f->str_hash_cap ? f->str_hash_cap * 2 : 256;
        uint32_t *h = calloc(cap, sizeof(*h));
        if (!h) {
            f->oom = 1;
            return 0;
        }
        for (uint32_t i = 1; i < f->nstr; i++) {
            uint32_t k = (uint32_t)nsc_fnv1a_str(NSC_FNV_SEED, f->str[i]) & (cap - 1);
            while (h[k])
                k = (k + 1) & (cap - 1);
            h[k] = i + 1;
        }
        free(f->str_hash);
        f->str_hash = h;
        f->str_hash_cap = cap;
    }
    uint32_t k = (uint32_t)nsc_fnv1a_str(NSC_FNV_SEED, s) & (f->str_hash_cap - 1);
    while (f->str_hash[k]) {
        if (!strcmp(f->str[f->str_hash[k] - 1], s))
            return f->str_hash[k] - 1;
        k = (k + 1) & (f->str_hash_cap - 1);
    }
    if (f->nstr == f->str_cap) {
        uint32_t cap = f->str_cap * 2;
        char **p = realloc(f->str, cap * sizeof(*p));
        if (!p) {
            f->oom = 1;
            return 0;
        }
        f->str = p;
        f->str_cap = cap;
    }
    if (!(f->str[f->nstr] = strdup(s))) {
        f->oom = 1;
        return 0;
    }
    f->str_hash[k] = f->nstr + 1;
    return f->nstr++;
}

static uint32_t hex_id(struct nsc_ot_file *f, uint64_t v) {
    char b[17];
    snprintf(b, sizeof(b), "%016" PRIx64, v);
    return str_id(f, b);
}

/* ---- event id maps (open addressing, backward-shift deletion) ---- */

struct idmap {
    uint64_t *key; /* 0: free */
    uint64_t *val;
    size_t cap, n;
};

static size_t id_slot(uint64_t id, size_t cap) {
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static int idmap_put(struct idmap *m, uint64_t id, uint64_t v) {
    if (!id)
        return 0;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *k = calloc(cap, sizeof(*k)), *vv = calloc(cap, sizeof(*vv));
        if (!k || !vv) {
            free(k);
            free(vv);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t s = id_slot(m->key[i], cap);
                while (k[s])
                    s = (s + 1) & (cap - 1);
                k[s] = m->key[i];
                vv[s] = m->val[i];
            }
        free(m->key);
        free(m->val);
        m->key = k;
        m->val = vv;
        m->cap = cap;
    }
    size_t s = id_slot(id, m->cap);
    while (m->key[s] && m->key[s] != id)
        s = (s + 1) & (m->cap - 1);
    if (!m->key[s])
        m->n++;
    m->key[s] = id;
    m->val[s] = v;
    return 0;
}

static uint64_t *idmap_get(struct idmap *m, uint64_t id) {
    if (!m->cap || !id)
        return NULL;
    for (size_t s = id_slot(id, m->cap);; s = (s + 1) & (m->cap - 1)) {
        if (m->key[s] == id)
            return &m->val[s];
        if (!m->key[s])
            return NULL;
    }
}

static void idmap_del(struct idmap *m, uint64_t id) {
    uint64_t *v = idmap_get(m, id);
    if (!v)
        return;
    size_t cap = m->cap, i = (size_t)(v - m->val), j = i;
    for (;;) {
        j = (j + 1) & (cap - 1);
        if (!m->key[j])
            break;
        size_t k = id_slot(m->key[j], cap);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            m->key[i] = m->key[j];
            m->val[i] = m->val[j];
            i = j;
        }
    }
    m->key[i] = 0;
    m->n--;
}

static void idmap_free(struct idmap *m) {
    free(m->key);
    free(m->val);
}

/* ---- one file ---- */

struct run {
    struct nsc_ot_file *f;
    unsigned want;
    int file_index;
    int64_t shift;
    const struct nsc_decoder *d; /* set by the SESSION hook */
    uint32_t mask;               /* the event types the file recorded */
    struct nsc_gpu_clock *gpu;   /* per comm serial (stats' pre-pass) */
    uint32_t ngpu;
    const char *path;
    uint32_t s_host, s_file;
    int64_t pid;
    int64_t rows;
    /* Python callers: API event id -> its stack's string id + 1; per
     * thread the last API call's (python_callers.c's join) */
    struct idmap api, op_caller;
    uint32_t *last_api;
    uint32_t nthreads;
    /* open KernelCh (id -> row), ProxyOps (id -> index into pops), open
     * ProxySteps (id -> row) */
    struct idmap kch, pop, step;
    struct pop_info {
        uint64_t op_id;
        uint32_t serial;
        int32_t ch, peer, is_send;
    } *pops;
    size_t npops, pops_cap;
    int oom;
    int done;                  /* on_done ran: the file was opened and read */
};

static const struct nsc_gpu_clock *gpu_of(const struct run *ru, uint32_t serial) {
    return serial < ru->ngpu && ru->gpu[serial].have ? &ru->gpu[serial] : NULL;
}

/* nccl-tests' "size", as stats_model.c counts it. */
static uint64_t op_bytes(const struct nsc_op_done *op) {
    uint64_t b = op->count * (uint64_t)nsc_dtype_size(op->dtype);
    if (!op->is_p2p && op->func && op->nranks > 0 &&
        (!strcmp(op->func, "AllGather") || !strcmp(op->func, "ReduceScatter")))
        b *= (uint64_t)op->nranks;
    return b;
}

/* The caller's first line of a stack ("file:line function"). */
static uint32_t caller_id(struct run *ru, uint32_t stack_sid) {
    const char *s = stack_sid ? nsc_decoder_str(ru->d, stack_sid) : NULL;
    if (!s)
        return 0;
    char b[256];
    size_t n = strcspn(s, "\n");
    if (n >= sizeof(b))
        n = sizeof(b) - 1;
    memcpy(b, s, n);
    b[n] = '\0';
    return str_id(ru->f, b);
}

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct run *ru = ud;
    struct nsc_ot_file *f = ru->f;
    if (!(ru->want & (1u << NSC_OT_T_OPS)))
        return;
    struct nsc_ot_table *t = &f->t[NSC_OT_T_OPS];
    size_t r = row_new(f, t);
    if (r == SIZE_MAX)
        return;
    const struct nsc_comm_info *ci = nsc_decoder_comm(ru->d, op->comm_serial);
    set_s(t, r, O_host, ru->s_host);
    set_i(t, r, O_pid, ru->pid);
    set_s(t, r, O_file, ru->s_file);
    set_i(t, r, O_rank, op->rank);
    set_i(t, r, O_nranks, op->nranks);
    set_s(t, r, O_comm, hex_id(f, op->comm_id));
    set_s(t, r, O_comm_name, ci ? str_id(f, ci->name) : 0);
    set_s(t, r, O_op, str_id(f, op->func ? op->func : "?"));
    set_i(t, r, O_p2p, op->is_p2p);
    set_i(t, r, O_seq, (int64_t)op->seq);
    set_s(t, r, O_dtype, str_id(f, op->dtype ? op->dtype : "?"));
    set_i(t, r, O_count, (int64_t)op->count);
    set_i(t, r, O_bytes, (int64_t)op_bytes(op));
    set_i(t, r, O_peer, op->is_p2p ? op->peer : -1);
    set_s(t, r, O_algo, str_id(f, op->algo));
    set_s(t, r, O_proto, str_id(f, op->proto));
    set_i(t, r, O_channels, op->nch);
    set_i(t, r, O_enqueue_ns, (int64_t)op->start_ns);
    set_i(t, r, O_stop_ns, (int64_t)op->stop_ns);
    set_i(t, r, O_end_ns, (int64_t)op->end_ns);
    /* stats_model.c's numbers: host time when the completion is not before the
     * enqueue; GPU time when both GPU ends are there; queue time where the
     * comm's GPU clock was mapped, 0 when mapped before the enqueue. */
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    set_i(t, r, O_host_ns, end >= op->start_ns ? (int64_t)(end - op->start_ns) : -1);
    int64_t gpu = -1, queue = -1;
    uint64_t gs = 0, ge = 0;
    if (op->gpu_start && op->gpu_end > op->gpu_start) {
        gpu = (int64_t)(op->gpu_end - op->gpu_start);
        const struct nsc_gpu_clock *g = gpu_of(ru, op->comm_serial);
        if (g) {
            gs = nsc_shift_ns(op->gpu_start, g->offset_ns);
            ge = nsc_shift_ns(op->gpu_end, g->offset_ns);
            queue = gs > op->start_ns ? (int64_t)(gs - op->start_ns) : 0;
        }
    }
    set_i(t, r, O_gpu_start_ns, (int64_t)gs);
    set_i(t, r, O_gpu_end_ns, (int64_t)ge);
    set_i(t, r, O_gpu_ns, gpu);
    set_i(t, r, O_queue_ns, queue);
    set_i(t, r, O_enqueue_only, op->end_ns == 0);
    set_i(t, r, O_at_end, op->at_end);
    /* hang.c's rule: coll_track.h */
    set_i(t, r, O_stuck, op->at_end && nsc_op_stuck(op));
    set_i(t, r, O_kernel_ch_recorded, op->kernel);
    set_i(t, r, O_sampled, op->sampled);
    set_i(t, r, O_completion_inferred, op->inferred);
    set_i(t, r, O_maybe_stuck, op->at_end && op->maybe_stuck);
    set_i(t, r, O_channels_done, op->kernel_channels_done);
    set_i(t, r, O_open_children, op->nopen);
    uint64_t *c = idmap_get(&ru->op_caller, op->id);
    set_s(t, r, O_caller, c ? (uint32_t)*c : 0);
    if (c)
        idmap_del(&ru->op_caller, op->id);
    set_i(t, r, O_thread, op->thread);
    set_i(t, r, O_event_id, (int64_t)op->id);
    set_i(t, r, O_file_index, ru->file_index);
    set_i(t, r, O_row, ru->rows++);
}

static uint64_t when(const struct run *ru, uint64_t ticks) {
    return nsc_shift_ns(nsc_decoder_mono_ns(ru->d, ticks), ru->shift);
}

static uint32_t *last_api(struct run *ru, uint32_t thread) {
    if (thread >= 65536)
        return NULL;
    if (thread >= ru->nthreads) {
        uint32_t n = thread + 16;
        uint32_t *p = realloc(ru->last_api, n * sizeof(*p));
        if (!p)
            return NULL;
        memset(p + ru->nthreads, 0, (n - ru->nthreads) * sizeof(*p));
        ru->last_api = p;
        ru->nthreads = n;
    }
    return &ru->last_api[thread];
}

/* python_callers.c's join: an operation's caller is its API call's (the
 * parent), else its thread's last API call's. */
static void callers_record(struct run *ru, uint32_t thread, const struct nsc_rec *r) {
    if (r->h.kind != NSC_REC_START)
        return;
    switch (r->h.etype) {
    case NSC_ET_GROUP_API:
    case NSC_ET_COLL_API:
    case NSC_ET_P2P_API: {
        if (r->h.etype == NSC_ET_GROUP_API)
            return; /* python_callers.c attributes only CollApi/P2pApi */
        uint32_t sid = r->h.etype == NSC_ET_COLL_API ? r->u.start.d.coll_api.py_stack
                                                     : r->u.start.d.p2p_api.py_stack;
        uint32_t cid = caller_id(ru, sid);
        uint32_t *l = last_api(ru, thread);
        if (l)
            *l = cid;
        if (idmap_put(&ru->api, r->h.id, cid) != 0)
            ru->oom = 1;
        return;
    }
    case NSC_ET_COLL:
    case NSC_ET_P2P: {
        uint64_t *a = r->u.start.parent ? idmap_get(&ru->api, r->u.start.parent) : NULL;
        uint32_t *l = last_api(ru, thread);
        uint32_t cid = a ? (uint32_t)*a : l ? *l : 0;
        if (cid && idmap_put(&ru->op_caller, r->h.id, cid) != 0)
            ru->oom = 1;
        return;
    }
    default:
        return;
    }
}

static void channels_record(struct run *ru, const struct nsc_rec *r) {
    struct nsc_ot_file *f = ru->f;
    struct nsc_ot_table *t = &f->t[NSC_OT_T_KCH];
    uint64_t *row = NULL;
    if (r->h.kind == NSC_REC_START) {
        size_t i = row_new(f, t);
        if (i == SIZE_MAX)
            return;
        const struct nsc_comm_info *ci = nsc_decoder_comm(ru->d, r->h.aux);
        const struct nsc_gpu_clock *g = gpu_of(ru, r->h.aux);
        uint64_t pt = r->u.start.d.kernel_ch.ptimer;
        set_s(t, i, K_host, ru->s_host);
        set_i(t, i, K_pid, ru->pid);
        set_s(t, i, K_file, ru->s_file);
        set_i(t, i, K_rank, ci ? ci->rank : -1);
        set_s(t, i, K_comm, hex_id(f, ci ? ci->comm_id : 0));
        set_i(t, i, K_op_id, (int64_t)r->u.start.parent);
        set_i(t, i, K_event_id, (int64_t)r->h.id);
        set_i(t, i, K_channel, r->u.start.d.kernel_ch.ch);
        set_i(t, i, K_start_ns, (int64_t)when(ru, r->h.ticks));
        set_i(t, i, K_gpu_start_raw, (int64_t)pt);
        set_i(t, i, K_gpu_start_ns, g && pt ? (int64_t)nsc_shift_ns(pt, g->offset_ns) : 0);
        set_i(t, i, K_file_index, ru->file_index);
        /* comm serial in the high bits: the STATE needs it for the mapping */
        if (idmap_put(&ru->kch, r->h.id, (uint64_t)i | (uint64_t)r->h.aux << 40) != 0)
            ru->oom = 1;
    } else if (r->h.kind == NSC_REC_STATE && r->h.aux == 22 /* KernelChStop */) {
        if (!(row = idmap_get(&ru->kch, r->h.id)))
            return;
        size_t i = (size_t)(*row & ((1ull << 40) - 1));
        const struct nsc_gpu_clock *g = gpu_of(ru, (uint32_t)(*row >> 40));
        set_i(t, i, K_gpu_end_raw, (int64_t)r->u.state.arg);
        set_i(t, i, K_gpu_end_ns,
              g && r->u.state.arg ? (int64_t)nsc_shift_ns(r->u.state.arg, g->offset_ns) : 0);
    } else if (r->h.kind == NSC_REC_STOP) {
        if (!(row = idmap_get(&ru->kch, r->h.id)))
            return;
        set_i(t, (size_t)(*row & ((1ull << 40) - 1)), K_stop_ns, (int64_t)when(ru, r->h.ticks));
        idmap_del(&ru->kch, r->h.id);
    }
}

static void steps_record(struct run *ru, const struct nsc_rec *r) {
    struct nsc_ot_file *f = ru->f;
    struct nsc_ot_table *t = &f->t[NSC_OT_T_STEPS];
    if (r->h.etype == NSC_ET_PROXY_OP) {
        if (r->h.kind == NSC_REC_START) {
            if (ru->npops == ru->pops_cap) {
                size_t cap = ru->pops_cap ? ru->pops_cap * 2 : 256;
                struct pop_info *p = realloc(ru->pops, cap * sizeof(*p));
                if (!p) {
                    ru->oom = 1;
                    return;
                }
                ru->pops = p;
                ru->pops_cap = cap;
            }
            /* a PXN parent lives in another process: not this file's operation */
            ru->pops[ru->npops] = (struct pop_info){
                r->h.flags & NSC_RF_FOREIGN_PARENT ? 0 : r->u.start.parent, r->h.aux,
                r->u.start.d.proxy_op.ch, r->u.start.d.proxy_op.peer, r->u.start.d.proxy_op.is_send};
            if (idmap_put(&ru->pop, r->h.id, ru->npops++) != 0)
                ru->oom = 1;
        }
        /* kept after its STOP: late ProxySteps still find it (bounded by the
         * file's ProxyOps) */
        return;
    }
    uint64_t *row;
    if (r->h.kind == NSC_REC_START) {
        size_t i = row_new(f, t);
        if (i == SIZE_MAX)
            return;
        uint64_t *pi = idmap_get(&ru->pop, r->u.start.parent);
        const struct pop_info *p = pi ? &ru->pops[*pi] : NULL;
        const struct nsc_comm_info *ci = p ? nsc_decoder_comm(ru->d, p->serial) : NULL;
        set_s(t, i, S_host, ru->s_host);
        set_i(t, i, S_pid, ru->pid);
        set_s(t, i, S_file, ru->s_file);
        set_i(t, i, S_rank, ci ? ci->rank : -1);
        set_s(t, i, S_comm, hex_id(f, ci ? ci->comm_id : 0));
        set_i(t, i, S_op_id, p ? (int64_t)p->op_id : 0);
        set_i(t, i, S_proxy_op_id, (int64_t)r->u.start.parent);
        set_i(t, i, S_event_id, (int64_t)r->h.id);
        set_i(t, i, S_channel, p ? p->ch : -1);
        set_i(t, i, S_peer, p ? p->peer : -1);
        set_i(t, i, S_is_send, p ? p->is_send : -1);
        set_i(t, i, S_step, r->u.start.d.proxy_step.step);
        set_i(t, i, S_start_ns, (int64_t)when(ru, r->h.ticks));
        set_i(t, i, S_last_state, -1);
        set_i(t, i, S_file_index, ru->file_index);
        if (idmap_put(&ru->step, r->h.id, i) != 0)
            ru->oom = 1;
    } else if (r->h.kind == NSC_REC_STATE) {
        if ((row = idmap_get(&ru->step, r->h.id)))
            set_i(t, (size_t)*row, S_last_state, r->h.aux);
    } else if (r->h.kind == NSC_REC_STOP) {
        if (!(row = idmap_get(&ru->step, r->h.id)))
            return;
        set_i(t, (size_t)*row, S_stop_ns, (int64_t)when(ru, r->h.ticks));
        idmap_del(&ru->step, r->h.id);
    }
}

/* The SESSION block (first): who wrote the file, and the GPU clock offsets
 * from a pre-pass, as stats_model.c (none for a replayed trace: its host times
 * were re-timed, its GPU timers not). */
static void on_session(void *ud, const struct nsc_decoder *d) {
    struct run *ru = ud;
    ru->d = d;
    const struct nsc_session *ses = nsc_decoder_session(d);
    if (!ses)
        return;
    ru->mask = ses->event_mask;
    char host[sizeof(ses->host)];
    memcpy(host, ses->host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    ru->s_host = str_id(ru->f, host);
    ru->pid = ses->pid;
    if ((ses->event_mask >> NSC_ET_KERNEL_CH) & 1 && !nsc_session_replayed(ses) &&
        nsc_gpu_clock_scan(ru->path, ru->shift, &ru->gpu, &ru->ngpu) != 0) {
        ru->gpu = NULL;
        ru->ngpu = 0;
    }
}

/* Every record, before the tracker sees it (an operation's caller is known
 * when it completes). */
static void on_record(void *ud, const struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r) {
    struct run *ru = ud;
    ru->d = d;
    if (ru->oom || ru->f->oom)
        return;
    if (ru->want & (1u << NSC_OT_T_OPS))
        callers_record(ru, thread, r);
    if (r->h.etype == NSC_ET_KERNEL_CH && (ru->want & (1u << NSC_OT_T_KCH)))
        channels_record(ru, r);
    else if ((r->h.etype == NSC_ET_PROXY_STEP || r->h.etype == NSC_ET_PROXY_OP) &&
             (ru->want & (1u << NSC_OT_T_STEPS)) && r->h.kind >= NSC_REC_START &&
             r->h.kind <= NSC_REC_STATE)
        steps_record(ru, r);
}

static void add_error(struct nsc_ot_file *f, const char *path, int file_index, const char *msg) {
    struct nsc_ot_table *t = &f->t[NSC_OT_T_ERRORS];
    size_t r = row_new(f, t);
    f->damaged++;
    if (r == SIZE_MAX)
        return;
    /* "<path>: offset N: ..." (trace_reader.h) */
    int64_t off = -1;
    const char *o = strstr(msg, ": offset ");
    if (o)
        off = strtoll(o + 9, NULL, 10);
    set_s(t, r, E_file, str_id(f, path));
    set_i(t, r, E_offset, off);
    set_s(t, r, E_message, str_id(f, msg));
    set_i(t, r, E_file_index, file_index);
}

static void on_error(void *ud, const char *msg) {
    struct run *ru = ud;
    add_error(ru->f, ru->path, ru->file_index, msg);
}

static void table_init(struct nsc_ot_file *f) {
    memset(f, 0, sizeof(*f));
    for (int i = 0; i < NSC_OT_NTABLES; i++) {
        f->t[i].spec = schemas[i].spec;
        f->t[i].ncols = schemas[i].n;
        f->t[i].col = calloc(schemas[i].n, sizeof(void *));
        if (!f->t[i].col)
            f->oom = 1;
    }
    f->str_cap = 64;
    if (!(f->str = malloc(f->str_cap * sizeof(*f->str))) || !(f->str[0] = strdup(""))) {
        f->oom = 1;
        return;
    }
    f->nstr = 1;
}

/* d is NULL when the file could not be opened. */
static void comms_and_drops(struct run *ru, const struct nsc_decoder *d) {
    struct nsc_ot_file *f = ru->f;
    const struct nsc_session *ses = d ? nsc_decoder_session(d) : NULL;
    if (ses && !ru->s_host) { /* a file without records */
        char host[sizeof(ses->host)];
        memcpy(host, ses->host, sizeof(host));
        host[sizeof(host) - 1] = '\0';
        ru->s_host = str_id(f, host);
        ru->pid = ses->pid;
    }
    struct nsc_decode_counts dc = {0};
    if (d)
        nsc_decoder_counts(d, &dc);
    struct nsc_ot_table *t = &f->t[NSC_OT_T_COMMS];
    for (uint32_t s = 0; s < dc.comm_slots; s++) {
        const struct nsc_comm_info *ci = nsc_decoder_comm(d, s);
        if (!ci || ci->serial != s)
            continue;
        size_t r = row_new(f, t);
        const struct nsc_gpu_clock *g = gpu_of(ru, s);
        set_s(t, r, C_host, ru->s_host);
        set_i(t, r, C_pid, ru->pid);
        set_s(t, r, C_file, ru->s_file);
        set_i(t, r, C_serial, s);
        set_s(t, r, C_comm, hex_id(f, ci->comm_id));
        set_s(t, r, C_comm_name, str_id(f, ci->name));
        set_i(t, r, C_rank, ci->rank);
        set_i(t, r, C_nranks, ci->nranks);
        set_i(t, r, C_nnodes, ci->nnodes);
        set_i(t, r, C_gpu_offset_ns, g ? g->offset_ns : 0);
        set_i(t, r, C_gpu_mapped, g != NULL);
        set_i(t, r, C_file_index, ru->file_index);
    }
    t = &f->t[NSC_OT_T_DROPS];
    size_t r = row_new(f, t);
    set_s(t, r, D_host, ru->s_host);
    set_i(t, r, D_pid, ru->pid);
    set_s(t, r, D_file, ru->s_file);
    if (d) {
        static const struct nsc_losses no_losses;
        static const struct nsc_stats_header no_stats;
        const struct nsc_losses *l = nsc_decoder_losses(d) ? nsc_decoder_losses(d) : &no_losses;
        const struct nsc_stats_header *h = nsc_decoder_stats(d) ? nsc_decoder_stats(d) : &no_stats;
        set_i(t, r, D_records_lost, (int64_t)l->total);
        set_i(t, r, D_dropped, (int64_t)l->dropped);
        set_i(t, r, D_ring_full, (int64_t)l->ring);
        set_i(t, r, D_no_thread, (int64_t)l->no_thread);
        set_i(t, r, D_write_lost, (int64_t)l->write);
        set_i(t, r, D_exit_lost, (int64_t)l->exit);
        set_i(t, r, D_events_dropped, (int64_t)l->events);
        set_i(t, r, D_failed_writes, h->write_errors);
        set_i(t, r, D_write_errno, h->write_errno);
        set_i(t, r, D_string_overflow, (int64_t)h->string_overflow);
        set_i(t, r, D_unnamed_events, (int64_t)dc.unnamed_events);
        set_i(t, r, D_comm_overflow, (int64_t)h->comm_overflow);
        set_i(t, r, D_memory_peak, (int64_t)h->memory_peak);
        set_i(t, r, D_memory_budget, (int64_t)h->memory_budget);
        set_i(t, r, D_ended, nsc_decoder_ended(d));
        set_i(t, r, D_replayed, ses && nsc_session_replayed(ses));
    }
    set_i(t, r, D_damaged, f->damaged);
    set_i(t, r, D_shift_ns, ru->shift);
    set_i(t, r, D_file_index, ru->file_index);
}

/* The file was read (the tracker has reported what was still in flight):
 * its comms and losses, while the decoder is still open. */
static void on_done(void *ud, const struct nsc_decoder *d) {
    struct run *ru = ud;
    ru->done = 1;
    comms_and_drops(ru, d);
}

int nsc_ot_read(const char *path, int file_index, int64_t shift_ns, unsigned want,
                struct nsc_ot_file *out) {
    table_init(out);
    struct run ru;
    memset(&ru, 0, sizeof(ru));
    ru.f = out;
    ru.want = want;
    ru.file_index = file_index;
    ru.shift = shift_ns;
    ru.path = path;
    ru.s_file = str_id(out, path);
    struct nsc_ops_hooks h = {.session = on_session, .record = on_record, .op = on_op,
                              .error = on_error, .done = on_done};
    if (nsc_ops_pass(path, shift_ns, &h, &ru) < 0)
        ru.oom = 1;
    if (!ru.done) /* not opened: its error row is in, and a drops row says so */
        comms_and_drops(&ru, NULL);
    free(ru.gpu);
    idmap_free(&ru.api);
    idmap_free(&ru.op_caller);
    idmap_free(&ru.kch);
    idmap_free(&ru.pop);
    idmap_free(&ru.step);
    free(ru.pops);
    free(ru.last_api);
    if (ru.oom)
        out->oom = 1;
    return out->oom ? -1 : out->damaged ? 1 : 0;
}

void nsc_ot_free(struct nsc_ot_file *f) {
    for (int i = 0; i < NSC_OT_NTABLES; i++) {
        for (unsigned c = 0; f->t[i].col && c < f->t[i].ncols; c++)
            free(f->t[i].col[c]);
        free(f->t[i].col);
    }
    for (uint32_t i = 0; i < f->nstr; i++)
        free(f->str[i]);
    free(f->str);
    free(f->str_hash);
    memset(f, 0, sizeof(*f));
}

int nsc_ot_job_shifts(const char *const *files, int nfiles, int mode, double max_uncertainty_ns,
                      int64_t *shift_ns, char *err, size_t errlen) {
    struct nsc_align al;
    if (nsc_align_files(files, nfiles, mode, max_uncertainty_ns, &al, err, errlen) != 0) {
        nsc_align_free(&al);
        return -1;
    }
    for (int i = 0; i < nfiles; i++)
        shift_ns[i] = al.shift_ns[i];
    nsc_align_free(&al);
    return 0;
}
