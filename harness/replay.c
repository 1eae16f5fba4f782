// SPDX-License-Identifier: Apache-2.0
/* replay.c - scripts and the multi-threaded, order-exact replay engine. */
#include "replay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_types.h"
#include "id_map.h"
#include "trace_decode.h"
#include "trace_format.h"

/* ---- scripts ---- */

void nsc_script_free(struct nsc_script *s) {
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->calls);
    free(s->comms);
    free(s->threads);
    memset(s, 0, sizeof(*s));
}

const char *nsc_script_intern(struct nsc_script *s, const char *text) {
    if (!text)
        return NULL;
    for (size_t i = 0; i < s->nstrings; i++)
        if (strcmp(s->strings[i], text) == 0)
            return s->strings[i];
    char **n = realloc(s->strings, (s->nstrings + 1) * sizeof(*n));
    if (!n)
        return NULL;
    s->strings = n;
    s->strings[s->nstrings] = strdup(text);
    return s->strings[s->nstrings++];
}

struct nsc_call *nsc_script_add(struct nsc_script *s) {
    if (s->ncalls == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        struct nsc_call *c = realloc(s->calls, cap * sizeof(*c));
        if (!c)
            return NULL;
        s->calls = c;
        s->cap = cap;
    }
    struct nsc_call *c = &s->calls[s->ncalls++];
    memset(c, 0, sizeof(*c));
    return c;
}

uint32_t nsc_script_thread(struct nsc_script *s, uint32_t tid, const char *name) {
    for (size_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].tid == tid)
            return (uint32_t)i;
    struct nsc_script_thread *t = realloc(s->threads, (s->nthreads + 1) * sizeof(*t));
    if (!t)
        return 0;
    s->threads = t;
    memset(&t[s->nthreads], 0, sizeof(t[0]));
    t[s->nthreads].tid = tid;
    if (name && *name)
        snprintf(t[s->nthreads].name, sizeof(t[0].name), "%s", name);
    else
        snprintf(t[s->nthreads].name, sizeof(t[0].name), "r%u", tid);
    return (uint32_t)s->nthreads++;
}

/* ---- recorded id -> the handle the plugin returned (util/id_map.h, fixed
 * to the script's calls; one replay thread at a time uses it: the turns
 * order them) ---- */

static void *handle_get(const struct nsc_id_map *m, uint64_t id) {
    void *const *v = id ? nsc_id_map_find(m, id) : NULL;
    return v ? *v : NULL;
}

static void handle_put(struct nsc_id_map *m, uint64_t id, void *handle) {
    void **v = id ? nsc_id_map_insert(m, id, NULL) : NULL; /* id 0: no event */
    if (v)
        *v = handle;
}

/* ---- replay ---- */

struct replay {
    const struct nsc_host *h;
    const struct nsc_script *s;
    struct nsc_id_map handles;
    void **ctx;
    int *word;                /* the one mask word every init got, as NCCL's global */
    struct nsc_id_map masks;  /* recorded id -> the mask its enqueue read (lineage) */
    sem_t *turn;       /* one per thread: "your call is next" */
    size_t *first;     /* first call of each thread (unused after start) */
    struct nsc_replay_stats st;
    int pid;
    const struct nsc_replay_probe *probe;
};

struct worker {
    struct replay *r;
    uint32_t index;
};

/* Whether NCCL starts an event of this type under mask m. From 2.28 (v5):
 * when its type is in the mask. 2.23-2.27 (v1-v4) decide per plan: the
 * Group starts when any type it gates is asked for, Coll and P2p only under
 * a Group handle that is not NULL, and on other bits than their own
 * (2.23-2.25: Coll, ProxyOp or ProxyStep for both; 2.26-2.27: Coll and P2p
 * also on ProxyOp, ProxyStep, KernelCh, and Coll on NetPlugin).
 * has_group: the plugin gave the plan's Group a handle (1 where the
 * recording names no Group). */
static int nccl_starts(int version, uint32_t m, uint64_t type, int has_group) {
    const uint32_t C = NSC_ABI_COLL, P = NSC_ABI_P2P, PO = NSC_ABI_PROXY_OP,
                   PS = NSC_ABI_PROXY_STEP, K = NSC_ABI_KERNEL_CH, N = NSC_ABI_NET_PLUGIN;
    if (version >= 5)
        return (m & type) != 0;
    if (type == NSC_ABI_GROUP)
        return (m & (version <= 2 ? C | P | PO | PS : NSC_ABI_GROUP | C | P | PO | PS | K | N)) != 0;
    if (type == C)
        return has_group && (m & (version <= 2 ? C | PO | PS : C | PO | PS | K | N));
    if (type == P)
        return has_group && (m & (version <= 2 ? C | PO | PS : P | PO | PS | K));
    return (m & type) != 0;
}

/* The mask NCCL decides an event under. NCCL copies its mask word at each
 * enqueue and its events follow that copy: from 2.28 (v5) each API call
 * (GroupApi, CollApi, P2pApi) reads it and the operation's Coll or P2p,
 * their KernelCh, ProxyOps and steps inherit it; a CeColl reads it at its
 * own enqueue; 2.23-2.27 (v1-v4) copy it per task and the plan's events
 * follow, which this replay takes at the plan's Group (a plugin that
 * changes the word between a plan's tasks is not modelled). ProxyCtrl and
 * anything whose enqueue is not in the recording read the word as it is. */
static int lineage_mask(struct replay *r, const struct nsc_call *c, int version) {
    uint64_t t = c->d.type;
    int reads = version >= 5 ? t == NSC_ABI_GROUP_API || t == NSC_ABI_COLL_API ||
                                   t == NSC_ABI_P2P_API || t == NSC_ABI_CE_COLL
                             : t == NSC_ABI_GROUP;
    uint64_t from = (version <= 4 && (t == NSC_ABI_COLL || t == NSC_ABI_P2P)) ? c->parent_group
                                                                              : c->parent;
    const int *m = NULL;
    if (!reads && t != NSC_ABI_PROXY_CTRL && from && from != NSC_FOREIGN_PARENT)
        m = nsc_id_map_find(&r->masks, from);
    int v = m ? *m : __atomic_load_n(r->word, __ATOMIC_RELAXED);
    int *slot = c->id ? nsc_id_map_insert(&r->masks, c->id, NULL) : NULL;
    if (slot)
        *slot = v;
    return v;
}

static void run_call(struct replay *r, const struct nsc_call *c) {
    const struct nsc_host *h = r->h;
    r->st.calls++;
    switch (c->kind) {
    case NSC_CALL_INIT: {
        const struct nsc_script_comm *cm = &r->s->comms[c->comm];
        if (nsc_host_init((struct nsc_host *)h, &r->ctx[c->comm], cm->comm_id, r->word, cm->name,
                          cm->nnodes, cm->nranks, cm->rank) != 0)
            r->ctx[c->comm] = NULL;
        break;
    }
    case NSC_CALL_START: {
        r->st.starts++;
        void *handle = NULL;
        int has_group = !c->parent_group || handle_get(&r->handles, c->parent_group);
        int mask = lineage_mask(r, c, h->version);
        if (!r->ctx[c->comm] || !nccl_starts(h->version, (uint32_t)mask, c->d.type, has_group)) {
            r->st.skipped_by_mask++;
        } else {
            nsc_abi_descr_v7 d = c->d;
            if (c->parent == NSC_FOREIGN_PARENT) {
                d.parentObj = (void *)(uintptr_t)0x7e57;
                d.proxyOp.pid = r->pid + 1; /* another process */
            } else {
                d.parentObj = handle_get(&r->handles, c->parent);
                if (d.type == NSC_ABI_PROXY_OP)
                    d.proxyOp.pid = r->pid;
            }
            if (d.type == NSC_ABI_COLL)
                d.coll.parentGroup = handle_get(&r->handles, c->parent_group);
            else if (d.type == NSC_ABI_P2P)
                d.p2p.parentGroup = handle_get(&r->handles, c->parent_group);
            else if (d.type == NSC_ABI_NET_PLUGIN && d.netPlugin.data)
                d.netPlugin.data = (void *)(uintptr_t)&c->net;
            uint64_t t0 = r->probe ? r->probe->clock() : 0;
            int delivered = nsc_host_start(h, r->ctx[c->comm], &handle, &d);
            if (r->probe && delivered)
                r->probe->sample(r->probe->ud, c->thread, NSC_CALL_START, r->probe->clock() - t0);
            if (delivered) {
                r->st.delivered++;
                if (!handle)
                    r->st.null_handles++;
            } else {
                r->st.skipped_by_version++;
            }
        }
        handle_put(&r->handles, c->id, handle);
        break;
    }
    case NSC_CALL_STOP:
    case NSC_CALL_STATE: {
        void *handle = handle_get(&r->handles, c->id);
        if (!handle)
            break; /* NCCL makes no call for an event the plugin did not take */
        uint64_t t0 = r->probe ? r->probe->clock() : 0;
        int delivered = 1;
        if (c->kind == NSC_CALL_STOP)
            nsc_host_stop(h, handle);
        else
            delivered = nsc_host_state(h, handle, c->state, c->arg);
        if (r->probe && delivered)
            r->probe->sample(r->probe->ud, c->thread, (enum nsc_call_kind)c->kind,
                             r->probe->clock() - t0);
        break;
    }
    case NSC_CALL_FINALIZE:
        nsc_host_finalize(h, r->ctx[c->comm]);
        r->ctx[c->comm] = NULL;
        break;
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct replay *r = w->r;
    const struct nsc_script *s = r->s;
    pthread_setname_np(pthread_self(), s->threads[w->index].name);
    for (size_t k = 0; k < s->ncalls; k++) {
        if (s->calls[k].thread != w->index)
            continue;
        sem_wait(&r->turn[w->index]);
        run_call(r, &s->calls[k]);
        /* Hand the turn to the owner of the next call: sem_post/sem_wait
         * order every call after the one before it, so the plugin sees the
         * recorded interleaving and all map updates are visible. */
        if (k + 1 < s->ncalls)
            sem_post(&r->turn[s->calls[k + 1].thread]);
    }
    return NULL;
}

int nsc_replay_run(const struct nsc_host *h, const struct nsc_script *s,
                   struct nsc_replay_stats *st, char *err, size_t errlen) {
    return nsc_replay_run_probed(h, s, NULL, st, err, errlen);
}

int nsc_replay_run_probed(const struct nsc_host *h, const struct nsc_script *s,
                          const struct nsc_replay_probe *probe, struct nsc_replay_stats *st,
                          char *err, size_t errlen) {
    struct replay r;
    memset(&r, 0, sizeof(r));
    r.probe = probe;
    r.h = h;
    r.s = s;
    r.pid = (int)getpid();
    if (s->ncalls == 0 || s->nthreads == 0) {
        snprintf(err, errlen, "nothing to replay");
        return -1;
    }
    if (nsc_id_map_init(&r.handles, s->ncalls < (1u << 30) ? (uint32_t)s->ncalls : 1u << 30,
                        sizeof(void *), NSC_ID_MAP_FIXED) != 0)
        return snprintf(err, errlen, "out of memory"), -1;
    if (nsc_id_map_init(&r.masks, s->ncalls < (1u << 30) ? (uint32_t)s->ncalls : 1u << 30,
                        sizeof(int), NSC_ID_MAP_FIXED) != 0) {
        nsc_id_map_destroy(&r.handles);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    r.word = &((struct nsc_host *)h)->nccl_mask;
    r.ctx = calloc(s->ncomms + 1, sizeof(*r.ctx));
    r.turn = calloc(s->nthreads, sizeof(*r.turn));
    pthread_t *tids = calloc(s->nthreads, sizeof(*tids));
    struct worker *ws = calloc(s->nthreads, sizeof(*ws));
    int rc = 0;
    if (!r.ctx || !r.turn || !tids || !ws) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    for (size_t i = 0; i < s->nthreads; i++)
        sem_init(&r.turn[i], 0, 0);
    size_t started = 0;
    for (; started < s->nthreads; started++) {
        ws[started].r = &r;
        ws[started].index = (uint32_t)started;
        if (pthread_create(&tids[started], NULL, worker_main, &ws[started]) != 0) {
            snprintf(err, errlen, "cannot create replay thread %zu", started);
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        sem_post(&r.turn[s->calls[0].thread]);
    for (size_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    for (size_t i = 0; i < s->nthreads; i++)
        sem_destroy(&r.turn[i]);
    /* Comms the recording never finalized are finalized now, as NCCL does at
     * ncclCommDestroy, so the plugin writes everything out. */
    for (size_t i = 0; i < s->ncomms; i++)
        if (r.ctx[i])
            nsc_host_finalize(h, r.ctx[i]);
    if (st)
        *st = r.st;
out:
    nsc_id_map_destroy(&r.handles);
    nsc_id_map_destroy(&r.masks);
    free(r.ctx);
    free(r.turn);
    free(tids);
    free(ws);
    return rc;
}

/* ---- scripts from ncclscope traces ---- */

struct from_trace {
    struct nsc_script *s;
    uint32_t *thread_map; /* writer thread index -> script thread */
    size_t nmap;
    uint32_t *comm_map;   /* comm serial -> script comm + 1 */
    size_t ncomm_map;
    uint64_t *ticks;      /* per call, for sorting */
    size_t nticks;
    char err[512];
    int failed;
};

static uint32_t map_comm(struct from_trace *ft, struct nsc_decoder *d, uint32_t serial) {
    if (serial >= ft->ncomm_map) {
        size_t n = serial + 64;
        uint32_t *m = realloc(ft->comm_map, n * sizeof(*m));
        if (!m)
            return 0;
        memset(m + ft->ncomm_map, 0, (n - ft->ncomm_map) * sizeof(*m));
        ft->comm_map = m;
        ft->ncomm_map = n;
    }
    if (!ft->comm_map[serial]) {
        struct nsc_script *s = ft->s;
        struct nsc_script_comm *c = realloc(s->comms, (s->ncomms + 1) * sizeof(*c));
        if (!c)
            return 0;
        s->comms = c;
        memset(&c[s->ncomms], 0, sizeof(c[0]));
        const struct nsc_comm_info *ci = nsc_decoder_comm(d, serial);
        if (ci) {
            c[s->ncomms].comm_id = ci->comm_id;
            snprintf(c[s->ncomms].name, sizeof(c[0].name), "%s", ci->name);
            c[s->ncomms].nnodes = ci->nnodes;
            c[s->ncomms].nranks = ci->nranks;
            c[s->ncomms].rank = ci->rank;
        } else {
            c[s->ncomms].rank = -1;
        }
        ft->comm_map[serial] = (uint32_t)++s->ncomms;
    }
    return ft->comm_map[serial] - 1;
}

static const char *str(struct from_trace *ft, struct nsc_decoder *d, uint32_t id) {
    return nsc_script_intern(ft->s, nsc_decoder_str(d, id));
}

/* A NetPlugin's data as the plugin kept it (plugin/api/nccl_api.c, fill_net). */
static void rebuild_net(struct nsc_call *c, const struct nsc_rec *r, const struct nsc_rec *ext) {
    nsc_abi_descr_v7 *d = &c->d;
    const union nsc_desc *o = &r->u.start.d;
    d->netPlugin.id = (int64_t)o->net.plugin_id;
    if (o->net.kind == 1) {
        c->net.ib.type = o->net.ev_type;
        c->net.ib.qp.device = o->net.a;
        c->net.ib.qp.opcode = o->net.b;
        c->net.ib.qp.length = o->net.length;
        if (ext) {
            c->net.ib.qp.wr_id = ext->u.ext.net_ib.wr_id;
            c->net.ib.qp.qpNum = ext->u.ext.net_ib.qp;
        }
        d->netPlugin.data = &c->net;
    } else if (o->net.kind == 2) {
        c->net.sock.type = o->net.ev_type;
        c->net.sock.sock.fd = o->net.a;
        c->net.sock.sock.op = o->net.b;
        c->net.sock.sock.length = o->net.length;
        d->netPlugin.data = &c->net;
    }
}

/* The v7 descriptor from a START and its EXT, one statement per row of
 * nccl/event_schema.def: GET_<KIND>(d's member, where the record keeps it). */
#define SRC_D(f) o->f
#define SRC_X(f) ext->u.ext.f
#define SRC_XC(f) ext->u.ext.f
#define HAS_D 1
#define HAS_X (ext != NULL)
#define HAS_XC (ext != NULL)
#define HAS_NIB 0 /* NetPlugin: rebuild_net */
#define HAS_NIBX 0
#define HAS_NSK 0
#define HAS_NRAW 0
#define GET_U(dst, src) dst = src
#define GET_I(dst, src) dst = src
#define GET_B(dst, src) dst = src
#define GET_STR(dst, src) dst = str(ft, dec, src)
#define GET_PTR(dst, src) dst = (void *)(uintptr_t)(src)
#define GET_PARENT(dst, src) c->parent_group = src
#define GET_CETAG(dst, src) dst = nsc_ce_coll_user_tag(o, ext ? &ext->u.ext : NULL)
#define GET_PY(dst, src)
#define GET_NETID(dst, src)
#define GET_NETU(dst, src)
#define GET_NETI(dst, src)
#define GET_NETPTR(dst, src)
#define GET_LIT(dst, src)
static void rebuild(struct from_trace *ft, struct nsc_decoder *dec, struct nsc_call *c,
                    const struct nsc_rec *r, const struct nsc_rec *ext) {
    nsc_abi_descr_v7 *d = &c->d;
    const union nsc_desc *o = &r->u.start.d;
    d->type = 1ull << r->h.etype;
    const struct nsc_comm_info *ci = nsc_decoder_comm(dec, r->h.aux);
    d->rank = ci && ci->rank >= 0 ? ci->rank : 0;
    c->parent = (r->h.flags & NSC_RF_FOREIGN_PARENT) ? NSC_FOREIGN_PARENT : r->u.start.parent;
    if (r->h.etype == NSC_ET_NET_PLUGIN) {
        rebuild_net(c, r, ext);
        return;
    }
    switch (r->h.etype) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ET_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_FIELD(ET, NAME, KIND, ABI, WHERE, OURS, TSV, VMIN, SHOW)                           \
    if (HAS_##WHERE) {                                                                         \
        GET_##KIND(d->ABI, SRC_##WHERE(OURS));                                                 \
    }
#include "event_schema.def"
    default:
        break;
    }
}
#undef SRC_D
#undef SRC_X
#undef SRC_XC
#undef HAS_D
#undef HAS_X
#undef HAS_XC
#undef HAS_NIB
#undef HAS_NIBX
#undef HAS_NSK
#undef HAS_NRAW
#undef GET_U
#undef GET_I
#undef GET_B
#undef GET_STR
#undef GET_PTR
#undef GET_PARENT
#undef GET_CETAG
#undef GET_PY
#undef GET_NETID
#undef GET_NETU
#undef GET_NETI
#undef GET_NETPTR
#undef GET_LIT

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    struct from_trace *ft = ud;
    struct nsc_script *s = ft->s;
    if (thread >= ft->nmap) {
        size_t n = thread + 16;
        uint32_t *m = realloc(ft->thread_map, n * sizeof(*m));
        if (!m)
            return;
        for (size_t i = ft->nmap; i < n; i++)
            m[i] = UINT32_MAX;
        ft->thread_map = m;
        ft->nmap = n;
    }
    if (r->h.kind == NSC_REC_THREAD) {
        char name[17];
        memcpy(name, r->u.thread_name, 16);
        name[16] = '\0';
        ft->thread_map[thread] = nsc_script_thread(s, r->h.aux, name);
        return;
    }
    if (ft->thread_map[thread] == UINT32_MAX) /* no THREAD record (damaged file) */
        ft->thread_map[thread] = nsc_script_thread(s, 1000000 + thread, NULL);
    struct nsc_call *c = nsc_script_add(s);
    if (!c) {
        ft->failed = 1;
        return;
    }
    if (s->ncalls > ft->nticks) {
        size_t n = s->cap;
        uint64_t *t = realloc(ft->ticks, n * sizeof(*t));
        if (!t) {
            ft->failed = 1;
            return;
        }
        ft->ticks = t;
        ft->nticks = n;
    }
    ft->ticks[s->ncalls - 1] = r->h.ticks;
    c->thread = ft->thread_map[thread];
    c->t_ns = nsc_decoder_mono_ns(d, r->h.ticks);
    c->id = r->h.id;
    switch (r->h.kind) {
    case NSC_REC_COMM_INIT:
        c->kind = NSC_CALL_INIT;
        c->comm = map_comm(ft, d, r->h.aux);
        break;
    case NSC_REC_COMM_FINALIZE:
        c->kind = NSC_CALL_FINALIZE;
        c->comm = map_comm(ft, d, r->h.aux);
        break;
    case NSC_REC_START:
        c->kind = NSC_CALL_START;
        c->comm = map_comm(ft, d, r->h.aux);
        rebuild(ft, d, c, r, ext);
        break;
    case NSC_REC_STOP:
        c->kind = NSC_CALL_STOP;
        break;
    case NSC_REC_STATE:
        c->kind = NSC_CALL_STATE;
        c->state = (int)r->h.aux;
        c->arg = r->u.state.arg;
        break;
    default:
        s->ncalls--;
        break;
    }
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct from_trace *ft = ud;
    if (!ft->err[0])
        snprintf(ft->err, sizeof(ft->err), "%s", msg);
}

/* Sort calls by record clock; equal stamps keep file order (stable). */
static uint64_t *sort_ticks;
static int by_ticks(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (sort_ticks[i] != sort_ticks[j])
        return sort_ticks[i] < sort_ticks[j] ? -1 : 1;
    return i < j ? -1 : (i > j);
}

int nsc_script_from_trace(struct nsc_script *s, const char *path, char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    struct nsc_decoder d;
    if (nsc_decoder_open(&d, path) != NSC_OK) {
        snprintf(err, errlen, "%s", nsc_decoder_error(&d));
        return -1;
    }
    struct from_trace ft;
    memset(&ft, 0, sizeof(ft));
    ft.s = s;
    struct nsc_decode_ops ops = {.record = on_record, .error = on_error};
    nsc_decoder_run(&d, &ops, &ft);
    nsc_decoder_close(&d);
    int rc = 0;
    if (ft.failed) {
        snprintf(err, errlen, "out of memory reading %s", path);
        rc = -1;
    } else if (s->ncalls) {
        size_t *order = malloc(s->ncalls * sizeof(*order));
        struct nsc_call *sorted = malloc(s->ncalls * sizeof(*sorted));
        if (!order || !sorted) {
            free(order);
            free(sorted);
            snprintf(err, errlen, "out of memory sorting %s", path);
            rc = -1;
        } else {
            for (size_t i = 0; i < s->ncalls; i++)
                order[i] = i;
            sort_ticks = ft.ticks;
            qsort(order, s->ncalls, sizeof(*order), by_ticks);
            for (size_t i = 0; i < s->ncalls; i++)
                sorted[i] = s->calls[order[i]];
            /* NetPlugin data pointers point into the calls themselves. */
            for (size_t i = 0; i < s->ncalls; i++)
                if (sorted[i].kind == NSC_CALL_START && sorted[i].d.type == NSC_ABI_NET_PLUGIN &&
                    sorted[i].d.netPlugin.data)
                    sorted[i].d.netPlugin.data = &sorted[i].net;
            free(s->calls);
            s->calls = sorted;
            s->cap = s->ncalls;
            free(order);
        }
    }
    if (rc == 0 && ft.err[0])
        snprintf(err, errlen, "%s", ft.err); /* damage: script holds what was intact */
    else if (rc == 0)
        err[0] = '\0';
    free(ft.thread_map);
    free(ft.comm_map);
    free(ft.ticks);
    return rc;
}

/* ---- marking replayed traces ---- */

/* Marks every raw SESSION block of one open file that names `pid`. Walks
 * block headers only; stops at the first header that does not check (the
 * rest of a damaged file is left as it is). Returns 1 marked, 0 not ours,
 * -1 on an I/O error. */
static int mark_file(int fd, uint32_t pid) {
    struct nsc_file_header fh;
    if (pread(fd, &fh, sizeof(fh), 0) != (ssize_t)sizeof(fh) ||
        memcmp(fh.magic, NSC_FILE_MAGIC, sizeof(fh.magic)) != 0 || fh.header_size < sizeof(fh))
        return 0;
    off_t off = (off_t)fh.header_size;
    int marked = 0;
    for (;;) {
        struct nsc_block_header h;
        if (pread(fd, &h, sizeof(h), off) != (ssize_t)sizeof(h) || h.magic != NSC_BLOCK_MAGIC ||
            h.check != nsc_header_check(&h))
            break;
        off_t payload = off + (off_t)sizeof(h);
        if (h.type == NSC_BLK_SESSION && h.flags == 0 && h.stored_len == sizeof(struct nsc_session)) {
            struct nsc_session s;
            if (pread(fd, &s, sizeof(s), payload) != (ssize_t)sizeof(s))
                break;
            if (s.pid != pid)
                return marked;
            /* the version text must end before the mark */
            if (!nsc_session_replayed(&s) &&
                memchr(s.plugin_version, '\0', NSC_SESSION_REPLAY_OFF) != NULL) {
                memcpy(s.plugin_version + NSC_SESSION_REPLAY_OFF, NSC_SESSION_REPLAY_MARK,
                       sizeof(NSC_SESSION_REPLAY_MARK));
                off_t at = payload + (off_t)offsetof(struct nsc_session, plugin_version) +
                           NSC_SESSION_REPLAY_OFF;
                if (pwrite(fd, NSC_SESSION_REPLAY_MARK, sizeof(NSC_SESSION_REPLAY_MARK), at) !=
                    (ssize_t)sizeof(NSC_SESSION_REPLAY_MARK))
                    return -1;
            }
            marked = 1;
        }
        off = payload + (off_t)h.stored_len;
    }
    return marked;
}

int nsc_replay_mark_traces(const char *dir, uint32_t pid, time_t since, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    size_t slen = strlen(NSC_FILE_SUFFIX);
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len <= slen || strcmp(de->d_name + len - slen, NSC_FILE_SUFFIX) != 0)
            continue;
        char path[4352];
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
            continue;
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime < since)
            continue;
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            continue; /* not writable: not a file this process wrote */
        int r = mark_file(fd, pid);
        int e = errno;
        close(fd);
        if (r < 0) {
            snprintf(err, errlen, "%s: cannot mark it as replayed: %s", path, strerror(e));
            closedir(d);
            return -1;
        }
        n += r;
    }
    closedir(d);
    return n;
}
