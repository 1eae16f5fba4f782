// SPDX-License-Identifier: Apache-2.0
/*
 * perfetto_proto.c - protobuf encoding of the Perfetto trace.
 *
 * Field numbers used (proto2, from google/perfetto protos/perfetto/trace):
 *   Trace.packet = 1
 *   TracePacket: timestamp = 8, trusted_packet_sequence_id = 10,
 *                track_event = 11, interned_data = 12, sequence_flags = 13
 *                (1 INCREMENTAL_STATE_CLEARED, 2 NEEDS_INCREMENTAL_STATE),
 *                track_descriptor = 60
 *   InternedData: event_categories = 1, event_names = 2,
 *                 debug_annotation_names = 3; each entry {iid = 1, name = 2}
 *   TrackDescriptor: uuid = 1, name = 2, process = 3, thread = 4,
 *                    parent_uuid = 5, counter = 8
 *   ProcessDescriptor: pid = 1, process_name = 6
 *   ThreadDescriptor: pid = 1, tid = 2, thread_name = 5
 *   TrackEvent: category_iids = 3, debug_annotations = 4, name_iid = 10,
 *               type = 9 (1 SLICE_BEGIN, 2 SLICE_END,
 *               3 INSTANT, 4 COUNTER), track_uuid = 11, categories = 22,
 *               name = 23, counter_value = 30, flow_ids = 47 (fixed64),
 *               terminating_flow_ids = 48 (fixed64)
 *   DebugAnnotation: name_iid = 1, name = 10, bool_value = 2, int_value = 4,
 *                    double_value = 5, string_value = 6, legacy_json_value = 9
 *
 * Arguments arrive typed (args.h) and become typed debug annotations; no
 * JSON is read here.
 */
#include "perfetto_proto.h"

#include "hash.h"
#include "id_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_ID 1
#define LANES 32

struct lanes {
    uint64_t end[LANES];     /* when each lane's last slice ends */
};

/* Interned strings: names, categories and argument names are sent once per
 * trace (InternedData in the packet that first uses them) and referred to
 * by number afterwards, which is most of the protobuf's size advantage. */
struct istr {
    char *s;
    uint64_t iid;
};

struct itab {
    struct istr *e;
    size_t cap, n;
};

struct pf_writer {
    struct jw *w;
    int first;
    struct itab intern[3]; /* categories, event names, annotation names */
    uint64_t next_iid;
    struct nsc_id_map known;  /* described track uuids */
    struct nsc_id_map lanes;  /* thread track uuid -> struct lanes, its async lanes */
    uint64_t overflow;        /* async slices past LANES: own tracks */
    unsigned char pkt[1 << 16], ev[1 << 16], tmp[4096];
};

/* ---- encoding ---- */

struct buf {
    unsigned char *p;
    size_t len, cap;
    int overflow;
};

static void put(struct buf *b, const void *s, size_t n) {
    if (b->len + n > b->cap) {
        b->overflow = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static inline void varint(struct buf *b, uint64_t v) {
    if (b->len + 10 > b->cap) {
        b->overflow = 1;
        return;
    }
    unsigned char *o = b->p + b->len;
    while (v >= 0x80) {
        *o++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *o++ = (unsigned char)v;
    b->len = (size_t)(o - b->p);
}

static void f_uint(struct buf *b, unsigned field, uint64_t v) {
    varint(b, (uint64_t)field << 3);
    varint(b, v);
}

static void f_fixed64(struct buf *b, unsigned field, uint64_t v) {
    varint(b, (uint64_t)field << 3 | 1);
    unsigned char t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    put(b, t, 8);
}

static void f_bytes(struct buf *b, unsigned field, const void *s, size_t n) {
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, s, n);
}

static void f_str(struct buf *b, unsigned field, const char *s) {
    if (s)
        f_bytes(b, field, s, strlen(s));
}

/* Trace.packet = 1: the packet, length-delimited, to the output. */
static void emit_packet(struct pf_writer *p, struct buf *pkt) {
    if (pkt->overflow)
        return; /* larger than 64 KiB: cannot happen with our fields; dropped */
    unsigned char hdr[12];
    struct buf h = {hdr, 0, sizeof(hdr), 0};
    varint(&h, 1 << 3 | 2);
    varint(&h, pkt->len);
    jw_rawn(p->w, (const char *)hdr, h.len);
    jw_rawn(p->w, (const char *)pkt->p, pkt->len);
}

static void packet_head(struct pf_writer *p, struct buf *pkt, uint64_t ts, int with_ts) {
    if (with_ts)
        f_uint(pkt, 8, ts);
    f_uint(pkt, 10, SEQ_ID);
    if (p->first) {
        f_uint(pkt, 13, 1); /* SEQ_INCREMENTAL_STATE_CLEARED: the sequence starts here */
        p->first = 0;
    }
}

/* ---- tracks ---- */

/* Track uuids: well mixed, never 0 (the implicit global track). */
static uint64_t mix(uint64_t x) {
    x = nsc_mix64(x);
    return x ? x : 1;
}

static uint64_t process_uuid(uint64_t pid) { return mix(pid * 4 + 1); }
static uint64_t thread_uuid(uint64_t pid, uint64_t tid) { return mix((pid << 32 ^ tid) * 4 + 2); }

/* Returns 1 if uuid was already described, else records it (out of
 * memory: 1, the track goes undescribed rather than described twice). */
static int known(struct pf_writer *p, uint64_t uuid) {
    int added = 0;
    return !nsc_id_map_insert(&p->known, uuid, &added) || !added;
}

static void descriptor(struct pf_writer *p, uint64_t uuid, uint64_t parent, const char *name,
                       int64_t pid, int64_t tid, int counter) {
    struct buf td = {p->ev, 0, sizeof(p->ev), 0};
    f_uint(&td, 1, uuid);
    if (parent)
        f_uint(&td, 5, parent);
    if (name && (pid < 0 || tid >= 0 || counter))
        f_str(&td, 2, name);
    if (pid >= 0 && tid < 0 && !counter) {
        struct buf pd = {p->tmp, 0, sizeof(p->tmp), 0};
        f_uint(&pd, 1, (uint64_t)pid);
        f_str(&pd, 6, name);
        f_bytes(&td, 3, pd.p, pd.len);
    } else if (pid >= 0 && tid >= 0) {
        struct buf th = {p->tmp, 0, sizeof(p->tmp), 0};
        f_uint(&th, 1, (uint64_t)pid);
        f_uint(&th, 2, (uint64_t)tid);
        f_str(&th, 5, name);
        f_bytes(&td, 4, th.p, th.len);
    }
    if (counter)
        f_bytes(&td, 8, "", 0);
    struct buf pkt = {p->pkt, 0, sizeof(p->pkt), 0};
    packet_head(p, &pkt, 0, 0);
    f_bytes(&pkt, 60, td.p, td.len);
    emit_packet(p, &pkt);
}

static void ensure_process(struct pf_writer *p, uint64_t pid) {
    if (!known(p, process_uuid(pid)))
        descriptor(p, process_uuid(pid), 0, NULL, (int64_t)(uint32_t)pid, -1, 0);
}

static uint64_t ensure_thread(struct pf_writer *p, uint64_t pid, uint64_t tid) {
    ensure_process(p, pid);
    uint64_t u = thread_uuid(pid, tid);
    if (!known(p, u))
        descriptor(p, u, 0, NULL, (int64_t)(uint32_t)pid, (int64_t)(uint32_t)tid, 0);
    return u;
}

static void pf_process(struct pf_writer *p, uint64_t pid, const char *name) {
    known(p, process_uuid(pid)); /* described now, with its name */
    descriptor(p, process_uuid(pid), 0, name, (int64_t)(uint32_t)pid, -1, 0);
}

static void pf_thread(struct pf_writer *p, uint64_t pid, uint64_t tid, const char *name) {
    ensure_process(p, pid);
    known(p, thread_uuid(pid, tid));
    descriptor(p, thread_uuid(pid, tid), 0, name, (int64_t)(uint32_t)pid, (int64_t)(uint32_t)tid, 0);
}

/* A lane of thread track `t` free at ts (its last slice ended), described
 * when first used. */
static uint64_t lane_track(struct pf_writer *p, uint64_t t, uint64_t ts, uint64_t end) {
    struct lanes *l = nsc_id_map_insert(&p->lanes, t, NULL);
    if (!l)
        return t;
    for (unsigned k = 0; k < LANES; k++)
        if (l->end[k] <= ts) {
            l->end[k] = end;
            uint64_t u = mix(t ^ (k + 1) * 0x9e3779b97f4a7c15ull);
            if (!known(p, u)) {
                char name[32];
                snprintf(name, sizeof(name), "async lane %u", k);
                descriptor(p, u, t, name, -1, -1, 0);
            }
            return u;
        }
    /* every lane busy: a track of its own */
    uint64_t u = mix(t ^ ++p->overflow * 0xc2b2ae3d27d4eb4full);
    known(p, u);
    descriptor(p, u, t, "async", -1, -1, 0);
    return u;
}

/* ---- interning ---- */

/* The iid of (kind, s[0..n)); a new string is added to `in` as an
 * InternedData entry (field kind + 1). */
static uint64_t iid_of(struct pf_writer *p, unsigned kind, const char *s, size_t n, struct buf *in) {
    struct itab *t = &p->intern[kind];
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct istr *e = calloc(cap, sizeof(*e));
        if (!e)
            return 0;
        for (size_t i = 0; i < t->cap; i++)
            if (t->e[i].s) {
                size_t k = (size_t)nsc_fnv1a_str(NSC_FNV_SEED, t->e[i].s) & (cap - 1);
                while (e[k].s)
                    k = (k + 1) & (cap - 1);
                e[k] = t->e[i];
            }
        free(t->e);
        t->e = e;
        t->cap = cap;
    }
    size_t k = (size_t)nsc_fnv1a(NSC_FNV_SEED, s, n) & (t->cap - 1);
    while (t->e[k].s && !(strncmp(t->e[k].s, s, n) == 0 && t->e[k].s[n] == '\0'))
        k = (k + 1) & (t->cap - 1);
    if (t->e[k].s)
        return t->e[k].iid;
    char *copy = malloc(n + 1);
    if (!copy)
        return 0;
    memcpy(copy, s, n);
    copy[n] = '\0';
    t->e[k].s = copy;
    t->e[k].iid = ++p->next_iid;
    t->n++;
    unsigned char tmp[600];
    struct buf e = {tmp, 0, sizeof(tmp), 0};
    f_uint(&e, 1, t->e[k].iid);
    f_bytes(&e, 2, s, n < 512 ? n : 512);
    f_bytes(in, kind + 1, e.p, e.len);
    return t->e[k].iid;
}

/* ---- events ---- */

static unsigned char interned_buf[1 << 14];

static void event_packet(struct pf_writer *p, uint64_t ts, struct buf *ev, struct buf *in) {
    struct buf pkt = {p->pkt, 0, sizeof(p->pkt), 0};
    packet_head(p, &pkt, ts, 1);
    f_uint(&pkt, 13, 2); /* NEEDS_INCREMENTAL_STATE: refers to interned strings */
    if (in && in->len)
        f_bytes(&pkt, 12, in->p, in->len);
    f_bytes(&pkt, 11, ev->p, ev->len);
    emit_packet(p, &pkt);
}

/* A double as the JSON text of jw_us would read back: ns / 1000 rounded
 * once (exact below 2^53 ns, 104 days of uptime; past that, through the
 * same decimal text). */
static double us_of(uint64_t ns) {
    if (ns < (1ull << 53))
        return (double)ns / 1000.0;
    char num[40];
    snprintf(num, sizeof(num), "%llu.%03llu", (unsigned long long)(ns / 1000),
             (unsigned long long)(ns % 1000));
    return strtod(num, NULL);
}

/* The typed arguments (args.h) as debug annotations: integers, doubles,
 * strings and booleans as themselves, nested values (state lists, the
 * run's file list) as legacy_json_value. An annotation larger than tmp is
 * left out. */
static void annotations(struct pf_writer *pw, struct buf *in, struct buf *ev,
                        const struct nsc_args *a, unsigned char *tmp, size_t tmpcap) {
    for (uint32_t k = 0; k < a->n; k++) {
        const struct nsc_arg *x = &a->a[k];
        struct buf da = {tmp, 0, tmpcap, 0};
        size_t kn = strlen(x->key);
        uint64_t kid = iid_of(pw, 2, x->key, kn, in);
        if (kid)
            f_uint(&da, 1, kid);
        else
            f_bytes(&da, 10, x->key, kn);
        switch (x->kind) {
        case NSC_ARG_U64:
            f_uint(&da, 4, x->v.u);
            break;
        case NSC_ARG_I64:
            f_uint(&da, 4, (uint64_t)x->v.i);
            break;
        case NSC_ARG_STR: {
            const char *v = nsc_arg_str(a, x);
            if (v)
                f_str(&da, 6, v);
            else
                f_bytes(&da, 6, "null", 4);
            break;
        }
        case NSC_ARG_HEX: {
            char hex[24];
            int n = snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)x->v.u);
            f_bytes(&da, 6, hex, (size_t)n);
            break;
        }
        case NSC_ARG_US: {
            double d = us_of(x->v.u);
            uint64_t bits;
            memcpy(&bits, &d, 8);
            f_fixed64(&da, 5, bits);
            break;
        }
        case NSC_ARG_BOOL:
            f_uint(&da, 2, x->v.u);
            break;
        case NSC_ARG_JSON:
            f_bytes(&da, 9, a->text.buf + x->off, x->len);
            break;
        }
        if (!da.overflow)
            f_bytes(ev, 4, da.p, da.len);
    }
}

static void common(struct pf_writer *p, struct buf *in, struct buf *ev, unsigned type,
                   uint64_t track, const char *cat, const char *name, const struct nsc_args *args,
                   unsigned char *tmp, size_t tmpcap) {
    f_uint(ev, 9, type);
    f_uint(ev, 11, track);
    uint64_t id;
    if (cat && (id = iid_of(p, 0, cat, strlen(cat), in)))
        f_uint(ev, 3, id);
    else if (cat)
        f_str(ev, 22, cat);
    if (name && (id = iid_of(p, 1, name, strlen(name), in)))
        f_uint(ev, 10, id);
    else if (name)
        f_str(ev, 23, name);
    if (args && args->n)
        annotations(p, in, ev, args, tmp, tmpcap);
}

static void pf_slice(struct pf_writer *p, int async, uint64_t pid, uint64_t tid, uint64_t ts,
                     uint64_t dur, const char *cat, const char *name, const struct nsc_args *args) {
    uint64_t track = ensure_thread(p, pid, tid);
    if (async)
        track = lane_track(p, track, ts, ts + dur);
    static unsigned char tmp[1 << 15];
    struct buf ev = {p->ev, 0, sizeof(p->ev), 0};
    struct buf in = {interned_buf, 0, sizeof(interned_buf), 0};
    common(p, &in, &ev, 1, track, cat, name, args, tmp, sizeof(tmp));
    event_packet(p, ts, &ev, &in);
    ev.len = 0;
    f_uint(&ev, 9, 2);
    f_uint(&ev, 11, track);
    event_packet(p, ts + dur, &ev, NULL);
}

static void pf_instant(struct pf_writer *p, uint64_t pid, uint64_t tid, uint64_t ts,
                       const char *cat, const char *name, const struct nsc_args *args,
                       uint64_t flow_out, uint64_t flow_in) {
    uint64_t track = ensure_thread(p, pid, tid);
    static unsigned char tmp[1 << 15];
    struct buf ev = {p->ev, 0, sizeof(p->ev), 0};
    struct buf in = {interned_buf, 0, sizeof(interned_buf), 0};
    common(p, &in, &ev, 3, track, cat, name, args, tmp, sizeof(tmp));
    if (flow_out)
        f_fixed64(&ev, 47, flow_out);
    if (flow_in)
        f_fixed64(&ev, 48, flow_in);
    event_packet(p, ts, &ev, &in);
}

static void pf_counter(struct pf_writer *p, uint64_t pid, const char *name, uint64_t ts, int64_t value) {
    ensure_process(p, pid);
    uint64_t u = mix(process_uuid(pid) ^ nsc_fnv1a_str(NSC_FNV_SEED, name)) ^ 3;
    if (!known(p, u))
        descriptor(p, u, process_uuid(pid), name, -1, -1, 1);
    struct buf ev = {p->ev, 0, sizeof(p->ev), 0};
    f_uint(&ev, 9, 4);
    f_uint(&ev, 11, u);
    f_uint(&ev, 30, (uint64_t)value);
    event_packet(p, ts, &ev, NULL);
}

void pf_event(struct pf_writer *p, const struct nsc_tev *e) {
    switch (e->k) {
    case NSC_TEV_PROCESS:
        pf_process(p, e->pid, e->name);
        return;
    case NSC_TEV_THREAD:
        pf_thread(p, e->pid, e->tid, e->name);
        return;
    case NSC_TEV_COUNTER:
        pf_counter(p, e->pid, e->name, e->ts, e->cval);
        return;
    case NSC_TEV_FLOW_OUT:
        pf_instant(p, e->pid, e->tid, e->ts, "flow", e->name, NULL, e->id, 0);
        return;
    case NSC_TEV_FLOW_IN:
        pf_instant(p, e->pid, e->tid, e->ts, "flow", e->name, NULL, 0, e->id);
        return;
    case NSC_TEV_SLICE:
    case NSC_TEV_ASYNC:
        pf_slice(p, e->k == NSC_TEV_ASYNC, e->pid, e->tid, e->ts, e->dur, e->cat, e->name, e->args);
        return;
    case NSC_TEV_INSTANT:
        pf_instant(p, e->pid, e->tid, e->ts, e->cat, e->name, e->args, 0, 0);
        return;
    }
}

struct pf_writer *pf_open(struct jw *w) {
    struct pf_writer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    if (nsc_id_map_init(&p->known, 1024, 1, NSC_ID_MAP_GROW) != 0 ||
        nsc_id_map_init(&p->lanes, 256, sizeof(struct lanes), NSC_ID_MAP_GROW) != 0) {
        pf_close(p);
        return NULL;
    }
    p->w = w;
    p->first = 1;
    return p;
}

void pf_close(struct pf_writer *p) {
    if (!p)
        return;
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < p->intern[k].cap; i++)
            free(p->intern[k].e[i].s);
        free(p->intern[k].e);
    }
    nsc_id_map_destroy(&p->known);
    nsc_id_map_destroy(&p->lanes);
    free(p);
}
