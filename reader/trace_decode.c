// SPDX-License-Identifier: Apache-2.0
/* trace_decode.c - block payloads to records. */
#include "trace_decode.h"

#include "block_payload.h"
#include "event_types.h"
#include "record_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void init_common(struct nsc_decoder *d) {
    d->ns_per_tick = 1.0;
}

enum nsc_result nsc_decoder_open(struct nsc_decoder *d, const char *path) {
    memset(d, 0, sizeof(*d));
    init_common(d);
    return nsc_reader_open(&d->rd, path);
}

enum nsc_result nsc_decoder_open_memory(struct nsc_decoder *d, const void *data, size_t len,
                                        const char *name) {
    memset(d, 0, sizeof(*d));
    init_common(d);
    return nsc_reader_open_memory(&d->rd, data, len, name);
}

void nsc_decoder_close(struct nsc_decoder *d) {
    for (uint32_t i = 0; i < d->nstrings; i++)
        free(d->strings[i]);
    free(d->strings);
    free(d->comms);
    free(d->threads);
    nsc_reader_close(&d->rd);
    memset(d, 0, sizeof(*d));
}

const char *nsc_decoder_str(const struct nsc_decoder *d, uint32_t id) {
    if (id == 0)
        return NULL;
    if (id < d->nstrings && d->strings[id])
        return d->strings[id];
    return "?";
}

const struct nsc_comm_info *nsc_decoder_comm(const struct nsc_decoder *d, uint32_t serial) {
    if (serial < d->ncomms && d->comms[serial].serial == serial && serial != 0)
        return &d->comms[serial];
    return NULL;
}

uint64_t nsc_decoder_mono_ns(const struct nsc_decoder *d, uint64_t ticks) {
    double dt = (double)(int64_t)(ticks - d->hi.ticks) * d->ns_per_tick;
    double ns = (double)d->hi.mono_ns + dt;
    /* A double out of uint64_t's range has no defined conversion. */
    if (!(ns > 0))
        return 0;
    if (ns >= 18446744073709551615.0)
        return UINT64_MAX;
    return (uint64_t)ns;
}

void nsc_losses_sum(const struct nsc_stats_header *h, const struct nsc_thread_stats *t,
                    struct nsc_losses *l) {
    memset(l, 0, sizeof(*l));
    for (uint32_t i = 0; i < h->nthreads; i++) {
        l->ring += t[i].drops_ring;
        l->events += t[i].drops_events;
    }
    l->no_thread = h->drops_no_thread;
    l->dropped = l->ring + l->no_thread;
    l->write = h->lost_write;
    l->exit = h->lost_exit;
    l->total = l->dropped + l->write + l->exit;
}

unsigned nsc_rec_string_ids(const struct nsc_rec *r, uint32_t ids[4]) {
    const union nsc_desc *d = &r->u.start.d;
    if (r->h.kind != NSC_REC_START)
        return 0;
    switch (r->h.etype) {
    case NSC_ET_COLL_API:
        ids[0] = d->coll_api.func, ids[1] = d->coll_api.dtype;
        return 2;
    case NSC_ET_P2P_API:
        ids[0] = d->p2p_api.func, ids[1] = d->p2p_api.dtype;
        return 2;
    case NSC_ET_COLL:
        ids[0] = d->coll.func, ids[1] = d->coll.dtype, ids[2] = d->coll.algo, ids[3] = d->coll.proto;
        return 4;
    case NSC_ET_P2P:
        ids[0] = d->p2p.func, ids[1] = d->p2p.dtype;
        return 2;
    case NSC_ET_CE_COLL:
        ids[0] = d->ce_coll.func, ids[1] = d->ce_coll.dtype, ids[2] = d->ce_coll.sync;
        return 3;
    default:
        return 0;
    }
}

/* Whether a START names a string this file does not hold: id 1 (the
 * plugin's table was full) or an id no STRINGS block defined (lost). */
static int unnamed(const struct nsc_decoder *d, const struct nsc_rec *r) {
    uint32_t ids[4];
    unsigned n = nsc_rec_string_ids(r, ids);
    for (unsigned i = 0; i < n; i++) {
        const char *s = nsc_decoder_str(d, ids[i]);
        if (s && s[0] == '?' && s[1] == '\0')
            return 1;
    }
    return 0;
}

static void report(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                   const char *msg) {
    if (ops->error)
        ops->error(ud, d, msg);
}

static void bad_payload(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                        const struct nsc_block *b, const char *what) {
    char msg[600];
    snprintf(msg, sizeof(msg), "%s: offset %llu: %s: block %u: %s", d->rd.path,
             (unsigned long long)b->offset, nsc_result_str(NSC_E_BAD_PAYLOAD), b->seq, what);
    d->rd.errors++;
    report(d, ops, ud, msg);
}

/* An ANCHOR block is stored uncompressed (24 bytes, no checksum): what
 * damage can be seen in it is. Returns NULL or what is wrong. */
static const char *anchor_damage(const struct nsc_decoder *d, const struct nsc_anchor *a) {
    if (!d->have_session)
        return NULL;
    if (a->ticks < d->hi.ticks || a->mono_ns < d->hi.mono_ns)
        return "anchor earlier than the one before it (ignored)";
    /* Realtime may be stepped by NTP, never by a day. */
    uint64_t off0 = d->session.start.real_ns - d->session.start.mono_ns;
    uint64_t off = a->real_ns - a->mono_ns;
    if ((int64_t)(off - off0) > 86400000000000ll || (int64_t)(off0 - off) > 86400000000000ll)
        return "anchor's CLOCK_REALTIME is more than a day away from the session's (ignored)";
    /* Against the session's calibrated rate: a clock does not run at half
     * or twice its speed. Over at least 1 ms, where the anchors' own read
     * jitter is small. */
    uint64_t dm = a->mono_ns - d->hi.mono_ns, dt = a->ticks - d->hi.ticks;
    if (d->session.ticks_per_sec && dm >= 1000000) {
        double rate = (double)dt * 1e9 / (double)dm / (double)d->session.ticks_per_sec;
        if (!(rate > 0.5 && rate < 2.0))
            return "anchor's clock rate is not the session's (ignored)";
    }
    return NULL;
}

/* The SESSION block is stored uncompressed too. Returns NULL or what is
 * wrong (the block is still used: host and pid may be intact). */
static const char *session_damage(const struct nsc_decoder *d, const struct nsc_session *s) {
    if (s->format_version != d->rd.version)
        return "session's format version differs from the file header's";
    if (s->clock_source != NSC_CLOCK_TSC && s->clock_source != NSC_CLOCK_MONOTONIC)
        return "unknown clock source";
    if (s->ticks_per_sec < 1000000ull || s->ticks_per_sec > 100000000000ull)
        return "clock rate out of range (1 MHz to 100 GHz)";
    /* 0: no NCCL init (yet) in a session the Python package opened */
    if (s->api_version > 63 || (s->event_mask & ~NSC_MASK_ALL))
        return "API version or event mask out of range";
    /* The writer zeroes the block: text, then zeros to the end. */
    const char *txt[2] = {s->host, s->plugin_version};
    size_t len[2] = {sizeof(s->host),
                     nsc_session_replayed(s) ? NSC_SESSION_REPLAY_OFF : sizeof(s->plugin_version)};
    for (int k = 0; k < 2; k++) {
        size_t i = 0;
        while (i < len[k] && txt[k][i] >= 0x20 && txt[k][i] < 0x7f)
            i++;
        for (; i < len[k]; i++)
            if (txt[k][i] != '\0')
                return k ? "plugin version is not text" : "host name is not text";
    }
    return NULL;
}

static void on_anchor(struct nsc_decoder *d, const struct nsc_anchor *a) {
    d->lo = d->hi;
    d->hi = *a;
    /* Slope from two anchors at least 1 ms apart; otherwise the calibrated
     * rate from the session block. */
    if (a->ticks > d->lo.ticks && a->mono_ns > d->lo.mono_ns + 1000000ull)
        d->ns_per_tick = (double)(a->mono_ns - d->lo.mono_ns) / (double)(a->ticks - d->lo.ticks);
}

static struct nsc_dthread *thread_of(struct nsc_decoder *d, uint32_t i) {
    if (i >= 65536)
        return NULL;
    if (i >= d->nthreads) {
        uint32_t n = i + 16;
        struct nsc_dthread *t = realloc(d->threads, n * sizeof(*t));
        if (!t)
            return NULL;
        memset(t + d->nthreads, 0, (n - d->nthreads) * sizeof(*t));
        d->threads = t;
        d->nthreads = n;
    }
    return &d->threads[i];
}

static void deliver(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                    uint32_t ti, const struct nsc_rec *r, const struct nsc_rec *ext) {
    d->records++;
    if (r->h.kind == NSC_REC_START && unnamed(d, r))
        d->unnamed_events++;
    if (!d->have_ticks) {
        d->first_ticks = r->h.ticks;
        d->have_ticks = 1;
    }
    if (r->h.ticks > d->last_ticks)
        d->last_ticks = r->h.ticks;
    if (ops->record)
        ops->record(ud, d, ti, r, ext);
}

static void flush_held(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                       uint32_t ti, struct nsc_dthread *t) {
    if (t->held) {
        t->held = 0;
        deliver(d, ops, ud, ti, &t->start, NULL);
    }
}

/* One record of writer thread ti: THREAD updates the thread, an EXT joins
 * the START held for it, everything else is delivered. */
static void on_record(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                      uint32_t ti, struct nsc_dthread *t, const struct nsc_rec *r) {
    t->records++;
    if (r->h.kind == NSC_REC_THREAD) {
        flush_held(d, ops, ud, ti, t);
        t->tid = r->h.aux;
        memcpy(t->name, r->u.thread_name, 16);
        t->name[16] = '\0';
        t->known = 1;
        deliver(d, ops, ud, ti, r, NULL);
        return;
    }
    if (r->h.kind == NSC_REC_EXT) {
        if (t->held && t->start.h.id == r->h.id) {
            t->held = 0;
            deliver(d, ops, ud, ti, &t->start, r);
        }
        return; /* an EXT without its START was dropped with it */
    }
    flush_held(d, ops, ud, ti, t);
    if (r->h.kind == NSC_REC_START && (r->h.flags & NSC_RF_HAS_EXT)) {
        t->start = *r;
        t->held = 1;
        return;
    }
    deliver(d, ops, ud, ti, r, NULL);
}

static void on_chunk(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                     const struct nsc_block *b) {
    const unsigned char *p = b->data, *end = p + b->len;
    d->chunks++;
    while (p < end) {
        struct nsc_segment seg;
        if ((size_t)(end - p) < sizeof(seg)) {
            bad_payload(d, ops, ud, b, "chunk ends inside a segment header");
            return;
        }
        memcpy(&seg, p, sizeof(seg));
        p += sizeof(seg);
        if ((uint64_t)seg.nrecords * NSC_REC_SIZE > (uint64_t)(end - p)) {
            bad_payload(d, ops, ud, b, "segment longer than its chunk");
            return;
        }
        struct nsc_dthread *t = thread_of(d, seg.thread);
        if (!t) {
            bad_payload(d, ops, ud, b, "segment names an impossible thread index");
            return;
        }
        for (uint32_t i = 0; i < seg.nrecords; i++, p += NSC_REC_SIZE) {
            struct nsc_rec r;
            memcpy(&r, p, sizeof(r));
            on_record(d, ops, ud, seg.thread, t, &r);
        }
    }
}

static void on_packed(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                      const struct nsc_block *b) {
    const unsigned char *p = b->data, *end = p + b->len;
    d->chunks++;
    while (p < end) {
        struct nsc_packed_segment seg;
        if ((size_t)(end - p) < sizeof(seg)) {
            bad_payload(d, ops, ud, b, "chunk ends inside a segment header");
            return;
        }
        memcpy(&seg, p, sizeof(seg));
        p += sizeof(seg);
        if (seg.nbytes > (size_t)(end - p)) {
            bad_payload(d, ops, ud, b, "segment longer than its chunk");
            return;
        }
        struct nsc_dthread *t = thread_of(d, seg.thread);
        if (!t) {
            bad_payload(d, ops, ud, b, "segment names an impossible thread index");
            return;
        }
        const unsigned char *q = p, *seg_end = p + seg.nbytes;
        struct nsc_pack_state ps;
        nsc_pack_reset(&ps);
        for (uint32_t i = 0; i < seg.nrecords; i++) {
            struct nsc_rec r;
            if (nsc_unpack_record(&ps, &q, seg_end, &r) != 0) {
                char what[128];
                snprintf(what, sizeof(what), "segment of thread %u: record %u of %u is not a packed record",
                         seg.thread, i, seg.nrecords);
                bad_payload(d, ops, ud, b, what);
                break; /* the next segment starts at a known place */
            }
            on_record(d, ops, ud, seg.thread, t, &r);
        }
        p = seg_end;
    }
}

static void on_strings(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                       const struct nsc_block *b) {
    const unsigned char *p = b->data, *end = p + b->len;
    while (p < end) {
        uint32_t id;
        uint16_t len;
        if (end - p < 6) {
            bad_payload(d, ops, ud, b, "string entry header cut short");
            return;
        }
        memcpy(&id, p, 4);
        memcpy(&len, p + 4, 2);
        p += 6;
        if ((size_t)(end - p) < len || id >= 65536) {
            bad_payload(d, ops, ud, b, "string entry longer than its block");
            return;
        }
        if (id >= d->nstrings) {
            uint32_t n = id + 64;
            char **s = realloc(d->strings, n * sizeof(*s));
            if (!s)
                return;
            memset(s + d->nstrings, 0, (n - d->nstrings) * sizeof(*s));
            d->strings = s;
            d->nstrings = n;
        }
        free(d->strings[id]);
        d->strings[id] = strndup((const char *)p, len);
        p += len;
    }
}

static void on_comms(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud,
                     const struct nsc_block *b) {
    if (b->len % sizeof(struct nsc_comm_info)) {
        bad_payload(d, ops, ud, b, "comm table size is not a multiple of 128");
        return;
    }
    for (size_t off = 0; off < b->len; off += sizeof(struct nsc_comm_info)) {
        struct nsc_comm_info c;
        memcpy(&c, (const char *)b->data + off, sizeof(c));
        c.name[sizeof(c.name) - 1] = '\0';
        if (c.serial == 0 || c.serial >= NSC_COMM_SERIAL_MAX) {
            bad_payload(d, ops, ud, b, "comm serial out of range");
            continue;
        }
        if (c.serial >= d->ncomms) {
            uint32_t n = c.serial + 64;
            if (n < d->ncomms * 2) /* serials grow one by one: double, not +64 each time */
                n = d->ncomms * 2 < NSC_COMM_SERIAL_MAX ? d->ncomms * 2 : NSC_COMM_SERIAL_MAX;
            struct nsc_comm_info *t = realloc(d->comms, n * sizeof(*t));
            if (!t)
                return;
            memset(t + d->ncomms, 0, (n - d->ncomms) * sizeof(*t));
            d->comms = t;
            d->ncomms = n;
        }
        d->comms[c.serial] = c;
        if (ops->comm)
            ops->comm(ud, d, &d->comms[c.serial]);
    }
}

int nsc_decoder_step(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud) {
    if (d->done)
        return 0;
    struct nsc_block b;
    int before = d->rd.errors;
    int rc = nsc_reader_next(&d->rd, &b);
    if (d->rd.errors != before)
        report(d, ops, ud, d->rd.err);
    if (rc == 0) {
        d->done = 1;
        for (uint32_t i = 0; i < d->nthreads; i++)
            flush_held(d, ops, ud, i, &d->threads[i]);
        return 0;
    }
    if (rc < 0)
        return 1;
    d->blocks++;
    switch (b.type) {
    case NSC_BLK_SESSION:
        if (b.len != sizeof(struct nsc_session)) {
            bad_payload(d, ops, ud, &b, "session block has the wrong size");
            break;
        }
        memcpy(&d->session, b.data, sizeof(d->session));
        const char *sd = session_damage(d, &d->session);
        if (sd)
            bad_payload(d, ops, ud, &b, sd);
        d->session.host[sizeof(d->session.host) - 1] = '\0';
        d->session.plugin_version[sizeof(d->session.plugin_version) - 1] = '\0';
        d->have_session = 1;
        d->lo = d->hi = d->session.start;
        if (d->session.ticks_per_sec)
            d->ns_per_tick = 1e9 / (double)d->session.ticks_per_sec;
        break;
    case NSC_BLK_ANCHOR:
        if (b.len != sizeof(struct nsc_anchor)) {
            bad_payload(d, ops, ud, &b, "anchor block has the wrong size");
            break;
        }
        struct nsc_anchor a;
        memcpy(&a, b.data, sizeof(a));
        const char *ad = anchor_damage(d, &a);
        if (ad) {
            bad_payload(d, ops, ud, &b, ad);
            break;
        }
        on_anchor(d, &a);
        break;
    case NSC_BLK_STRINGS:
        on_strings(d, ops, ud, &b);
        break;
    case NSC_BLK_COMMS:
        on_comms(d, ops, ud, &b);
        break;
    case NSC_BLK_CHUNK:
        on_chunk(d, ops, ud, &b);
        break;
    case NSC_BLK_PACKED:
        on_packed(d, ops, ud, &b);
        break;
    case NSC_BLK_STATS: {
        /* v1/v2 headers are 40 bytes with header_size 0; v3 says its
         * size, so a later version may append fields we skip. */
        struct nsc_stats_header h;
        memset(&h, 0, sizeof(h));
        if (b.len < NSC_STATS_HEADER_V2) {
            bad_payload(d, ops, ud, &b, "stats block too short");
            break;
        }
        memcpy(&h, b.data, NSC_STATS_HEADER_V2);
        size_t hsize = h.header_size ? h.header_size : NSC_STATS_HEADER_V2;
        if (hsize < NSC_STATS_HEADER_V2 || hsize > b.len) {
            bad_payload(d, ops, ud, &b, "stats header size out of range");
            break;
        }
        memcpy(&h, b.data, hsize < sizeof(h) ? hsize : sizeof(h));
        h.header_size = (uint32_t)hsize;
        if ((b.len - hsize) / sizeof(struct nsc_thread_stats) < h.nthreads) {
            bad_payload(d, ops, ud, &b, "stats block shorter than its thread count");
            break;
        }
        struct nsc_thread_stats *ts = malloc(h.nthreads * sizeof(*ts) + 1);
        if (!ts)
            break;
        memcpy(ts, (const char *)b.data + hsize, h.nthreads * sizeof(*ts));
        d->stats = h;
        d->have_stats = 1;
        nsc_losses_sum(&h, ts, &d->losses);
        if (ops->stats)
            ops->stats(ud, d, &h, ts);
        free(ts);
        break;
    }
    case NSC_BLK_END:
        d->ended = 1;
        break;
    case NSC_BLK_HANG: {
        /* A damaged one is reported (file, offset) and given to no one: a
         * watchdog view that contradicts itself would name the wrong
         * operations in flight. */
        struct nsc_hang_view hv;
        const char *why;
        if (nsc_hang_decode(b.data, b.len, &hv, &why) != 0)
            bad_payload(d, ops, ud, &b, why);
        else if (ops->hang)
            ops->hang(ud, d, b.data, b.len);
        break;
    }
    }
    return 1;
}

int nsc_decoder_run(struct nsc_decoder *d, const struct nsc_decode_ops *ops, void *ud) {
    while (!d->stop && nsc_decoder_step(d, ops, ud))
        ;
    /* A stopped run delivers the STARTs still waiting for their EXT. */
    for (uint32_t i = 0; i < d->nthreads; i++)
        flush_held(d, ops, ud, i, &d->threads[i]);
    return d->rd.errors;
}

const struct nsc_session *nsc_decoder_session(const struct nsc_decoder *d) {
    return d->have_session ? &d->session : NULL;
}

const struct nsc_losses *nsc_decoder_losses(const struct nsc_decoder *d) {
    return d->have_stats ? &d->losses : NULL;
}

const struct nsc_stats_header *nsc_decoder_stats(const struct nsc_decoder *d) {
    return d->have_stats ? &d->stats : NULL;
}

uint32_t nsc_decoder_nthreads(const struct nsc_decoder *d) { return d->nthreads; }

const struct nsc_dthread *nsc_decoder_thread(const struct nsc_decoder *d, uint32_t i) {
    return i < d->nthreads ? &d->threads[i] : NULL;
}

const char *nsc_decoder_error(const struct nsc_decoder *d) { return d->rd.err; }

const char *nsc_decoder_path(const struct nsc_decoder *d) { return d->rd.path; }

int nsc_decoder_ended(const struct nsc_decoder *d) { return d->ended; }

void nsc_decoder_request_stop(struct nsc_decoder *d) { d->stop = 1; }

void nsc_decoder_counts(const struct nsc_decoder *d, struct nsc_decode_counts *c) {
    c->file_size = d->rd.size;
    c->format_version = d->rd.version;
    c->comm_slots = d->ncomms;
    c->blocks = d->blocks;
    c->chunks = d->chunks;
    c->records = d->records;
    c->unnamed_events = d->unnamed_events;
    c->damage = (uint64_t)d->rd.errors;
    c->first_ticks = d->first_ticks;
    c->last_ticks = d->last_ticks;
    c->have_ticks = d->have_ticks;
}
