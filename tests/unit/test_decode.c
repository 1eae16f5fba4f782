// SPDX-License-Identifier: Apache-2.0
/* test_decode.c - the read side on crafted traces: the decoder (blocks ->
 * records, a START joined with its EXT), the schema's field visitor, the
 * public reader API (libncclscope's ncclscope_* calls), and damage: a bad
 * block header, garbage between blocks, a sequence gap, a segment longer
 * than its chunk, a cut mid-block and a file that is not a trace; blocks
 * with their payload checksum (crash dumps) and every bit flip in them. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "desc_visit.h"
#include "event_types.h"
#include "ncclscope/reader.h"
#include "trace_decode.h"

/* ---- building a trace in memory ---- */

struct buf {
    unsigned char *p;
    size_t len, cap;
    uint32_t seq;
};

static void put(struct buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 1024;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void file_header(struct buf *b) {
    struct nsc_file_header h;
    memcpy(h.magic, NSC_FILE_MAGIC, 8);
    h.format_version = NSC_FORMAT_VERSION;
    h.header_size = sizeof(h);
    put(b, &h, sizeof(h));
}

/* Blocks as crash dumps store them: raw, ending with the payload's
 * checksum (NSC_BLK_F_SUM). */
static int with_sums;

/* Returns the block's offset. */
static size_t block(struct buf *b, uint16_t type, const void *payload, uint32_t len) {
    size_t at = b->len;
    struct nsc_block_header h;
    memset(&h, 0, sizeof(h));
    h.magic = NSC_BLOCK_MAGIC;
    h.type = type;
    h.stored_len = h.raw_len = len;
    if (with_sums) {
        h.flags = NSC_BLK_F_SUM;
        h.stored_len += NSC_BLK_SUM_BYTES;
    }
    h.seq = b->seq++;
    h.check = nsc_header_check(&h);
    put(b, &h, sizeof(h));
    put(b, payload, len);
    if (with_sums) {
        uint32_t sum = nsc_payload_check(NSC_PAYLOAD_CHECK_SEED, payload, len);
        put(b, &sum, sizeof(sum));
    }
    return at;
}

static void session(struct buf *b) {
    struct nsc_session s;
    memset(&s, 0, sizeof(s));
    s.format_version = NSC_FORMAT_VERSION;
    s.api_version = 7;
    s.pid = 4242;
    s.clock_source = NSC_CLOCK_MONOTONIC;
    s.ticks_per_sec = 1000000000ull;
    s.start.ticks = s.start.mono_ns = 1000;
    s.start.real_ns = 1700000000000000000ull;
    s.event_mask = NSC_MASK_ALL;
    strcpy(s.host, "testhost");
    strcpy(s.plugin_version, "0.1.0");
    block(b, NSC_BLK_SESSION, &s, sizeof(s));
}

static void strings(struct buf *b) {
    static const char *const text[] = {NULL, NULL, "AllReduce", "ncclFloat32", "RING", "LL",
                                       "variantX", "CE", "ReduceScatter"};
    struct buf p = {0};
    for (uint32_t id = 2; id < sizeof(text) / sizeof(text[0]); id++) {
        uint16_t len = (uint16_t)strlen(text[id]);
        put(&p, &id, 4);
        put(&p, &len, 2);
        put(&p, text[id], len);
    }
    block(b, NSC_BLK_STRINGS, p.p, (uint32_t)p.len);
    free(p.p);
}

static void comms(struct buf *b) {
    struct nsc_comm_info c;
    memset(&c, 0, sizeof(c));
    c.serial = 1;
    c.rank = 3;
    c.nranks = 8;
    c.nnodes = 2;
    c.comm_id = 0xabcdef;
    strcpy(c.name, "world");
    block(b, NSC_BLK_COMMS, &c, sizeof(c));
}

static struct nsc_rec rec(uint8_t kind, uint8_t etype, uint64_t id, uint64_t ticks) {
    struct nsc_rec r;
    memset(&r, 0, sizeof(r));
    r.h.kind = kind;
    r.h.etype = etype;
    r.h.id = id;
    r.h.ticks = ticks;
    return r;
}

/* The records of writer thread 0, START/EXT pairs included. */
#define NRECS 16
static void records(struct nsc_rec *r, unsigned *n) {
    unsigned i = 0;
    r[i] = rec(NSC_REC_THREAD, 0, 0, 1100);
    r[i].h.aux = 42;
    memcpy(r[i].u.thread_name, "worker", 7);
    i++;
    r[i] = rec(NSC_REC_COMM_INIT, 0, 0, 1200);
    r[i++].h.aux = 1;
    /* Coll with its EXT (v7 fields set) */
    r[i] = rec(NSC_REC_START, NSC_ET_COLL, 10, 2000);
    r[i].h.aux = 1;
    r[i].h.flags = NSC_RF_HAS_EXT;
    r[i].u.start.parent = 5;
    r[i].u.start.d.coll.seq = 7;
    r[i].u.start.d.coll.count = 1024;
    r[i].u.start.d.coll.root = -1;
    r[i].u.start.d.coll.func = 2;
    r[i].u.start.d.coll.dtype = 3;
    r[i].u.start.d.coll.algo = 4;
    r[i].u.start.d.coll.proto = 5;
    r[i].u.start.d.coll.nch = 4;
    r[i].u.start.d.coll.nwarps = 8;
    i++;
    r[i] = rec(NSC_REC_EXT, NSC_ET_COLL, 10, 2000);
    r[i].u.ext.coll.parent_group = 4;
    r[i].u.ext.coll.send_buff = 0x1000;
    r[i].u.ext.coll.recv_buff = 0x2000;
    r[i].u.ext.coll.user_tag = 99;
    r[i].u.ext.coll.variant = 6;
    r[i].u.ext.coll.is_sym = 1;
    i++;
    /* CeColl: the user tag in two halves */
    r[i] = rec(NSC_REC_START, NSC_ET_CE_COLL, 11, 2100);
    r[i].h.aux = 1;
    r[i].h.flags = NSC_RF_HAS_EXT;
    r[i].u.start.d.ce_coll.func = 8;
    r[i].u.start.d.ce_coll.sync = 7;
    r[i].u.start.d.ce_coll.user_tag_hi = 0x12;
    i++;
    r[i] = rec(NSC_REC_EXT, NSC_ET_CE_COLL, 11, 2100);
    r[i].u.ext.ce_coll.user_tag_lo = 0x34;
    r[i].u.ext.ce_coll.batch_size = 5;
    i++;
    /* NetPlugin IB with its EXT, socket without */
    r[i] = rec(NSC_REC_START, NSC_ET_NET_PLUGIN, 12, 2200);
    r[i].h.flags = NSC_RF_HAS_EXT;
    r[i].u.start.d.net.plugin_id = 0x10001;
    r[i].u.start.d.net.kind = 1;
    r[i].u.start.d.net.ev_type = 3;
    r[i].u.start.d.net.a = 2;
    r[i].u.start.d.net.b = -5;
    r[i].u.start.d.net.length = 4096;
    i++;
    r[i] = rec(NSC_REC_EXT, NSC_ET_NET_PLUGIN, 12, 2200);
    r[i].u.ext.net_ib.wr_id = 77;
    r[i].u.ext.net_ib.qp = 9;
    i++;
    r[i] = rec(NSC_REC_START, NSC_ET_NET_PLUGIN, 13, 2300);
    r[i].u.start.d.net.plugin_id = 0x20001;
    r[i].u.start.d.net.kind = 2;
    r[i].u.start.d.net.a = 17;
    i++;
    /* CollApi without a tag: no EXT, no userTag field */
    r[i] = rec(NSC_REC_START, NSC_ET_COLL_API, 14, 2400);
    r[i].u.start.d.coll_api.func = 2;
    r[i].u.start.d.coll_api.count = 3;
    i++;
    r[i] = rec(NSC_REC_STATE, NSC_ET_COLL, 10, 2500);
    r[i].h.aux = 22; /* KernelChStop */
    r[i].u.state.arg = 123;
    i++;
    r[i++] = rec(NSC_REC_STOP, NSC_ET_COLL, 10, 2600);
    r[i++] = rec(NSC_REC_EXT, NSC_ET_COLL, 99, 2650); /* an EXT whose START was dropped */
    r[i] = rec(NSC_REC_START, NSC_ET_P2P, 16, 2700);  /* says HAS_EXT, its EXT never comes */
    r[i].h.flags = NSC_RF_HAS_EXT;
    r[i].u.start.d.p2p.peer = 6;
    i++;
    r[i++] = rec(NSC_REC_STOP, NSC_ET_P2P, 16, 2800);
    r[i] = rec(NSC_REC_COMM_FINALIZE, 0, 0, 2900);
    r[i++].h.aux = 1;
    *n = i;
}

static size_t chunk(struct buf *b) {
    struct nsc_rec r[NRECS];
    unsigned n;
    records(r, &n);
    struct buf p = {0};
    struct nsc_segment seg = {0, n};
    put(&p, &seg, sizeof(seg));
    put(&p, r, n * sizeof(r[0]));
    size_t at = block(b, NSC_BLK_CHUNK, p.p, (uint32_t)p.len);
    free(p.p);
    return at;
}

static void stats(struct buf *b) {
    struct {
        struct nsc_stats_header h;
        struct nsc_thread_stats t;
    } s;
    memset(&s, 0, sizeof(s));
    s.h.nthreads = 1;
    s.h.header_size = sizeof(s.h);
    s.t.tid = 42;
    s.t.records = 20;
    s.t.drops_ring = 3;
    s.t.drops_events = 1;
    block(b, NSC_BLK_STATS, &s, sizeof(s));
}

struct offsets {
    size_t strings, chunk, stats, end;
};

static struct buf whole(struct offsets *o) {
    struct buf b = {0};
    file_header(&b);
    session(&b);
    o->strings = b.len;
    strings(&b);
    comms(&b);
    o->chunk = chunk(&b);
    o->stats = b.len;
    stats(&b);
    o->end = block(&b, NSC_BLK_END, "", 0);
    return b;
}

/* ---- decoding ---- */

struct seen {
    unsigned records, starts, with_ext, errors;
    uint64_t ids[32];
    char last_error[600], first_error[600];
    char fields[16][600]; /* per START, "name=value ..." */
};

static void fmt_field(void *ud, const struct nsc_desc_field *f) {
    char *s = ud;
    size_t n = strlen(s);
    switch (f->kind) {
    case NSC_DESC_I64:
        snprintf(s + n, 600 - n, "%s=%lld ", f->name, (long long)f->v.i);
        break;
    case NSC_DESC_TEXT:
        snprintf(s + n, 600 - n, "%s=%s ", f->name, f->v.text);
        break;
    case NSC_DESC_PTR:
        snprintf(s + n, 600 - n, "%s=0x%llx ", f->name, (unsigned long long)f->v.u);
        break;
    case NSC_DESC_STR_ID:
        snprintf(s + n, 600 - n, "%s=$%llu ", f->name, (unsigned long long)f->v.u);
        break;
    case NSC_DESC_EVENT_ID:
        snprintf(s + n, 600 - n, "%s=#%llu ", f->name, (unsigned long long)f->v.u);
        break;
    default:
        snprintf(s + n, 600 - n, "%s=%llu ", f->name, (unsigned long long)f->v.u);
        break;
    }
}

static void on_rec(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                   const struct nsc_rec *ext) {
    (void)d;
    (void)thread;
    struct seen *s = ud;
    if (s->records < 32)
        s->ids[s->records] = r->h.id;
    s->records++;
    if (r->h.kind == NSC_REC_START) {
        if (s->starts < 16)
            nsc_desc_visit(r, ext ? &ext->u.ext : NULL, fmt_field, s->fields[s->starts]);
        s->starts++;
        s->with_ext += ext != NULL;
    }
}

static void on_err(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct seen *s = ud;
    if (!s->errors++)
        snprintf(s->first_error, sizeof(s->first_error), "%s", msg);
    snprintf(s->last_error, sizeof(s->last_error), "%s", msg);
}

static const struct nsc_decode_ops ops = {.record = on_rec, .error = on_err};

static int decode(const struct buf *b, struct seen *s) {
    memset(s, 0, sizeof(*s));
    struct nsc_decoder d;
    if (nsc_decoder_open_memory(&d, b->p, b->len, "mem.nsc") != NSC_OK) {
        snprintf(s->last_error, sizeof(s->last_error), "%s", nsc_decoder_error(&d));
        return -1;
    }
    int damage = nsc_decoder_run(&d, &ops, s);
    nsc_decoder_close(&d);
    return damage;
}

static void intact(void) {
    struct offsets o;
    struct buf b = whole(&o);
    struct seen s;
    CHECK(decode(&b, &s) == 0);
    CHECK(s.errors == 0);
    /* 16 records less 3 EXTs joined to their STARTs and 1 orphan EXT */
    CHECK(s.records == 12);
    CHECK(s.starts == 6);
    CHECK(s.with_ext == 3); /* Coll, CeColl, NetPlugin IB; the P2p's EXT never came */
    CHECK(strcmp(s.fields[0], "seqNumber=7 func=$2 count=1024 root=-1 datatype=$3 nChannels=4 "
                              "nWarps=8 algo=$4 proto=$5 parentGroup=#4 sendBuff=0x1000 "
                              "recvBuff=0x2000 userTag=99 kernelVariant=$6 isSymColl=1 ") == 0);
    /* CeColl: the tag from both halves; EXT fields present */
    CHECK(strstr(s.fields[1], "userTag=77309411380 ") != NULL); /* 0x12 << 32 | 0x34 */
    CHECK(strstr(s.fields[1], "batchSize=5 ") != NULL);
    CHECK(strstr(s.fields[1], "syncStrategy=$7 ") != NULL);
    CHECK(strcmp(s.fields[2], "netPluginId=0x10001 net=ib qpEventType=3 device=2 opcode=-5 "
                              "length=4096 wr_id=77 qpNum=9 ") == 0);
    CHECK(strcmp(s.fields[3], "netPluginId=0x20001 net=socket sockEventType=0 fd=17 op=0 "
                              "length=0 ") == 0);
    CHECK(strcmp(s.fields[4], "func=$2 count=3 datatype=$0 root=0 stream=0x0 graphCaptured=0 ") == 0);
    /* a P2p without its EXT: no parentGroup, buff or userTag */
    CHECK(strstr(s.fields[5], "peer=6 ") != NULL && strstr(s.fields[5], "buff") == NULL);
    /* the START waiting for its EXT came out before the record after it */
    CHECK(s.ids[9] == 16 && s.ids[10] == 16);
    free(b.p);
}

/* The public API on the same bytes. */
static void public_api(void) {
    struct offsets o;
    struct buf b = whole(&o);
    char err[256];
    ncclscope_trace *t = ncclscope_open_memory(b.p, b.len, "mem.nsc", err, sizeof(err));
    CHECK(t != NULL);
    if (!t)
        return;
    const struct ncclscope_session *ss = ncclscope_session(t);
    CHECK(ss && ss->pid == 4242 && strcmp(ss->host, "testhost") == 0 && ss->api_version == 7);
    unsigned n = 0, comm_info = 0, fields_ok = 0;
    const struct ncclscope_record *r;
    while ((r = ncclscope_next(t)) != NULL) {
        if (r->kind == NCCLSCOPE_REC_COMM_INFO) {
            const struct ncclscope_comm *c = ncclscope_comm(t, r->comm);
            comm_info += c && c->rank == 3 && c->nranks == 8 && strcmp(c->name, "world") == 0;
            continue;
        }
        n++;
        if (r->kind == NCCLSCOPE_REC_START && r->id == 10) {
            CHECK(r->tid == 42 && r->comm == 1 && r->parent == 5 && strcmp(r->etype_name, "Coll") == 0);
            CHECK(r->time_ns == 2000); /* 1 GHz from the session's anchor */
            CHECK(r->nfields == 15);
            for (unsigned i = 0; i < r->nfields; i++) {
                const struct ncclscope_field *f = &r->fields[i];
                fields_ok += strcmp(f->name, "func") == 0 && f->kind == NCCLSCOPE_FIELD_STRING &&
                             strcmp(f->s, "AllReduce") == 0;
                fields_ok += strcmp(f->name, "root") == 0 && f->kind == NCCLSCOPE_FIELD_I64 && f->i == -1;
                fields_ok += strcmp(f->name, "parentGroup") == 0 &&
                             f->kind == NCCLSCOPE_FIELD_EVENT_ID && f->u == 4;
                fields_ok += strcmp(f->name, "kernelVariant") == 0 && strcmp(f->s, "variantX") == 0;
            }
        }
        if (r->kind == NCCLSCOPE_REC_STATE)
            CHECK(r->state == 22 && strcmp(r->state_name, "KernelChStop") == 0 && r->arg == 123);
        if (r->kind == NCCLSCOPE_REC_THREAD)
            CHECK(r->tid == 42 && strcmp(r->text, "worker") == 0);
    }
    CHECK(n == 12);
    CHECK(comm_info == 1);
    CHECK(fields_ok == 4);
    struct ncclscope_losses l;
    CHECK(ncclscope_losses(t, &l) == 1 && l.dropped == 3 && l.events == 1);
    CHECK(ncclscope_complete(t) == 1);
    CHECK(ncclscope_damage_count(t) == 0 && ncclscope_last_error(t)[0] == '\0');
    ncclscope_close(t);
    /* not a trace: refused with the name and offset 0 */
    memcpy(b.p, "NOTATRACE", 8);
    t = ncclscope_open_memory(b.p, b.len, "bad.nsc", err, sizeof(err));
    CHECK(t == NULL && strstr(err, "bad.nsc: offset 0") != NULL);
    free(b.p);
}

/* Damage: each case reports where, and what is intact still comes out. */
static void damage(void) {
    struct offsets o;
    struct seen s;
    char want[64];

    /* a bad block header (STRINGS): reported at its offset; the records
     * still come, their names unknown */
    struct buf b = whole(&o);
    b.p[o.strings + 8] ^= 0x5a; /* stored_len: the header check fails */
    CHECK(decode(&b, &s) >= 1);
    snprintf(want, sizeof(want), "mem.nsc: offset %zu", o.strings);
    CHECK(strstr(s.last_error, "mem.nsc: offset") != NULL);
    CHECK(s.records == 12);
    free(b.p);

    /* garbage between two blocks: skipped, then back in step */
    b = whole(&o);
    struct buf g = {0};
    put(&g, b.p, o.chunk);
    put(&g, "garbage-garbage-garbage!", 24);
    put(&g, b.p + o.chunk, b.len - o.chunk);
    CHECK(decode(&g, &s) >= 1);
    snprintf(want, sizeof(want), "offset %zu", o.chunk);
    CHECK(strstr(s.last_error, want) != NULL);
    CHECK(s.records == 12);
    free(g.p);
    free(b.p);

    /* a sequence gap (a block lost): reported, the rest read */
    b = whole(&o);
    struct nsc_block_header h;
    memcpy(&h, b.p + o.chunk, sizeof(h));
    h.seq += 1;
    h.check = nsc_header_check(&h);
    memcpy(b.p + o.chunk, &h, sizeof(h));
    CHECK(decode(&b, &s) >= 1);
    CHECK(s.records == 12);
    free(b.p);

    /* a segment longer than its chunk: nothing of it, the STATS after it read */
    b = whole(&o);
    struct nsc_segment seg;
    memcpy(&seg, b.p + o.chunk + sizeof(h), sizeof(seg));
    seg.nrecords += 1000;
    memcpy(b.p + o.chunk + sizeof(h), &seg, sizeof(seg));
    CHECK(decode(&b, &s) == 1);
    CHECK(strstr(s.last_error, "segment longer than its chunk") != NULL);
    snprintf(want, sizeof(want), "offset %zu", o.chunk);
    CHECK(strstr(s.last_error, want) != NULL);
    CHECK(s.records == 0);
    free(b.p);

    /* cut in the middle of the chunk: the cut is reported, no crash */
    b = whole(&o);
    b.len = o.chunk + sizeof(h) + 100;
    CHECK(decode(&b, &s) == 1);
    CHECK(strstr(s.last_error, "truncated") != NULL || strstr(s.last_error, "remain") != NULL);
    CHECK(s.records == 0);
    free(b.p);

    /* the same through the public API: a DAMAGE record naming the place */
    b = whole(&o);
    b.len = o.chunk + sizeof(h) + 100;
    char err[256];
    ncclscope_trace *t = ncclscope_open_memory(b.p, b.len, "cut.nsc", err, sizeof(err));
    CHECK(t != NULL);
    if (t) {
        unsigned dmg = 0;
        const struct ncclscope_record *r;
        while ((r = ncclscope_next(t)) != NULL)
            dmg += r->kind == NCCLSCOPE_REC_DAMAGE && strstr(r->text, "cut.nsc: offset") != NULL;
        CHECK(dmg == 1 && ncclscope_damage_count(t) == 1 && ncclscope_complete(t) == 0);
        ncclscope_close(t);
    }
    free(b.p);
}

/* Random damage through the public API: every byte flip, cut and splice
 * of the crafted trace reads to its end without a crash (ASan/UBSan runs
 * check the memory side), never yields more records than the file holds
 * twice over, and any damage comes out as DAMAGE records. */
static void mutations(void) {
    struct offsets o;
    struct buf b = whole(&o);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    unsigned too_many = 0, silent = 0, opened_n = 0;
    for (int iter = 0; iter < 3000; iter++) {
        struct buf m = {0};
        put(&m, b.p, b.len);
        int flips = 1 + iter % 4;
        for (int k = 0; k < flips; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = 16 + (size_t)(x % (m.len - 16)); /* the file header stays: else open refuses */
            m.p[at] ^= (unsigned char)(1u << (x >> 61));
        }
        if (iter % 5 == 0)
            m.len = 16 + (size_t)(x % (m.len - 16));
        char err[256];
        ncclscope_trace *t = ncclscope_open_memory(m.p, m.len, "mut.nsc", err, sizeof(err));
        if (t) {
            opened_n++;
            unsigned n = 0, dmg = 0;
            const struct ncclscope_record *r;
            while ((r = ncclscope_next(t)) != NULL) {
                n += r->kind != NCCLSCOPE_REC_DAMAGE && r->kind != NCCLSCOPE_REC_COMM_INFO;
                dmg += r->kind == NCCLSCOPE_REC_DAMAGE;
                for (unsigned i = 0; i < r->nfields; i++)
                    (void)strlen(r->fields[i].name);
            }
            too_many += n > 2 * NRECS;
            silent += dmg != ncclscope_damage_count(t);
            ncclscope_close(t);
        }
        free(m.p);
    }
    CHECK(opened_n == 3000);
    CHECK(too_many == 0);
    CHECK(silent == 0);
    free(b.p);
}

/* The SESSION's API version, patched where the plugin rewrites it
 * (NSC_SESSION_PAYLOAD_OFF): 0 (a session the Python package opened, no
 * NCCL) and 1..63 are intact, 64 is damage. */
static void session_api(void) {
    static const struct {
        uint32_t api;
        int intact;
    } cases[] = {{0, 1}, {4, 1}, {63, 1}, {64, 0}};
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct offsets o;
        struct buf b = whole(&o);
        struct nsc_session ses;
        memcpy(&ses, b.p + NSC_SESSION_PAYLOAD_OFF, sizeof(ses));
        CHECK(ses.pid == 4242 && ses.api_version == 7); /* the payload is where the rule says */
        ses.api_version = cases[i].api;
        memcpy(b.p + NSC_SESSION_PAYLOAD_OFF, &ses, sizeof(ses));
        struct seen s;
        int dmg = decode(&b, &s);
        if (cases[i].intact)
            CHECK(dmg == 0 && s.errors == 0 && s.records == 12);
        else
            CHECK(dmg >= 1 && strstr(s.last_error, "API version") != NULL);
        free(b.p);
    }
}

/* Blocks with their payload checksum (crash dumps): the trace reads as
 * without; every single bit flipped in any payload (its checksum
 * included) is damage at that block's offset, the block skipped, the rest
 * read, no sequence gap reported for it; a stored length other than raw + 4
 * and the flag beside zstd's are damaged headers. */
static void checksummed(void) {
    with_sums = 1;
    struct offsets o;
    struct buf b = whole(&o);
    struct seen s;
    CHECK(decode(&b, &s) == 0 && s.errors == 0 && s.records == 12 && s.with_ext == 3);
    unsigned flips = 0, silent = 0, misplaced = 0, wrong_count = 0;
    for (size_t off = sizeof(struct nsc_file_header); off < b.len;) {
        struct nsc_block_header h;
        memcpy(&h, b.p + off, sizeof(h));
        CHECK(h.flags == NSC_BLK_F_SUM && h.stored_len == h.raw_len + NSC_BLK_SUM_BYTES);
        char want[64];
        snprintf(want, sizeof(want), "mem.nsc: offset %zu: damaged block payload", off);
        for (size_t at = 0; at < h.stored_len; at++)
            for (int bit = 0; bit < 8; bit++) {
                unsigned char *c = b.p + off + sizeof(h) + at;
                *c ^= (unsigned char)(1u << bit);
                int dmg = decode(&b, &s);
                *c ^= (unsigned char)(1u << bit);
                flips++;
                silent += dmg == 0;
                misplaced += dmg != 1 || strstr(s.last_error, want) == NULL;
                /* the chunk holds every record; any other block skipped leaves them */
                wrong_count += s.records != (off == o.chunk ? 0u : 12u);
            }
        off += sizeof(h) + h.stored_len;
    }
    CHECK(flips > 8000);
    CHECK(silent == 0);
    CHECK(misplaced == 0);
    CHECK(wrong_count == 0);

    /* a stored length other than raw + 4, with a valid header check */
    struct nsc_block_header h;
    memcpy(&h, b.p + o.chunk, sizeof(h));
    struct nsc_block_header e = h;
    e.raw_len += 1;
    e.check = nsc_header_check(&e);
    memcpy(b.p + o.chunk, &e, sizeof(e));
    CHECK(decode(&b, &s) >= 1 && strstr(s.first_error, "raw + 4") != NULL && s.records == 0);
    /* the checksum flag beside zstd's: not a header this format writes */
    e = h;
    e.flags = NSC_BLK_F_SUM | NSC_BLK_F_ZSTD;
    e.check = nsc_header_check(&e);
    memcpy(b.p + o.chunk, &e, sizeof(e));
    CHECK(decode(&b, &s) >= 1 && strstr(s.first_error, "expected a block header") != NULL &&
          s.records == 0);
    free(b.p);

    /* random damage on checksummed blocks: never silent */
    mutations();
    with_sums = 0;
}

int main(void) {
    intact();
    session_api();
    public_api();
    damage();
    mutations();
    checksummed();
    return check_summary();
}
