/* convert.c - the Chrome trace JSON writer. */
#include "convert.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_track.h"
#include "event_types.h"
#include "gpu_clock.h"
#include "hash.h"
#include "json_writer.h"
#include "perfetto_proto.h"
#include "python_view.h"
#include "result.h"
#include "trace_decode.h"

/* GPU-side tracks of a rank (Perfetto thread ids inside the rank's process):
 * operation lanes (enqueue -> completion; several lanes because operations
 * overlap when the host runs ahead of the GPU) and one track per channel. */
#define GPU_LANES 64
#define TID_GPU_LANE 0x40000000u
#define TID_GPU_CHANNEL 0x40001000u

#define INFLIGHT_HEAP 256

struct rank_view {
    uint64_t lane_end[GPU_LANES];
    uint64_t lanes_named;
    uint64_t channels_named;
    /* operations in flight, for the counters: a min-heap of end times */
    struct { uint64_t end, bytes; } heap[INFLIGHT_HEAP];
    uint32_t nheap;
    uint64_t bytes_in_flight;
};

/* Where an already written slice is, so a flow can start from it. */
struct placed {
    uint64_t key;   /* local id + 1 (events) or collective key; 0 = free */
    uint64_t pid, tid, ts;
};
#define PLACED_CAP (1u << 16)
#define CHAIN_CAP (1u << 20)

#define MAX_STATES 32 /* per event; more are counted, not kept */

struct state_rec {
    uint64_t ns;
    uint64_t arg;
    uint32_t state;
};

struct open_ev {
    uint64_t id;            /* local id; 0 = free slot */
    struct nsc_rec start;
    struct nsc_rec ext;
    int has_start, has_ext, has_stop;
    uint8_t stop_etype;     /* the STOP's type: a STOP pairs with a START of its type only */
    uint32_t start_thread, stop_thread;
    uint64_t start_ns, stop_ns;
    struct state_rec *states;
    uint32_t nstates, states_dropped;
    struct track *track;
    struct open_ev *prev, *next; /* on the track, in start order */
};

/* A KernelPhase's GPU interval, drawn after (and inside) its KernelCh's. */
struct gpu_phase {
    uint64_t id, parent, gs, ge;
    uint32_t serial;
    uint16_t name;
    uint8_t ch, phase;
};
#define GPU_PHASES_MAX 4096 /* waiting at once; NCCL 2.31 stops a KernelCh right after its phases */

struct track {
    uint64_t key;           /* thread index << 32 | comm serial */
    uint32_t tid;
    int named;
    struct open_ev *head, *tail;
    struct track *hnext;
};

/* Events in flight of one file, by id: open addressing with pointers. */
struct evmap {
    struct open_ev **slots;
    size_t cap, n;
    struct open_ev *spare; /* finished events kept for reuse (with their states array) */
    size_t nspare;
};

struct file_ctx {
    int index;
    const char *path;
    struct nsc_decoder dec;
    struct evmap open;
    struct track *tracks[256];
    struct nsc_stats_header stats;
    struct nsc_thread_stats *tstats;
    uint32_t ntstats;
    int have_stats;
    uint64_t last_ns;
    int64_t shift_ns;     /* onto the merged timeline */
    struct nsc_coll_track *track; /* operations: enqueue to completion */
    int replayed;                 /* written by `ncclscope replay` (trace_format.h) */
    struct nsc_gpu_clock *gpu;    /* per comm serial: GPU clock offset */
    uint32_t ngpu;
    struct rank_view **views;     /* per comm serial, made when first used */
    uint32_t nviews;
    uint64_t impossible_gpu, ops_drawn, ops_lane_overflow, gpu_before_enqueue;
    uint32_t *comm_named; /* per serial: process_name written */
    size_t ncomm_named;
    struct gpu_phase *phases; /* KernelPhase GPU intervals waiting for their KernelCh's */
    uint32_t nphases, phases_cap;
    struct nsc_pyview *py;    /* Python slices (python_view.h); made at the first PY record */
};

struct conv {
    const struct nsc_convert_opts *o;
    struct pf_writer *pf;      /* the protobuf writer, or NULL for JSON */
    struct jw argw;            /* argument members of the event being written */
    struct jw *aw;
    int part;                  /* output file number when splitting */
    uint64_t t_origin;         /* the job's start on the merged timeline (time filter) */
    int out_error;
    uint64_t records_seen;
    double progress_t;
    uint64_t orphans_by_type[16]; /* STOP/STATE records whose START never came, by type */
    uint64_t filtered;
    struct placed *recent;     /* recently written events of the current file */
    struct placed *chain;      /* last completion written per (comm, func, seq) */
    uint64_t chain_n, flows, chain_full;
    uint32_t *file_masks;      /* event mask per file (from its session) */
    struct jw w;
    int first;
    int nfiles;
    uint32_t *file_pids;       /* recorded pid per file, for PXN parents */
    char (*file_hosts)[64];
    struct file_ctx *f;
    struct nsc_convert_result res;
};

static void reset_names(struct conv *c) {
    struct file_ctx *f = c->f;
    if (!f)
        return;
    for (int b = 0; b < 256; b++)
        for (struct track *t = f->tracks[b]; t; t = t->hnext)
            t->named = 0;
    if (f->comm_named)
        memset(f->comm_named, 0, f->ncomm_named * sizeof(*f->comm_named));
    for (uint32_t i = 0; i < f->nviews; i++)
        if (f->views[i])
            f->views[i]->lanes_named = f->views[i]->channels_named = 0;
}

/* ---- map ---- */

static size_t hidx(uint64_t id, size_t cap) {
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static struct open_ev *map_find(struct evmap *m, uint64_t id) {
    if (!m->cap)
        return NULL;
    for (size_t i = hidx(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i])
            return NULL;
        if (m->slots[i]->id == id)
            return m->slots[i];
    }
}

static int map_grow(struct evmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct open_ev **s = calloc(cap, sizeof(*s));
    if (!s)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i]) {
            size_t j = hidx(m->slots[i]->id, cap);
            while (s[j])
                j = (j + 1) & (cap - 1);
            s[j] = m->slots[i];
        }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

static struct open_ev *map_get_or_add(struct evmap *m, uint64_t id) {
    struct open_ev *e = map_find(m, id);
    if (e)
        return e;
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0)
        return NULL;
    if (m->spare) {
        /* reuse a finished event and its states array: no malloc per event */
        e = m->spare;
        m->spare = e->next;
        m->nspare--;
        struct state_rec *st = e->states;
        memset(e, 0, sizeof(*e));
        e->states = st;
    } else {
        e = calloc(1, sizeof(*e));
        if (!e)
            return NULL;
    }
    e->id = id;
    size_t i = hidx(id, m->cap);
    while (m->slots[i])
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = e;
    m->n++;
    return e;
}

static void map_remove(struct evmap *m, struct open_ev *e) {
    size_t i = hidx(e->id, m->cap);
    while (m->slots[i] != e)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = NULL;
    m->n--;
    /* re-insert the rest of the cluster (linear probing deletion) */
    for (size_t j = (i + 1) & (m->cap - 1); m->slots[j]; j = (j + 1) & (m->cap - 1)) {
        struct open_ev *x = m->slots[j];
        m->slots[j] = NULL;
        size_t k = hidx(x->id, m->cap);
        while (m->slots[k])
            k = (k + 1) & (m->cap - 1);
        m->slots[k] = x;
    }
    if (m->nspare < 4096) {
        e->next = m->spare;
        m->spare = e;
        m->nspare++;
        return;
    }
    free(e->states);
    free(e);
}

static void map_free(struct evmap *m) {
    for (struct open_ev *e = m->spare, *n; e; e = n) {
        n = e->next;
        free(e->states);
        free(e);
    }
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

/* ---- ids, pids, names ---- */

static uint64_t out_id(const struct conv *c, int file, uint64_t local) {
    return local * (uint64_t)c->nfiles + (uint64_t)file;
}

static uint64_t out_pid(int file, uint32_t serial) { return (uint64_t)file * 65536 + serial; }

static void begin_event(struct conv *c) {
    jw_raw(&c->w, c->first ? "\n" : ",\n");
    c->first = 0;
}

static const char *const doc_head = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";

/* ---- one event, to either writer ---- */

enum tev_kind {
    TEV_SLICE,     /* complete slice: ts, dur */
    TEV_ASYNC,     /* slice that does not nest on its thread: ts, dur, id */
    TEV_INSTANT,   /* scope: 't' thread, 'p' process */
    TEV_COUNTER,   /* ckey = cval */
    TEV_FLOW_OUT,  /* flow id leaves the slice at (pid, tid, ts) */
    TEV_FLOW_IN,   /* and arrives at the slice starting at (pid, tid, ts) */
    TEV_PROCESS,   /* process name; sort */
    TEV_THREAD,    /* thread name; sort (0: none) */
};

struct tev {
    enum tev_kind k;
    const char *cat, *name;
    uint64_t pid, tid, ts, dur, id, sort;
    const char *ckey;
    int64_t cval;
    char scope;
    int has_tid;
    int with_args; /* the args writer holds this event's argument members */
};

/* Starts the argument members of the next event (written with arg_* and
 * write_args into c->aw, without braces). */
static void args_begin(struct conv *c) {
    c->argw.len = 0;
    c->aw = &c->argw;
}

static void json_event(struct conv *c, const struct tev *e) {
    struct jw *w = &c->w;
    begin_event(c);
    switch (e->k) {
    case TEV_PROCESS:
        jw_raw(w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
        jw_u64(w, e->pid);
        jw_raw(w, ",\"args\":{\"name\":");
        jw_str(w, e->name);
        jw_raw(w, "}}");
        if (e->sort) {
            begin_event(c);
            jw_raw(w, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
            jw_u64(w, e->pid);
            jw_raw(w, ",\"args\":{\"sort_index\":");
            jw_u64(w, e->sort);
            jw_raw(w, "}}");
        }
        return;
    case TEV_THREAD:
        jw_raw(w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        jw_u64(w, e->pid);
        jw_raw(w, ",\"tid\":");
        jw_u64(w, e->tid);
        jw_raw(w, ",\"args\":{\"name\":");
        jw_str(w, e->name);
        jw_raw(w, "}}");
        if (e->sort) {
            begin_event(c);
            jw_raw(w, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":");
            jw_u64(w, e->pid);
            jw_raw(w, ",\"tid\":");
            jw_u64(w, e->tid);
            jw_raw(w, ",\"args\":{\"sort_index\":");
            jw_u64(w, e->sort);
            jw_raw(w, "}}");
        }
        return;
    case TEV_COUNTER:
        jw_raw(w, "{\"ph\":\"C\",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"pid\":");
        jw_u64(w, e->pid);
        if (e->has_tid) {
            jw_raw(w, ",\"tid\":");
            jw_u64(w, e->tid);
        }
        jw_raw(w, ",\"ts\":");
        jw_us(w, e->ts);
        jw_raw(w, ",\"args\":{\"");
        jw_raw(w, e->ckey);
        jw_raw(w, "\":");
        jw_i64(w, e->cval);
        jw_raw(w, "}}");
        return;
    case TEV_FLOW_OUT:
    case TEV_FLOW_IN:
        jw_raw(w, e->k == TEV_FLOW_OUT ? "{\"ph\":\"s\",\"cat\":\"flow\",\"name\":"
                                       : "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"id\":");
        jw_u64(w, e->id);
        break;
    case TEV_SLICE:
        jw_raw(w, "{\"ph\":\"X\",\"cat\":");
        jw_str(w, e->cat);
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        break;
    case TEV_ASYNC:
        /* the end first (complete), then the begin, which takes the args */
        jw_raw(w, "{\"ph\":\"e\",\"cat\":");
        jw_str(w, e->cat);
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"id\":");
        jw_u64(w, e->id);
        jw_raw(w, ",\"pid\":");
        jw_u64(w, e->pid);
        jw_raw(w, ",\"tid\":");
        jw_u64(w, e->tid);
        jw_raw(w, ",\"ts\":");
        jw_us(w, e->ts + e->dur);
        jw_raw(w, "}");
        begin_event(c);
        jw_raw(w, "{\"ph\":\"b\",\"cat\":");
        jw_str(w, e->cat);
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"id\":");
        jw_u64(w, e->id);
        break;
    case TEV_INSTANT:
        jw_raw(w, e->scope == 'p' ? "{\"ph\":\"i\",\"s\":\"p\"" : "{\"ph\":\"i\",\"s\":\"t\"");
        if (e->cat) {
            jw_raw(w, ",\"cat\":");
            jw_str(w, e->cat);
        }
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        break;
    }
    jw_raw(w, ",\"pid\":");
    jw_u64(w, e->pid);
    jw_raw(w, ",\"tid\":");
    jw_u64(w, e->tid);
    jw_raw(w, ",\"ts\":");
    jw_us(w, e->ts);
    if (e->k == TEV_SLICE) {
        jw_raw(w, ",\"dur\":");
        jw_us(w, e->dur);
    }
    if (e->with_args) {
        jw_raw(w, ",\"args\":{");
        jw_rawn(w, c->argw.buf, c->argw.len);
        jw_raw(w, "}");
    }
    jw_raw(w, "}");
}

static void proto_event(struct conv *c, const struct tev *e) {
    const char *a = e->with_args ? c->argw.buf : NULL;
    size_t al = e->with_args ? c->argw.len : 0;
    switch (e->k) {
    case TEV_PROCESS:
        pf_process(c->pf, e->pid, e->name);
        return;
    case TEV_THREAD:
        pf_thread(c->pf, e->pid, e->tid, e->name);
        return;
    case TEV_COUNTER:
        pf_counter(c->pf, e->pid, e->name, e->ts, e->cval);
        return;
    case TEV_FLOW_OUT:
        pf_instant(c->pf, e->pid, e->tid, e->ts, "flow", e->name, NULL, 0, e->id, 0);
        return;
    case TEV_FLOW_IN:
        pf_instant(c->pf, e->pid, e->tid, e->ts, "flow", e->name, NULL, 0, 0, e->id);
        return;
    case TEV_SLICE:
    case TEV_ASYNC:
        pf_slice(c->pf, e->k == TEV_ASYNC, e->pid, e->tid, e->ts, e->dur, e->cat, e->name, a, al);
        return;
    case TEV_INSTANT:
        pf_instant(c->pf, e->pid, e->tid, e->ts, e->cat, e->name, a, al, 0, 0);
        return;
    }
}

static void out_event(struct conv *c, const struct tev *e) {
    if (c->pf)
        proto_event(c, e);
    else
        json_event(c, e);
}

/* The path of output part k: trace.json -> trace-000.json (or .json.gz). */
static void part_path(const struct nsc_convert_opts *o, int k, char *buf, size_t n) {
    if (!o->split_bytes) {
        snprintf(buf, n, "%s", o->out_path);
        return;
    }
    const char *p = o->out_path, *dot = strstr(p, ".json");
    if (!dot)
        dot = p + strlen(p);
    snprintf(buf, n, "%.*s-%03d%s", (int)(dot - p), p, k, dot);
}

/* Whether an event of comm `serial` and type etype over [start, end] passes
 * the filters. */
static int keep(struct conv *c, struct file_ctx *f, uint32_t serial, int etype, uint64_t start,
                uint64_t end) {
    const struct nsc_convert_opts *o = c->o;
    if (o->event_mask && etype >= 0 && !((o->event_mask >> etype) & 1))
        goto drop;
    if (o->nranks || o->comm) {
        const struct nsc_comm_info *ci = nsc_decoder_comm(&f->dec, serial);
        if (!ci)
            goto drop;
        if (o->nranks) {
            int ok = 0;
            for (int i = 0; i < o->nranks && !ok; i++)
                ok = o->ranks[i] == ci->rank;
            if (!ok)
                goto drop;
        }
        if (o->comm) {
            char hex[17];
            snprintf(hex, sizeof(hex), "%016" PRIx64, ci->comm_id);
            if (strncmp(hex, o->comm, strlen(o->comm)) != 0 && strcmp(ci->name, o->comm) != 0)
                goto drop;
        }
    }
    if (o->t_to > 0) {
        double a = ((double)start - (double)c->t_origin) / 1e9;
        double b = ((double)end - (double)c->t_origin) / 1e9;
        if (b < o->t_from || a > o->t_to)
            goto drop;
    }
    return 1;
drop:
    c->filtered++;
    return 0;
}

static void reset_names(struct conv *c);

/* Past the size limit, the current part is closed as a complete document
 * and the next one begins; process and thread names are written again
 * where they are next used, since each part must stand alone in Perfetto. */
static void maybe_rotate(struct conv *c) {
    const struct nsc_convert_opts *o = c->o;
    if (!o->split_bytes || c->w.bytes + c->w.len < o->split_bytes)
        return;
    jw_raw(&c->w, "\n],\"metadata\":{\"ncclscope\":{\"part\":");
    jw_u64(&c->w, (uint64_t)c->part);
    jw_raw(&c->w, ",\"continued\":true}}}\n");
    char err[1200];
    if (jw_close(&c->w, err, sizeof(err)) != 0) {
        if (!c->out_error) /* once: a full disk fails every part after */
            fprintf(stderr, "ncclscope convert: %s\n", err);
        c->out_error = 1;
    }
    char path[4200];
    part_path(o, ++c->part, path, sizeof(path));
    if (jw_open_path(&c->w, path, o->files, o->nfiles, err, sizeof(err)) != 0) {
        if (!c->out_error)
            fprintf(stderr, "ncclscope convert: cannot write %s\n", err);
        c->out_error = 1;
        jw_open(&c->w, NULL); /* discards (no file) until the end; reported */
        c->w.error = 1;
    }
    jw_raw(&c->w, doc_head);
    c->first = 1;
    reset_names(c);
}

static void name_process(struct conv *c, struct file_ctx *f, uint32_t serial) {
    if (serial >= NSC_COMM_SERIAL_MAX)
        return; /* damaged: no comm has it; its events keep a numbered process */
    if (serial >= f->ncomm_named) {
        size_t n = serial + 64;
        if (n < f->ncomm_named * 2)
            n = f->ncomm_named * 2;
        uint32_t *p = realloc(f->comm_named, n * sizeof(*p));
        if (!p)
            return;
        memset(p + f->ncomm_named, 0, (n - f->ncomm_named) * sizeof(*p));
        f->comm_named = p;
        f->ncomm_named = n;
    }
    const struct nsc_comm_info *ci = nsc_decoder_comm(&f->dec, serial);
    uint32_t want = ci ? (uint32_t)ci->rank + 2u : 1; /* re-name once the rank is known */
    if (f->comm_named[serial] == want)
        return;
    f->comm_named[serial] = want;
    char name[256];
    const struct nsc_session *s = &f->dec.session;
    if (serial == NSC_PY_SERIAL) {
        snprintf(name, sizeof(name), "%s pid %u python", s->host, s->pid);
        ci = NULL;
    } else if (ci) {
        char rank[16];
        if (ci->rank >= 0)
            snprintf(rank, sizeof(rank), "%d", ci->rank);
        else
            snprintf(rank, sizeof(rank), "?");
        snprintf(name, sizeof(name), "%s pid %u rank %s/%d comm %s%s%016" PRIx64, s->host, s->pid,
                 rank, ci->nranks, ci->name, ci->name[0] ? " " : "", ci->comm_id);
    } else {
        snprintf(name, sizeof(name), "%s pid %u comm #%u", s->host, s->pid, serial);
    }
    struct tev e = {.k = TEV_PROCESS, .pid = out_pid(f->index, serial), .name = name,
                    .sort = (uint64_t)f->index * 100000 +
                            (ci && ci->rank >= 0 ? (uint64_t)ci->rank : 99999) + 1};
    out_event(c, &e);
}

static const char *role_of(const struct file_ctx *f, unsigned etype) {
    switch (etype) {
    case NSC_ET_KERNEL_CH:
    case NSC_ET_KERNEL_PHASE:
        /* NCCL 2.31 (API v7) polls GPU counters on a profiler thread per device */
        if (f->dec.session.api_version >= 7)
            return "profiler thread";
        return "proxy thread";
    case NSC_ET_PROXY_OP:
    case NSC_ET_PROXY_STEP:
    case NSC_ET_PROXY_CTRL:
        return "proxy thread";
    case NSC_ET_NET_PLUGIN:
        return "network thread";
    default:
        return "application thread";
    }
}

static struct track *track_of(struct conv *c, struct file_ctx *f, uint32_t thread,
                              uint32_t serial, unsigned etype) {
    uint64_t key = ((uint64_t)thread << 32) | serial;
    unsigned b = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 56);
    struct track *t;
    for (t = f->tracks[b]; t; t = t->hnext)
        if (t->key == key)
            break;
    uint32_t tid = thread < f->dec.nthreads && f->dec.threads[thread].known
                       ? f->dec.threads[thread].tid
                       : 1000000 + thread;
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (!t)
            return NULL;
        t->key = key;
        t->hnext = f->tracks[b];
        f->tracks[b] = t;
    }
    if (!t->named || t->tid != tid) {
        t->tid = tid;
        t->named = 1;
        name_process(c, f, serial);
        char name[96];
        const char *os = thread < f->dec.nthreads ? f->dec.threads[thread].name : "";
        snprintf(name, sizeof(name), "%s %u%s%s%s",
                 serial == NSC_PY_SERIAL ? "python thread" : role_of(f, etype), tid,
                 os[0] ? " (" : "", os, os[0] ? ")" : "");
        struct tev e = {.k = TEV_THREAD, .pid = out_pid(f->index, serial), .tid = tid, .name = name};
        out_event(c, &e);
    }
    return t;
}

/* ---- event output ---- */

static const char *event_name(const struct file_ctx *f, const struct nsc_rec *r) {
    const union nsc_desc *d = &r->u.start.d;
    const char *s = NULL;
    switch (r->h.etype) {
    case NSC_ET_COLL_API: s = nsc_decoder_str(&f->dec, d->coll_api.func); break;
    case NSC_ET_P2P_API: s = nsc_decoder_str(&f->dec, d->p2p_api.func); break;
    case NSC_ET_COLL: s = nsc_decoder_str(&f->dec, d->coll.func); break;
    case NSC_ET_P2P: s = nsc_decoder_str(&f->dec, d->p2p.func); break;
    case NSC_ET_CE_COLL: s = nsc_decoder_str(&f->dec, d->ce_coll.func); break;
    case NSC_ET_KERNEL_PHASE: s = nsc_decoder_str(&f->dec, d->kernel_phase.name); break;
    default: break;
    }
    return s ? s : nsc_etype_name(r->h.etype);
}

static inline void arg_str(struct conv *c, struct file_ctx *f, const char *k, uint32_t id) {
    jw_key(c->aw, k);
    jw_str(c->aw, nsc_decoder_str(&f->dec, id));
}
static inline void arg_u(struct conv *c, const char *k, uint64_t v) {
    jw_key(c->aw, k);
    jw_u64(c->aw, v);
}
static inline void arg_i(struct conv *c, const char *k, int64_t v) {
    jw_key(c->aw, k);
    jw_i64(c->aw, v);
}
static inline void arg_p(struct conv *c, const char *k, uint64_t v) {
    jw_key(c->aw, k);
    jw_hex(c->aw, v);
}

static int file_of_pid(const struct conv *c, const struct file_ctx *f, uint32_t pid) {
    for (int i = 0; i < c->nfiles; i++)
        if (c->file_pids[i] == pid && strcmp(c->file_hosts[i], f->dec.session.host) == 0)
            return i;
    return -1;
}

/* ---- flows ---- */

static void flow_point(struct conv *c, const char *ph, uint64_t id, const char *name, uint64_t pid,
                       uint64_t tid, uint64_t ts) {
    struct tev e = {.k = ph[0] == 's' ? TEV_FLOW_OUT : TEV_FLOW_IN, .id = id, .name = name,
                    .pid = pid, .tid = tid, .ts = ts};
    out_event(c, &e);
}

/* An arrow from (pid, tid, ts) to the slice starting at (pid2, tid2, ts2). */
static void flow(struct conv *c, uint64_t id, const char *name, const struct placed *from,
                 uint64_t pid2, uint64_t tid2, uint64_t ts2) {
    flow_point(c, "s", id, name, from->pid, from->tid, from->ts);
    flow_point(c, "f", id, name, pid2, tid2, ts2);
    c->flows++;
}

static struct placed *recent_slot(struct conv *c, uint64_t local_id) {
    return &c->recent[(local_id * 0x9e3779b97f4a7c15ull) >> 48];
}

/* Collective key: NCCL numbers collectives per (communicator, function). */
static uint64_t coll_key(const struct nsc_op_done *op) {
    uint64_t h = nsc_fnv1a_str(op->comm_id * 0x9e3779b97f4a7c15ull ^ (op->seq + 1), op->func);
    return h ? h : 1;
}

static struct placed *chain_slot(struct conv *c, uint64_t key, int *found) {
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 44) & (CHAIN_CAP - 1);
    while (c->chain[i].key && c->chain[i].key != key)
        i = (i + 1) & (CHAIN_CAP - 1);
    *found = c->chain[i].key == key;
    return &c->chain[i];
}

/* ---- counters: operations and bytes in flight per rank ---- */

static void counter(struct conv *c, struct file_ctx *f, uint32_t serial, uint64_t ts,
                    uint64_t ops, uint64_t bytes) {
    struct tev e = {.k = TEV_COUNTER, .name = "NCCL operations in flight", .ckey = "operations",
                    .pid = out_pid(f->index, serial), .ts = ts, .cval = (int64_t)ops};
    out_event(c, &e);
    e.name = "NCCL bytes in flight";
    e.ckey = "bytes";
    e.cval = (int64_t)bytes;
    out_event(c, &e);
}

static void heap_pop(struct rank_view *v) {
    v->bytes_in_flight -= v->heap[0].bytes;
    v->heap[0] = v->heap[--v->nheap];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < v->nheap && v->heap[l].end < v->heap[m].end)
            m = l;
        if (r < v->nheap && v->heap[r].end < v->heap[m].end)
            m = r;
        if (m == i)
            break;
        __typeof__(v->heap[0]) t = v->heap[i];
        v->heap[i] = v->heap[m];
        v->heap[m] = t;
        i = m;
    }
}

/* Operations are reported close to their start order (completion order per
 * stream); the counters step at each start and each end seen so far. An
 * operation reported later than one that started after it shows in the
 * counter from its report on (documented approximation). */
static void inflight_add(struct conv *c, struct file_ctx *f, uint32_t serial, struct rank_view *v,
                         uint64_t start, uint64_t end, uint64_t bytes) {
    while (v->nheap && v->heap[0].end <= start) {
        uint64_t t = v->heap[0].end;
        heap_pop(v);
        counter(c, f, serial, t, v->nheap, v->bytes_in_flight);
    }
    if (v->nheap == INFLIGHT_HEAP) {
        uint64_t t = v->heap[0].end;
        heap_pop(v);
        counter(c, f, serial, t, v->nheap, v->bytes_in_flight);
    }
    uint32_t i = v->nheap++;
    v->heap[i].end = end;
    v->heap[i].bytes = bytes;
    while (i && v->heap[(i - 1) / 2].end > v->heap[i].end) {
        __typeof__(v->heap[0]) t = v->heap[i];
        v->heap[i] = v->heap[(i - 1) / 2];
        v->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    v->bytes_in_flight += bytes;
    counter(c, f, serial, start, v->nheap, v->bytes_in_flight);
}

static void inflight_drain(struct conv *c, struct file_ctx *f) {
    for (uint32_t s = 0; s < f->nviews; s++)
        while (f->views[s] && f->views[s]->nheap) {
            struct rank_view *v = f->views[s];
            uint64_t t = v->heap[0].end;
            heap_pop(v);
            counter(c, f, s, t, v->nheap, v->bytes_in_flight);
        }
}

/* ---- GPU-side tracks ---- */

/* A view is 4.5 KB: made for the serials that have operations, so a
 * damaged serial far out costs a pointer array, not a view per serial. */
static struct rank_view *view_of(struct file_ctx *f, uint32_t serial) {
    if (serial >= NSC_COMM_SERIAL_MAX)
        return NULL;
    if (serial >= f->nviews) {
        uint32_t n = serial + 8;
        if (n < f->nviews * 2)
            n = f->nviews * 2;
        struct rank_view **v = realloc(f->views, n * sizeof(*v));
        if (!v)
            return NULL;
        memset(v + f->nviews, 0, (n - f->nviews) * sizeof(*v));
        f->views = v;
        f->nviews = n;
    }
    if (!f->views[serial])
        f->views[serial] = calloc(1, sizeof(struct rank_view));
    return f->views[serial];
}

static void name_thread(struct conv *c, struct file_ctx *f, uint32_t serial, uint32_t tid,
                        const char *name) {
    /* GPU tracks sort first: lanes, then channels */
    struct tev e = {.k = TEV_THREAD, .pid = out_pid(f->index, serial), .tid = tid, .name = name,
                    .sort = tid - TID_GPU_LANE + 1};
    out_event(c, &e);
}

static const struct nsc_gpu_clock *gpu_clock(const struct file_ctx *f, uint32_t serial) {
    return serial < f->ngpu && f->gpu[serial].have ? &f->gpu[serial] : NULL;
}

/* A collective's (or p2p's) enqueue-to-completion slice on its rank's GPU
 * lanes, with what NCCL chose for it. */
static void on_op_done(void *ud, const struct nsc_op_done *op) {
    struct conv *c = ud;
    struct file_ctx *f = c->f;
    struct rank_view *v = view_of(f, op->comm_serial);
    if (!v)
        return;
    uint64_t end = op->end_ns ? op->end_ns : op->stop_ns;
    if (!end || end < op->start_ns)
        return;
    maybe_rotate(c);
    if (!keep(c, f, op->comm_serial, op->is_p2p ? NSC_ET_P2P : NSC_ET_COLL, op->start_ns, end))
        return;
    int lane = -1;
    for (int l = 0; l < GPU_LANES; l++)
        if (v->lane_end[l] <= op->start_ns) {
            lane = l;
            break;
        }
    uint32_t tid = TID_GPU_LANE + (uint32_t)(lane >= 0 ? lane : 0);
    if (!(v->lanes_named & (1ull << (tid - TID_GPU_LANE)))) {
        v->lanes_named |= 1ull << (tid - TID_GPU_LANE);
        char name[96];
        snprintf(name, sizeof(name), "GPU: NCCL operations, enqueue to completion (lane %u)",
                 tid - TID_GPU_LANE);
        name_process(c, f, op->comm_serial);
        name_thread(c, f, op->comm_serial, tid, name);
    }
    if (lane >= 0)
        v->lane_end[lane] = end;
    else
        /* Reported after later operations took every lane over its time
         * (it completed late): an async slice, which Perfetto stacks on its
         * own row, instead of a slice overlapping another on a lane. */
        f->ops_lane_overflow++;
    args_begin(c);
    jw_raw(c->aw, "\"id\":");
    jw_u64(c->aw, out_id(c, f->index, op->id));
    if (!op->is_p2p) {
        arg_u(c, "seqNumber", op->seq);
        if (op->algo) {
            jw_raw(c->aw, ",\"algo\":");
            jw_str(c->aw, op->algo);
        }
        if (op->proto) {
            jw_raw(c->aw, ",\"proto\":");
            jw_str(c->aw, op->proto);
        }
    } else {
        arg_i(c, "peer", op->peer);
    }
    arg_u(c, "nChannels", (uint64_t)op->nch);
    arg_u(c, "count", op->count);
    if (op->dtype) {
        jw_raw(c->aw, ",\"datatype\":");
        jw_str(c->aw, op->dtype);
    }
    jw_raw(c->aw, ",\"completion\":");
    jw_str(c->aw, op->end_ns ? (op->kernel_channels_done ? "last KernelCh" : "last ProxyOp")
                             : "unknown (no KernelCh/ProxyOp recorded): enqueue only");
    arg_u(c, "children", op->children);
    const struct nsc_gpu_clock *g = gpu_clock(f, op->comm_serial);
    if (g && op->gpu_start && op->gpu_end > op->gpu_start) {
        /* The check of the GPU clock mapping against the CPU's: a kernel
         * cannot start before the host enqueued it. */
        uint64_t gpu_start = nsc_shift_ns(op->gpu_start, g->offset_ns);
        if ((int64_t)(gpu_start - op->start_ns) < 0)
            f->gpu_before_enqueue++;
        jw_raw(c->aw, ",\"gpu_us\":");
        jw_us(c->aw, op->gpu_end - op->gpu_start);
        jw_raw(c->aw, ",\"gpu_start_ts_us\":");
        jw_us(c->aw, gpu_start);
    }
    struct tev e = {.k = lane >= 0 ? TEV_SLICE : TEV_ASYNC, .cat = "completion",
                    .name = op->func ? op->func : "?", .id = out_id(c, f->index, op->id),
                    .pid = out_pid(f->index, op->comm_serial), .tid = tid, .ts = op->start_ns,
                    .dur = end - op->start_ns, .with_args = 1};
    out_event(c, &e);
    f->ops_drawn++;
    uint64_t bytes = op->count * (uint64_t)nsc_dtype_size(op->dtype);
    inflight_add(c, f, op->comm_serial, v, op->start_ns, end, bytes);
    if (lane < 0 || op->is_p2p || !c->o->flows)
        return;
    /* One chain per collective across ranks, in the order the files are
     * read: following it shows who entered late. */
    int found;
    uint64_t key = coll_key(op);
    struct placed *p = chain_slot(c, key, &found);
    uint64_t pid = out_pid(f->index, op->comm_serial);
    if (found)
        flow(c, out_id(c, f->index, op->id) | (1ull << 62) /* apart from parent arrows */,
             op->func ? op->func : "collective", p, pid, tid, op->start_ns);
    else if (c->chain_n * 2 >= CHAIN_CAP) {
        c->chain_full++;
        return;
    } else {
        c->chain_n++;
    }
    *p = (struct placed){key, pid, tid, op->start_ns};
}

/* The GPU track of channel ch of comm `serial`, named when first used. */
static uint32_t gpu_channel_track(struct conv *c, struct file_ctx *f, uint32_t serial, unsigned ch) {
    struct rank_view *v = view_of(f, serial);
    uint32_t tid = TID_GPU_CHANNEL + ch;
    if (v && ch < 64 && !(v->channels_named & (1ull << ch))) {
        v->channels_named |= 1ull << ch;
        char name[64];
        snprintf(name, sizeof(name), "GPU channel %u (KernelCh, %%globaltimer)", ch);
        name_thread(c, f, serial, tid, name);
    }
    return tid;
}

/* One KernelPhase's GPU interval on its channel's GPU track. [ps, pe] is
 * its KernelCh's GPU interval when that was drawn (else 0, 0): a phase
 * reaching outside it is clamped into it, so it nests under it on the track
 * (its args keep the recorded timers and say "clamped"). */
static void gpu_phase_out(struct conv *c, struct file_ctx *f, const struct gpu_phase *p,
                          uint64_t ps, uint64_t pe) {
    const struct nsc_gpu_clock *g = gpu_clock(f, p->serial);
    if (!g)
        return;
    uint64_t s = p->gs, e = p->ge;
    int clamped = 0;
    if (pe > ps && e > s && (s < ps || e > pe) && s < pe && e > ps) {
        s = s < ps ? ps : s;
        e = e > pe ? pe : e;
        clamped = 1;
    }
    uint32_t tid = gpu_channel_track(c, f, p->serial, p->ch);
    args_begin(c);
    jw_raw(c->aw, "\"id\":");
    jw_u64(c->aw, out_id(c, f->index, p->id));
    if (p->parent)
        arg_u(c, "parent", out_id(c, f->index, p->parent));
    arg_str(c, f, "phaseName", p->name);
    arg_u(c, "phaseId", p->phase);
    arg_u(c, "channel", p->ch);
    arg_u(c, "pTimer_start", p->gs);
    arg_u(c, "pTimer_stop", p->ge);
    if (clamped)
        jw_raw(c->aw, ",\"clamped\":true");
    const char *nm = nsc_decoder_str(&f->dec, p->name);
    struct tev ev = {.k = TEV_SLICE, .cat = "KernelPhase", .name = nm ? nm : "KernelPhase",
                     .pid = out_pid(f->index, p->serial), .tid = tid,
                     .ts = (uint64_t)((int64_t)s + g->offset_ns), .dur = e - s, .with_args = 1};
    if (p->ge <= p->gs) {
        f->impossible_gpu++;
        ev.k = TEV_INSTANT;
        ev.scope = 't';
        ev.name = "impossible GPU interval";
    }
    out_event(c, &ev);
}

/* Draws the KernelPhases waiting for KernelCh `parent` (every one waiting
 * for parent 0), clamped into [ps, pe], earliest first. The protobuf output
 * needs that order: Perfetto orders a track's events by time, keeping the
 * written order for equal times, and an END closes the slice opened last;
 * so a KernelCh is written before its phases (a phase starting at its GPU
 * start still nests), and a phase before the next (one ending where the
 * next begins closes first). */
static void gpu_phases_draw(struct conv *c, struct file_ctx *f, uint64_t parent, uint64_t ps,
                            uint64_t pe) {
    for (;;) {
        uint32_t k = UINT32_MAX;
        for (uint32_t i = 0; i < f->nphases; i++)
            if ((!parent || f->phases[i].parent == parent) &&
                (k == UINT32_MAX || f->phases[i].gs < f->phases[k].gs))
                k = i;
        if (k == UINT32_MAX)
            return;
        struct gpu_phase p = f->phases[k];
        memmove(&f->phases[k], &f->phases[k + 1], (f->nphases - k - 1) * sizeof(p));
        f->nphases--;
        gpu_phase_out(c, f, &p, ps, pe);
    }
}

/* A KernelPhase's GPU interval: it waits for its KernelCh to be drawn when
 * that one is still open (NCCL 2.31 stops the phases first), else it is
 * drawn now. */
static void gpu_phase_slice(struct conv *c, struct file_ctx *f, const struct open_ev *e) {
    const struct nsc_rec *r = &e->start;
    uint64_t ge = 0;
    for (uint32_t i = 0; i < e->nstates; i++)
        if (e->states[i].state == 31 /* KernelPhaseStop */)
            ge = e->states[i].arg;
    if (!r->u.start.d.kernel_phase.ptimer || !ge)
        return; /* not stopped on the GPU: nothing to place */
    struct gpu_phase p = {e->id, r->u.start.parent, r->u.start.d.kernel_phase.ptimer, ge,
                          r->h.aux, r->u.start.d.kernel_phase.name,
                          r->u.start.d.kernel_phase.ch, r->u.start.d.kernel_phase.phase};
    if (!p.parent || !map_find(&f->open, p.parent)) {
        gpu_phase_out(c, f, &p, 0, 0);
        return;
    }
    if (f->nphases == f->phases_cap && f->phases_cap < GPU_PHASES_MAX) {
        uint32_t n = f->phases_cap ? f->phases_cap * 2 : 64;
        struct gpu_phase *q = realloc(f->phases, n * sizeof(*q));
        if (q) {
            f->phases = q;
            f->phases_cap = n;
        }
    }
    if (f->nphases == f->phases_cap)
        gpu_phase_out(c, f, &p, 0, 0); /* cannot wait: drawn unclamped */
    else
        f->phases[f->nphases++] = p;
}

/* A KernelCh's GPU interval on its channel's GPU track, in host time. */
static void gpu_channel_slice(struct conv *c, struct file_ctx *f, const struct open_ev *e) {
    const struct nsc_rec *r = &e->start;
    const struct nsc_gpu_clock *g = gpu_clock(f, r->h.aux);
    if (!g)
        return;
    uint64_t gs = r->u.start.d.kernel_ch.ptimer, ge = 0;
    for (uint32_t i = 0; i < e->nstates; i++)
        if (e->states[i].state == 22 /* KernelChStop */)
            ge = e->states[i].arg;
    if (!gs || !ge)
        return; /* not stopped on the GPU yet (unfinished): nothing to place */
    unsigned ch = r->u.start.d.kernel_ch.ch;
    uint32_t tid = gpu_channel_track(c, f, r->h.aux, ch);
    int64_t off = g->offset_ns;
    args_begin(c);
    jw_raw(c->aw, "\"id\":");
    jw_u64(c->aw, out_id(c, f->index, e->id));
    arg_u(c, "parent", out_id(c, f->index, r->u.start.parent));
    arg_u(c, "pTimer_start", gs);
    arg_u(c, "pTimer_stop", ge);
    char name[32];
    snprintf(name, sizeof(name), "ch %u", ch);
    struct tev ev = {.k = TEV_SLICE, .cat = "KernelCh", .name = name,
                     .pid = out_pid(f->index, r->h.aux), .tid = tid,
                     .ts = nsc_shift_ns(gs, off), .dur = ge - gs, .with_args = 1};
    if (ge <= gs) {
        /* Impossible: flagged where it happened instead of drawn. */
        f->impossible_gpu++;
        ev.k = TEV_INSTANT;
        ev.scope = 't';
        ev.name = "impossible GPU interval";
    }
    out_event(c, &ev);
    if (f->nphases)
        gpu_phases_draw(c, f, e->id, gs, ge);
}

static void write_args(struct conv *c, struct file_ctx *f, const struct open_ev *e) {
    const struct nsc_rec *r = &e->start;
    const union nsc_desc *d = &r->u.start.d;
    const union nsc_ext *x = e->has_ext ? &e->ext.u.ext : NULL;
    jw_raw(c->aw, "\"id\":");
    jw_u64(c->aw, out_id(c, f->index, e->id));
    uint64_t parent = r->u.start.parent;
    if (parent && (r->h.flags & NSC_RF_FOREIGN_PARENT)) {
        int pf = file_of_pid(c, f, (uint32_t)d->proxy_op.pid);
        if (pf >= 0) {
            arg_u(c, "parent", out_id(c, pf, parent));
        } else {
            jw_raw(c->aw, ",\"foreign_parent\":{\"pid\":");
            jw_i64(c->aw, d->proxy_op.pid);
            jw_raw(c->aw, ",\"id\":");
            jw_u64(c->aw, parent);
            jw_raw(c->aw, "}");
        }
    } else if (parent) {
        arg_u(c, "parent", out_id(c, f->index, parent));
    }
    if (r->h.flags & NSC_RF_BAD_PARENT)
        jw_raw(c->aw, ",\"bad_parent\":true");
    const struct nsc_comm_info *ci = nsc_decoder_comm(&f->dec, r->h.aux);
    if (ci)
        arg_i(c, "rank", ci->rank);
    switch (r->h.etype) {
    case NSC_ET_GROUP_API:
        arg_i(c, "groupDepth", d->group_api.depth);
        arg_u(c, "graphCaptured", d->group_api.graph);
        nsc_py_caller_args(c->aw, &f->dec, r);
        break;
    case NSC_ET_COLL_API:
        arg_str(c, f, "func", d->coll_api.func);
        arg_u(c, "count", d->coll_api.count);
        arg_str(c, f, "datatype", d->coll_api.dtype);
        arg_i(c, "root", d->coll_api.root);
        arg_p(c, "stream", d->coll_api.stream);
        arg_u(c, "graphCaptured", d->coll_api.graph);
        if (x && x->coll_api.user_tag) /* API v7; the EXT is only there for a tag */
            arg_u(c, "userTag", x->coll_api.user_tag);
        nsc_py_caller_args(c->aw, &f->dec, r);
        break;
    case NSC_ET_P2P_API:
        arg_str(c, f, "func", d->p2p_api.func);
        arg_u(c, "count", d->p2p_api.count);
        arg_str(c, f, "datatype", d->p2p_api.dtype);
        arg_p(c, "stream", d->p2p_api.stream);
        arg_u(c, "graphCaptured", d->p2p_api.graph);
        if (d->p2p_api.user_tag)
            arg_u(c, "userTag", d->p2p_api.user_tag);
        nsc_py_caller_args(c->aw, &f->dec, r);
        break;
    case NSC_ET_KERNEL_LAUNCH:
        arg_p(c, "stream", d->kernel_launch.stream);
        break;
    case NSC_ET_COLL:
        arg_u(c, "seqNumber", d->coll.seq);
        arg_str(c, f, "func", d->coll.func);
        arg_u(c, "count", d->coll.count);
        arg_i(c, "root", d->coll.root);
        arg_str(c, f, "datatype", d->coll.dtype);
        arg_u(c, "nChannels", d->coll.nch);
        arg_u(c, "nWarps", d->coll.nwarps);
        arg_str(c, f, "algo", d->coll.algo);
        arg_str(c, f, "proto", d->coll.proto);
        if (x) {
            if (x->coll.parent_group)
                arg_u(c, "parentGroup", out_id(c, f->index, x->coll.parent_group));
            arg_p(c, "sendBuff", x->coll.send_buff);
            arg_p(c, "recvBuff", x->coll.recv_buff);
            /* API v7's fields where set (older traces cannot tell 0 from
             * unknown, and a replay of one at v7 must read the same) */
            if (x->coll.user_tag)
                arg_u(c, "userTag", x->coll.user_tag);
            if (x->coll.variant)
                arg_str(c, f, "kernelVariant", x->coll.variant);
            if (x->coll.is_sym)
                arg_u(c, "isSymColl", x->coll.is_sym);
        }
        if (ci)
            arg_p(c, "commHash", ci->comm_id);
        break;
    case NSC_ET_P2P:
        arg_str(c, f, "func", d->p2p.func);
        arg_u(c, "count", d->p2p.count);
        arg_str(c, f, "datatype", d->p2p.dtype);
        arg_i(c, "peer", d->p2p.peer);
        arg_u(c, "nChannels", d->p2p.nch);
        if (x) {
            if (x->p2p.parent_group)
                arg_u(c, "parentGroup", out_id(c, f->index, x->p2p.parent_group));
            arg_p(c, "buff", x->p2p.buff);
            if (x->p2p.user_tag)
                arg_u(c, "userTag", x->p2p.user_tag);
        }
        break;
    case NSC_ET_PROXY_OP:
        arg_i(c, "pid", d->proxy_op.pid);
        arg_u(c, "channelId", d->proxy_op.ch);
        arg_i(c, "peer", d->proxy_op.peer);
        arg_i(c, "nSteps", d->proxy_op.nsteps);
        arg_i(c, "chunkSize", d->proxy_op.chunk);
        arg_u(c, "isSend", d->proxy_op.is_send);
        break;
    case NSC_ET_PROXY_STEP:
        arg_i(c, "step", d->proxy_step.step);
        break;
    case NSC_ET_KERNEL_CH:
        arg_u(c, "channelId", d->kernel_ch.ch);
        arg_u(c, "pTimer", d->kernel_ch.ptimer);
        break;
    case NSC_ET_NET_PLUGIN:
        arg_p(c, "netPluginId", d->net.plugin_id);
        if (d->net.kind == 1) {
            jw_raw(c->aw, ",\"net\":\"ib\"");
            arg_u(c, "qpEventType", d->net.ev_type);
            arg_i(c, "device", d->net.a);
            arg_i(c, "opcode", d->net.b);
            arg_u(c, "length", d->net.length);
            if (x) {
                arg_u(c, "wr_id", x->net_ib.wr_id);
                arg_i(c, "qpNum", x->net_ib.qp);
            }
        } else if (d->net.kind == 2) {
            jw_raw(c->aw, ",\"net\":\"socket\"");
            arg_u(c, "sockEventType", d->net.ev_type);
            arg_i(c, "fd", d->net.a);
            arg_i(c, "op", d->net.b);
            arg_u(c, "length", d->net.length);
        } else {
            arg_p(c, "data", d->net.length);
        }
        break;
    case NSC_ET_CE_COLL:
        arg_u(c, "seqNumber", d->ce_coll.seq);
        arg_str(c, f, "func", d->ce_coll.func);
        arg_u(c, "count", d->ce_coll.count);
        arg_i(c, "root", d->ce_coll.root);
        arg_str(c, f, "datatype", d->ce_coll.dtype);
        arg_str(c, f, "syncStrategy", d->ce_coll.sync);
        arg_u(c, "intraBatchSync", d->ce_coll.intra);
        if (x) {
            arg_p(c, "sendBuff", x->ce_coll.send_buff);
            arg_p(c, "recvBuff", x->ce_coll.recv_buff);
            arg_p(c, "stream", x->ce_coll.stream);
            arg_u(c, "batchSize", x->ce_coll.batch_size);
            arg_u(c, "numBatches", x->ce_coll.num_batches);
            arg_u(c, "ceSeqNum", x->ce_coll.ce_seq);
        }
        if (nsc_ce_coll_user_tag(d, x))
            arg_u(c, "userTag", nsc_ce_coll_user_tag(d, x));
        break;
    case NSC_ET_CE_SYNC:
        arg_u(c, "isComplete", d->ce_sync.complete);
        arg_i(c, "nRanks", d->ce_sync.nranks);
        break;
    case NSC_ET_CE_BATCH:
        arg_i(c, "numOps", d->ce_batch.num_ops);
        arg_u(c, "totalBytes", d->ce_batch.total_bytes);
        arg_u(c, "useIntraSync", d->ce_batch.intra);
        break;
    case NSC_ET_KERNEL_PHASE:
        arg_str(c, f, "phaseName", d->kernel_phase.name);
        arg_u(c, "phaseId", d->kernel_phase.phase);
        arg_u(c, "channel", d->kernel_phase.ch);
        arg_u(c, "pTimer", d->kernel_phase.ptimer);
        break;
    }
    if (e->nstates) {
        jw_raw(c->aw, ",\"states\":[");
        for (uint32_t i = 0; i < e->nstates; i++) {
            const struct state_rec *s = &e->states[i];
            const char *sn = nsc_state_name(s->state);
            jw_raw(c->aw, i ? ",{\"state\":" : "{\"state\":");
            if (sn)
                jw_str(c->aw, sn);
            else
                jw_u64(c->aw, s->state);
            jw_raw(c->aw, ",\"ts\":");
            jw_us(c->aw, s->ns);
            if (s->state == 22 /* KernelChStop */ || s->state == 31 /* KernelPhaseStop */)
                arg_u(c, "pTimer", s->arg);
            else if (s->arg)
                arg_u(c, "value", s->arg);
            jw_raw(c->aw, "}");
        }
        jw_raw(c->aw, "]");
    }
    if (e->states_dropped)
        arg_u(c, "states_not_shown", e->states_dropped);
}

static void emit(struct conv *c, struct file_ctx *f, struct open_ev *e, int unfinished) {
    const struct nsc_rec *r = &e->start;
    struct track *t = e->track;
    uint64_t end = unfinished ? f->last_ns : e->stop_ns;
    if (end < e->start_ns)
        end = e->start_ns;
    /* Nests on its thread's track only if nothing started after it is still
     * open and it stopped on the thread that started it; otherwise it is an
     * async slice (Perfetto draws those on their own rows). */
    int async = e->next != NULL || (!unfinished && e->stop_thread != e->start_thread);
    uint64_t pid = out_pid(f->index, r->h.aux);
    const char *name = event_name(f, r);
    const char *cat = nsc_etype_name(r->h.etype);
    uint64_t oid = out_id(c, f->index, e->id);
    maybe_rotate(c);
    int kept = keep(c, f, r->h.aux, r->h.etype, e->start_ns, end);
    if (kept && t && !t->named) /* a new part began after this event started */
        track_of(c, f, (uint32_t)(t->key >> 32), r->h.aux, r->h.etype);
    if (kept) {
        args_begin(c);
        write_args(c, f, e);
        if (unfinished)
            jw_raw(c->aw, ",\"unfinished\":true");
        struct tev ev = {.k = async ? TEV_ASYNC : TEV_SLICE, .cat = cat, .name = name, .id = oid,
                         .pid = pid, .tid = t ? t->tid : 0, .ts = e->start_ns,
                         .dur = end - e->start_ns, .with_args = 1};
        out_event(c, &ev);
        if (r->h.etype == NSC_ET_KERNEL_CH && !unfinished)
            gpu_channel_slice(c, f, e);
        else if (r->h.etype == NSC_ET_KERNEL_PHASE && !unfinished)
            gpu_phase_slice(c, f, e);
        /* Parent -> child arrow. The parent is still open (it stops after its
         * children) or was written recently. Both ends bind to the slices that
         * start at those times on those threads (X slices; Perfetto does not
         * bind flows to async slices, so those get none). */
        if (c->o->flows && !async && t) {
            uint64_t parent = r->u.start.parent;
            struct placed from = {0, 0, 0, 0};
            if (parent && !(r->h.flags & NSC_RF_FOREIGN_PARENT)) {
                struct open_ev *pe = map_find(&f->open, parent);
                struct placed *rp = recent_slot(c, parent);
                if (pe && pe->has_start && pe->track &&
                (!c->o->event_mask || ((c->o->event_mask >> pe->start.h.etype) & 1))) {
                    from = (struct placed){1, out_pid(f->index, pe->start.h.aux), pe->track->tid,
                                           pe->start_ns};
                } else if (rp->key == parent + 1) {
                    from = *rp;
                }
            }
            if (from.key)
                flow(c, oid, nsc_etype_name(r->h.etype), &from, pid, t->tid, e->start_ns);
            struct placed *me = recent_slot(c, e->id);
            *me = (struct placed){e->id + 1, pid, t->tid, e->start_ns};
        }
    }
    if (r->h.etype == NSC_ET_KERNEL_CH && f->nphases)
        gpu_phases_draw(c, f, e->id, 0, 0); /* its own GPU slice was not drawn */
    c->res.events++;
    if (unfinished)
        c->res.unfinished++;
    if (t) {
        if (e->prev)
            e->prev->next = e->next;
        else
            t->head = e->next;
        if (e->next)
            e->next->prev = e->prev;
        else
            t->tail = e->prev;
    }
    map_remove(&f->open, e);
}

static void marker(struct conv *c, struct file_ctx *f, uint32_t thread, const struct nsc_rec *r,
                   const char *name) {
    uint64_t ts = nsc_shift_ns(nsc_decoder_mono_ns(&f->dec, r->h.ticks), f->shift_ns);
    maybe_rotate(c);
    if (!keep(c, f, r->h.aux, -1, ts, ts))
        return;
    struct track *t = track_of(c, f, thread, r->h.aux, NSC_ET_GROUP_API);
    struct tev e = {.k = TEV_INSTANT, .scope = 'p', .name = name,
                    .pid = out_pid(f->index, r->h.aux), .tid = t ? t->tid : 0, .ts = ts};
    out_event(c, &e);
}

/* A Python call (python_view.h) on its thread's track: in the file's
 * python process, or around the NCCL calls it made in a comm's process. */
static void py_slice_out(void *ud, const struct nsc_py_slice *s) {
    struct conv *c = ud;
    struct file_ctx *f = c->f;
    maybe_rotate(c);
    if (!keep(c, f, s->serial, -1, s->start_ns, s->end_ns))
        return;
    struct track *t = track_of(c, f, s->thread, s->serial, NSC_ET_COLL_API);
    if (!t)
        return;
    /* "file:line function": the function names the slice; C: the whole name */
    const char *sp = s->c_call ? NULL : strrchr(s->location, ' ');
    args_begin(c);
    jw_raw(c->aw, "\"location\":");
    jw_str(c->aw, s->location);
    if (s->by_exception)
        jw_raw(c->aw, ",\"exception\":true");
    if (s->unfinished)
        jw_raw(c->aw, ",\"unfinished\":true");
    struct tev e = {.k = TEV_SLICE, .cat = s->c_call ? "python.c" : "python",
                    .name = sp ? sp + 1 : s->location, .pid = out_pid(f->index, s->serial),
                    .tid = t->tid, .ts = s->start_ns, .dur = s->end_ns - s->start_ns,
                    .with_args = 1};
    out_event(c, &e);
}

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    struct conv *c = ud;
    struct file_ctx *f = c->f;
    /* Progress on stderr for long conversions: at most every 2 s. */
    if ((++c->records_seen & 0xfffff) == 0 && !c->o->quiet) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
        if (!c->progress_t)
            c->progress_t = now;
        else if (now - c->progress_t >= 2.0) {
            c->progress_t = now;
            fprintf(stderr, "ncclscope convert: file %d/%d, %.1f M records read, %.0f MB written\n",
                    f->index + 1, c->nfiles, (double)c->records_seen / 1e6,
                    (double)(c->w.bytes + c->w.len) / 1e6);
        }
    }
    uint64_t ns = nsc_shift_ns(nsc_decoder_mono_ns(d, r->h.ticks), f->shift_ns);
    if (ns > f->last_ns && r->h.kind != NSC_REC_THREAD)
        f->last_ns = ns;
    /* The SESSION block came first, so the tracker knows the event mask. */
    if (!f->track)
        f->track = nsc_track_new(d, f->shift_ns, on_op_done, c);
    if (f->track)
        nsc_track_record(f->track, thread, r, ext);
    if (r->h.kind == NSC_REC_PY && !f->py)
        f->py = nsc_pyview_new(py_slice_out, c);
    if (f->py)
        nsc_pyview_record(f->py, d, thread, r, ns);
    switch (r->h.kind) {
    case NSC_REC_START: {
        if (r->h.etype >= NSC_ET_COUNT)
            return;
        struct open_ev *e = map_get_or_add(&f->open, r->h.id);
        if (!e)
            return;
        if (e->has_start) { /* duplicate id: cannot happen in an intact file */
            c->res.orphan_records++;
            return;
        }
        e->start = *r;
        e->has_start = 1;
        if (ext) {
            e->ext = *ext;
            e->has_ext = 1;
        }
        e->start_thread = thread;
        e->start_ns = ns;
        if (e->has_stop && e->stop_etype != r->h.etype) {
            /* The STOP that came first has the id but not the type: not
             * this event's (damage, or ids reused across types). */
            c->res.orphan_records++;
            c->orphans_by_type[e->stop_etype & 15]++;
            e->has_stop = 0;
        }
        struct track *t = track_of(c, f, thread, r->h.aux, r->h.etype);
        e->track = t;
        if (t) {
            e->prev = t->tail;
            e->next = NULL;
            if (t->tail)
                t->tail->next = e;
            else
                t->head = e;
            t->tail = e;
        }
        if (e->has_stop)
            emit(c, f, e, 0);
        break;
    }
    case NSC_REC_STOP: {
        struct open_ev *e = map_get_or_add(&f->open, r->h.id);
        if (!e)
            return;
        if (e->has_start && e->start.h.etype != r->h.etype) {
            /* Same id, another type: not this event's STOP. Counted, not joined. */
            c->res.orphan_records++;
            c->orphans_by_type[r->h.etype & 15]++;
            return;
        }
        if (e->has_stop && !e->has_start)
            c->orphans_by_type[r->h.etype & 15]++; /* a second STOP for an id never started */
        e->has_stop = 1;
        e->stop_etype = r->h.etype;
        e->stop_ns = ns;
        e->stop_thread = thread;
        if (!e->has_start)
            e->start.h.etype = r->h.etype; /* remembered for the orphan count */
        if (e->has_start)
            emit(c, f, e, 0);
        /* else: the START is in a later chunk (another thread's ring was
         * drained later) or was dropped; it waits here. */
        break;
    }
    case NSC_REC_STATE: {
        struct open_ev *e = map_get_or_add(&f->open, r->h.id);
        if (!e)
            return;
        if (e->nstates >= MAX_STATES) {
            e->states_dropped++;
            return;
        }
        if (!e->states) {
            e->states = malloc(MAX_STATES * sizeof(*e->states));
            if (!e->states)
                return;
        }
        e->states[e->nstates].ns = ns;
        e->states[e->nstates].arg = r->u.state.arg;
        e->states[e->nstates].state = r->h.aux;
        e->nstates++;
        break;
    }
    case NSC_REC_COMM_INIT:
        marker(c, f, thread, r, "ncclscope: comm init");
        break;
    case NSC_REC_COMM_FINALIZE:
        marker(c, f, thread, r, "ncclscope: comm finalize");
        break;
    case NSC_REC_MARK: { /* a user's mark (control API): an instant named by its text */
        const char *text = nsc_decoder_str(d, r->h.aux);
        struct nsc_rec m = *r;
        m.h.aux = nsc_decoder_comm(d, 1) ? 1 : 0; /* drawn in the first comm's process */
        marker(c, f, thread, &m, text ? text : "mark");
        break;
    }
    default:
        break;
    }
}

static void on_comm(void *ud, struct nsc_decoder *d, const struct nsc_comm_info *ci) {
    (void)d;
    struct conv *c = ud;
    name_process(c, c->f, ci->serial);
}

static void on_stats(void *ud, struct nsc_decoder *d, const struct nsc_stats_header *h,
                     const struct nsc_thread_stats *t) {
    (void)d;
    struct conv *c = ud;
    struct file_ctx *f = c->f;
    f->stats = *h;
    free(f->tstats);
    f->tstats = malloc((h->nthreads + 1) * sizeof(*t));
    if (f->tstats)
        memcpy(f->tstats, t, h->nthreads * sizeof(*t));
    f->ntstats = f->tstats ? h->nthreads : 0;
    f->have_stats = 1;
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct conv *c = ud;
    c->res.damaged++;
    fprintf(stderr, "ncclscope convert: %s\n", msg);
}

/* Every count of what the plugin could not keep, as argument members. */
static void losses_args(struct conv *c, struct file_ctx *f) {
    const struct nsc_losses *l = &f->dec.losses;
    const struct nsc_stats_header *h = &f->dec.stats;
    arg_u(c, "lost_records", l->total);
    arg_u(c, "lost_write_records", l->write);
    arg_u(c, "lost_exit_records", l->exit);
    arg_u(c, "write_errors", h->write_errors);
    arg_i(c, "write_errno", h->write_errno);
    jw_key(c->aw, "write_error");
    jw_str(c->aw, h->write_errno ? nsc_errno_name(h->write_errno) : NULL);
    arg_u(c, "string_overflow", h->string_overflow);
    arg_u(c, "unnamed_events", f->dec.unnamed_events);
    arg_u(c, "comm_overflow", h->comm_overflow);
    arg_u(c, "memory_peak_bytes", h->memory_peak);
    arg_u(c, "memory_budget_bytes", h->memory_budget);
}

/* On stderr, what a file lost beyond ring drops (those are in the summary
 * line): nothing lost goes unsaid. */
static void losses_warning(const struct file_ctx *f) {
    const struct nsc_losses *l = &f->dec.losses;
    const struct nsc_stats_header *h = &f->dec.stats;
    if (l->write || h->write_errors) {
        const char *en = nsc_errno_name(h->write_errno);
        char last[160] = ", writing resumed after them";
        if (h->write_errno)
            snprintf(last, sizeof(last), ", the last: %s (%s)", en ? en : "errno",
                     strerror(h->write_errno));
        fprintf(stderr,
                "ncclscope convert: %s: WARNING: %llu records lost to write errors (%u failed "
                "writes%s)\n",
                f->path, (unsigned long long)l->write, h->write_errors, last);
    }
    if (l->exit)
        fprintf(stderr,
                "ncclscope convert: %s: WARNING: %llu records were still in memory when the "
                "process stopped waiting for the writer at finalize/exit; they are not in the file\n",
                f->path, (unsigned long long)l->exit);
    if (h->string_overflow || f->dec.unnamed_events)
        fprintf(stderr,
                "ncclscope convert: %s: WARNING: %llu strings past the plugin's table; %llu "
                "events show \"?\" for a name\n",
                f->path, (unsigned long long)h->string_overflow,
                (unsigned long long)f->dec.unnamed_events);
    if (h->comm_overflow)
        fprintf(stderr,
                "ncclscope convert: %s: WARNING: %llu comm descriptions were not kept; their "
                "events have no rank or commHash\n",
                f->path, (unsigned long long)h->comm_overflow);
}

/* Per-file summary: drop and loss counters as counter tracks and an
 * instant with the details. */
static void file_summary(struct conv *c, struct file_ctx *f, uint64_t *drops_out) {
    const struct nsc_losses *l = &f->dec.losses;
    uint64_t drops = l->dropped;
    *drops_out = drops;
    uint64_t pid = out_pid(f->index, 0);
    char name[160];
    snprintf(name, sizeof(name), "ncclscope %s pid %u", f->dec.session.host, f->dec.session.pid);
    struct tev e = {.k = TEV_PROCESS, .pid = pid, .name = name};
    out_event(c, &e);
    struct tev cnt = {.k = TEV_COUNTER, .name = "ncclscope dropped records", .ckey = "dropped",
                      .pid = pid, .has_tid = 1, .ts = f->last_ns, .cval = (int64_t)drops};
    out_event(c, &cnt);
    if (l->total != drops) {
        cnt.name = "ncclscope lost records";
        cnt.ckey = "lost";
        cnt.cval = (int64_t)l->total;
        out_event(c, &cnt);
    }
    if (l->total != drops)
        snprintf(name, sizeof(name),
                 "ncclscope: %llu records lost (%llu dropped, %llu to write errors, %llu at exit)",
                 (unsigned long long)l->total, (unsigned long long)drops,
                 (unsigned long long)l->write, (unsigned long long)l->exit);
    else
        snprintf(name, sizeof(name), "ncclscope: %llu records dropped", (unsigned long long)drops);
    args_begin(c);
    jw_raw(c->aw, "\"drops_no_thread\":");
    jw_u64(c->aw, f->stats.drops_no_thread);
    arg_u(c, "invalid_context", f->stats.invalid_context);
    arg_u(c, "invalid_handle", f->stats.invalid_handle);
    losses_args(c, f);
    struct tev in = {.k = TEV_INSTANT, .scope = 'p', .name = name, .pid = pid, .ts = f->last_ns,
                     .with_args = 1};
    out_event(c, &in);
}

static void file_metadata(struct conv *c, struct file_ctx *f, uint64_t drops, int idx) {
    const struct nsc_session *s = &f->dec.session;
    jw_raw(c->aw, idx ? ",\n{" : "\n{");
    jw_raw(c->aw, "\"file\":");
    jw_str(c->aw, f->path);
    jw_raw(c->aw, ",\"host\":");
    jw_str(c->aw, s->host);
    arg_u(c, "pid", s->pid);
    arg_u(c, "format_version", s->format_version);
    arg_u(c, "api_version", s->api_version);
    jw_key(c->aw, "plugin_version");
    jw_str(c->aw, s->plugin_version);
    char mask[256];
    jw_key(c->aw, "event_mask");
    jw_str(c->aw, nsc_mask_format(s->event_mask, mask, sizeof(mask)));
    jw_key(c->aw, "clock");
    jw_str(c->aw, s->clock_source == NSC_CLOCK_TSC ? "tsc" : "monotonic");
    arg_u(c, "ring_records", s->ring_records);
    arg_u(c, "records", f->dec.records);
    arg_u(c, "dropped_records", drops);
    losses_args(c, f);
    arg_u(c, "complete", (uint64_t)f->dec.ended);
    jw_key(c->aw, "shift_ns");
    jw_raw(c->aw, "");
    {
        char num[32];
        snprintf(num, sizeof(num), "%lld", (long long)f->shift_ns);
        jw_raw(c->aw, num);
    }
    arg_u(c, "operations_drawn", f->ops_drawn);
    arg_u(c, "operations_async", f->ops_lane_overflow);
    arg_u(c, "gpu_impossible_intervals", f->impossible_gpu);
    arg_u(c, "gpu_starts_before_enqueue", f->gpu_before_enqueue);
    if (f->py) {
        uint64_t calls, skipped, unmatched;
        nsc_pyview_counts(f->py, &calls, &skipped, &unmatched);
        arg_u(c, "python_calls", calls);
        arg_u(c, "python_calls_not_recorded", skipped); /* per-function rate limit */
        arg_u(c, "python_exits_without_call", unmatched);
    }
    if (f->replayed)
        jw_raw(c->aw, ",\"replayed\":true");
    jw_raw(c->aw, ",\"gpu_clocks\":[");
    int firstg = 1;
    for (uint32_t k = 0; k < f->ngpu; k++) {
        if (!f->gpu[k].have)
            continue;
        char buf[200];
        snprintf(buf, sizeof(buf),
                 "%s{\"comm_serial\":%u,\"offset_ns\":%lld,\"kernels\":%llu,"
                 "\"median_notice_delay_ns\":%llu,\"impossible\":%llu}",
                 firstg ? "" : ",", k, (long long)f->gpu[k].offset_ns,
                 (unsigned long long)f->gpu[k].kernels,
                 (unsigned long long)f->gpu[k].median_delay_ns,
                 (unsigned long long)f->gpu[k].impossible);
        jw_raw(c->aw, buf);
        firstg = 0;
    }
    jw_raw(c->aw, "]");
    jw_raw(c->aw, ",\"threads\":[");
    for (uint32_t i = 0; i < f->ntstats; i++) {
        const struct nsc_thread_stats *t = &f->tstats[i];
        jw_raw(c->aw, i ? ",{\"thread\":" : "{\"thread\":");
        jw_u64(c->aw, t->thread);
        arg_u(c, "tid", t->tid);
        arg_u(c, "records", t->records);
        arg_u(c, "drops_ring", t->drops_ring);
        arg_u(c, "drops_events", t->drops_events);
        jw_raw(c->aw, "}");
    }
    jw_raw(c->aw, "]}");
}

int nsc_convert(const struct nsc_convert_opts *o, struct nsc_convert_result *res) {
    struct conv c;
    memset(&c, 0, sizeof(c));
    c.o = o;
    c.first = 1;
    c.nfiles = o->nfiles;
    c.file_pids = calloc((size_t)o->nfiles + 1, sizeof(*c.file_pids));
    c.file_hosts = calloc((size_t)o->nfiles + 1, sizeof(*c.file_hosts));
    c.file_masks = calloc((size_t)o->nfiles + 1, sizeof(*c.file_masks));
    c.recent = calloc(PLACED_CAP, sizeof(*c.recent));
    c.chain = o->flows ? calloc(CHAIN_CAP, sizeof(*c.chain)) : NULL;
    struct file_ctx *files = calloc((size_t)o->nfiles + 1, sizeof(*files));
    uint64_t *drops = calloc((size_t)o->nfiles + 1, sizeof(*drops));
    int w_open = 0, argw_open = 0, out_err = 1;
    char err[1200];
    if (!c.file_pids || !c.file_hosts || !c.file_masks || !c.recent || (o->flows && !c.chain) ||
        !files || !drops) {
        fprintf(stderr, "ncclscope convert: out of memory\n");
        goto done;
    }
    char first_path[4200];
    part_path(o, 0, first_path, sizeof(first_path));
    if (jw_open_path(&c.w, first_path, o->files, o->nfiles, err, sizeof(err)) != 0) {
        fprintf(stderr, "ncclscope convert: cannot write %s\n", err);
        goto done;
    }
    w_open = 1;
    c.t_origin = UINT64_MAX;
    /* First pass over headers only: which pid each file holds, so PXN
     * parents from another process can be linked. */
    for (int i = 0; i < o->nfiles; i++) {
        struct nsc_decoder d;
        if (nsc_decoder_open(&d, o->files[i]) == NSC_OK) {
            struct nsc_block b;
            if (nsc_reader_next(&d.rd, &b) == 1 && b.type == NSC_BLK_SESSION &&
                b.len == sizeof(struct nsc_session)) {
                struct nsc_session s;
                memcpy(&s, b.data, sizeof(s));
                c.file_pids[i] = s.pid;
                c.file_masks[i] = s.event_mask;
                files[i].replayed = nsc_session_replayed(&s);
                uint64_t t0 = nsc_shift_ns(s.start.mono_ns, o->shift_ns ? o->shift_ns[i] : 0);
                if (t0 < c.t_origin)
                    c.t_origin = t0;
                memcpy(c.file_hosts[i], s.host, 63);
            }
            nsc_decoder_close(&d);
        }
    }
    if (jw_open_mem(&c.argw) != 0) {
        fprintf(stderr, "ncclscope convert: out of memory\n");
        goto done;
    }
    argw_open = 1;
    c.aw = &c.argw;
    if (o->format == NSC_OUT_PERFETTO) {
        c.pf = pf_open(&c.w);
        if (!c.pf) {
            fprintf(stderr, "ncclscope convert: out of memory\n");
            goto done;
        }
    } else {
        jw_raw(&c.w, doc_head);
    }
    for (int i = 0; i < o->nfiles; i++) {
        struct file_ctx *f = &files[i];
        f->index = i;
        f->path = o->files[i];
        f->shift_ns = o->shift_ns ? o->shift_ns[i] : 0;
        c.f = f;
        if (nsc_decoder_open(&f->dec, f->path) != NSC_OK) {
            fprintf(stderr, "ncclscope convert: %s\n", f->dec.rd.err);
            c.res.damaged++;
            continue;
        }
        if (c.file_masks[i] & ((1u << NSC_ET_KERNEL_CH) | (1u << NSC_ET_KERNEL_PHASE)) &&
            nsc_gpu_clock_scan(f->path, f->shift_ns, &f->gpu, &f->ngpu) == 0 && !o->quiet &&
            o->verbose && !f->replayed)
            for (uint32_t k = 0; k < f->ngpu; k++)
                if (f->gpu[k].have)
                    fprintf(stderr,
                            "ncclscope convert: %s comm #%u: host = GPU %%globaltimer %+.6f s "
                            "(min over %llu KernelCh of host stop - GPU end; median "
                            "notice delay %.2f us; %llu impossible intervals)\n",
                            f->path, k, (double)f->gpu[k].offset_ns / 1e9,
                            (unsigned long long)f->gpu[k].kernels,
                            (double)f->gpu[k].median_delay_ns / 1e3,
                            (unsigned long long)f->gpu[k].impossible);
        struct nsc_decode_ops ops = {
            .record = on_record, .comm = on_comm, .stats = on_stats, .error = on_error};
        nsc_decoder_run(&f->dec, &ops, &c);
        nsc_track_finish(f->track);
        f->track = NULL;
        inflight_drain(&c, f);
        memset(c.recent, 0, PLACED_CAP * sizeof(*c.recent));
        if (!o->quiet && f->replayed && (c.file_masks[i] & (1u << NSC_ET_KERNEL_CH)))
            /* Host and GPU times of a replay do not relate: no check of the
             * mapping (its GPU starts before their enqueue are no error). */
            fprintf(stderr,
                    "ncclscope convert: %s: replayed by ncclscope replay (host calls re-timed, GPU "
                    "timers as recorded): GPU tracks are placed by the replay's clocks, not checked\n",
                    f->path);
        else if (!o->quiet && o->verbose &&
                 (f->ops_lane_overflow || f->gpu_before_enqueue || f->impossible_gpu))
            fprintf(stderr,
                    "ncclscope convert: %s: %llu operations drawn as async slices (more than %d "
                    "in flight or completed out of order), "
                    "%llu GPU starts mapped before their enqueue, %llu impossible GPU intervals "
                    "flagged\n",
                    f->path, (unsigned long long)f->ops_lane_overflow, GPU_LANES,
                    (unsigned long long)f->gpu_before_enqueue,
                    (unsigned long long)f->impossible_gpu);
        /* Whatever is still open never stopped: shown up to the file's last
         * timestamp, marked unfinished (what a hung job looks like). */
        for (size_t k = 0; k < f->open.cap; k++) {
            struct open_ev *e = f->open.slots[k];
            if (!e)
                continue;
            if (e->has_start) {
                emit(&c, f, e, 1);
                k = (size_t)-1; /* the table was rearranged: rescan */
            } else {
                c.res.orphan_records++;
                c.orphans_by_type[e->start.h.etype & 15]++;
                map_remove(&f->open, e);
                k = (size_t)-1;
            }
        }
        gpu_phases_draw(&c, f, 0, 0, 0); /* phases whose KernelCh never started */
        if (f->py)
            nsc_pyview_finish(f->py, &f->dec, f->last_ns);
        file_summary(&c, f, &drops[i]);
        if (!o->quiet)
            losses_warning(f);
        c.res.drops += drops[i];
        c.res.lost += f->dec.losses.total;
        c.res.lost_write += f->dec.losses.write;
        c.res.lost_exit += f->dec.losses.exit;
        c.res.unnamed += f->dec.unnamed_events;
    }
    /* The run's metadata: the JSON document's "metadata", or in the
     * protobuf trace an instant on the first file's summary track. */
    args_begin(&c);
    jw_raw(c.aw, "\"files\":[");
    int idx = 0;
    for (int i = 0; i < o->nfiles; i++)
        if (files[i].dec.have_session)
            file_metadata(&c, &files[i], drops[i], idx++);
    jw_raw(c.aw, "]");
    jw_raw(c.aw, ",\"unfinished_events\":");
    jw_u64(c.aw, c.res.unfinished);
    jw_raw(c.aw, ",\"parts\":");
    jw_u64(c.aw, (uint64_t)c.part + 1);
    jw_raw(c.aw, ",\"filtered_out\":");
    jw_u64(c.aw, c.filtered);
    jw_raw(c.aw, ",\"flows\":");
    jw_u64(c.aw, c.flows);
    jw_raw(c.aw, ",\"collective_chains_not_linked\":");
    jw_u64(c.aw, c.chain_full);
    jw_raw(c.aw, ",\"orphan_records_by_type\":{");
    {
        int first_t = 1;
        for (unsigned k = 0; k < NSC_ET_COUNT; k++)
            if (c.orphans_by_type[k]) {
                jw_raw(c.aw, first_t ? "\"" : ",\"");
                jw_raw(c.aw, nsc_etype_name(k));
                jw_raw(c.aw, "\":");
                jw_u64(c.aw, c.orphans_by_type[k]);
                first_t = 0;
            }
    }
    jw_raw(c.aw, "}");
    arg_u(&c, "lost_records", c.res.lost);
    arg_u(&c, "dropped_records", c.res.drops);
    arg_u(&c, "lost_write_records", c.res.lost_write);
    arg_u(&c, "lost_exit_records", c.res.lost_exit);
    arg_u(&c, "unnamed_events", c.res.unnamed);
    arg_u(&c, "orphan_records", c.res.orphan_records);
    arg_u(&c, "damaged", c.res.damaged);
    if (c.pf) {
        struct tev e = {.k = TEV_INSTANT, .scope = 'p', .name = "ncclscope metadata",
                        .pid = out_pid(0, 0), .ts = c.t_origin == UINT64_MAX ? 0 : c.t_origin,
                        .with_args = 1};
        out_event(&c, &e);
    } else {
        jw_raw(&c.w, "\n],\"metadata\":{\"ncclscope\":{");
        jw_rawn(&c.w, c.argw.buf, c.argw.len);
        jw_raw(&c.w, "}}}\n");
    }
    if (c.out_error) {
        jw_abort(&c.w); /* a part is missing: the last one is not worth keeping */
        out_err = 1;
    } else if (jw_close(&c.w, err, sizeof(err)) != 0) {
        fprintf(stderr, "ncclscope convert: %s\n", err);
        out_err = 1;
    } else {
        out_err = 0;
    }
    w_open = 0;
    c.res.parts = (unsigned long long)c.part + 1;
    c.res.filtered = c.filtered;
done:
    if (w_open)
        jw_abort(&c.w);
    for (int i = 0; files && i < o->nfiles; i++) {
        struct file_ctx *f = &files[i];
        for (int b = 0; b < 256; b++)
            for (struct track *t = f->tracks[b], *n; t; t = n) {
                n = t->hnext;
                free(t);
            }
        map_free(&f->open);
        free(f->tstats);
        free(f->comm_named);
        free(f->gpu);
        for (uint32_t k = 0; k < f->nviews; k++)
            free(f->views[k]);
        free(f->views);
        free(f->phases);
        nsc_pyview_free(f->py);
        if (f->dec.rd.f || f->dec.strings)
            nsc_decoder_close(&f->dec);
    }
    free(files);
    free(drops);
    free(c.file_pids);
    free(c.file_hosts);
    free(c.file_masks);
    free(c.recent);
    free(c.chain);
    pf_close(c.pf);
    if (argw_open)
        jw_close(&c.argw, NULL, 0);
    if (res)
        *res = c.res;
    if (out_err)
        return 3;
    return c.res.damaged ? 2 : 0;
}
