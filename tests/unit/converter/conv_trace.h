// SPDX-License-Identifier: Apache-2.0
/*
 * conv_trace.h - small traces built in memory (or written to a temporary
 * file) for the converter's unit tests: a session, strings, comms, records
 * of any threads in one chunk, an END block. Header-only; each test uses
 * what it needs.
 */
#ifndef NSC_CONV_TRACE_H
#define NSC_CONV_TRACE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event_types.h"
#include "nccl_abi.h"
#include "trace_decode.h"

struct ct_buf {
    unsigned char *p;
    size_t len, cap;
    uint32_t seq;
};

static inline void ct_put(struct ct_buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 1024;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static inline void ct_block(struct ct_buf *b, uint16_t type, const void *payload, uint32_t len) {
    struct nsc_block_header h;
    memset(&h, 0, sizeof(h));
    h.magic = NSC_BLOCK_MAGIC;
    h.type = type;
    h.stored_len = h.raw_len = len;
    h.seq = b->seq++;
    h.check = nsc_header_check(&h);
    ct_put(b, &h, sizeof(h));
    ct_put(b, payload, len);
}

/* A trace being built: records are kept until ct_finish writes the chunk. */
struct ct_trace {
    struct ct_buf b;
    struct nsc_rec *r;
    uint32_t *thread;
    unsigned n, cap;
    uint32_t mask; /* the session's: ct_coll marks every Coll sampled when it has KernelCh */
};

/* Header, SESSION (ticks are ns; mono = ticks; realtime = mono + real_off),
 * strings 2.. as given (NULL-terminated list), one comm (serial 1). */
static inline void ct_begin(struct ct_trace *t, uint32_t mask, const char *host, uint32_t pid,
                            int64_t real_off, const char *const *strs, uint64_t comm_id, int rank,
                            int nranks) {
    memset(t, 0, sizeof(*t));
    t->mask = mask;
    struct nsc_file_header fh;
    memcpy(fh.magic, NSC_FILE_MAGIC, 8);
    fh.format_version = NSC_FORMAT_VERSION;
    fh.header_size = sizeof(fh);
    ct_put(&t->b, &fh, sizeof(fh));
    struct nsc_session s;
    memset(&s, 0, sizeof(s));
    s.format_version = NSC_FORMAT_VERSION;
    s.api_version = 5;
    s.pid = pid;
    s.clock_source = NSC_CLOCK_MONOTONIC;
    s.ticks_per_sec = 1000000000ull;
    s.start.ticks = s.start.mono_ns = 1000;
    s.start.real_ns = (uint64_t)(1000 + real_off);
    s.event_mask = mask;
    snprintf(s.host, sizeof(s.host), "%s", host);
    strcpy(s.plugin_version, "0.1.0");
    ct_block(&t->b, NSC_BLK_SESSION, &s, sizeof(s));
    struct ct_buf p = {0};
    for (uint32_t id = 2; strs && strs[id - 2]; id++) {
        uint16_t len = (uint16_t)strlen(strs[id - 2]);
        ct_put(&p, &id, 4);
        ct_put(&p, &len, 2);
        ct_put(&p, strs[id - 2], len);
    }
    if (p.len)
        ct_block(&t->b, NSC_BLK_STRINGS, p.p, (uint32_t)p.len);
    free(p.p);
    struct nsc_comm_info c;
    memset(&c, 0, sizeof(c));
    c.serial = 1;
    c.rank = rank;
    c.nranks = nranks;
    c.nnodes = 1;
    c.comm_id = comm_id;
    ct_block(&t->b, NSC_BLK_COMMS, &c, sizeof(c));
}

static inline struct nsc_rec *ct_rec(struct ct_trace *t, uint32_t thread, uint8_t kind,
                                     uint8_t etype, uint64_t id, uint64_t ns) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->r = realloc(t->r, t->cap * sizeof(*t->r));
        t->thread = realloc(t->thread, t->cap * sizeof(*t->thread));
    }
    struct nsc_rec *r = &t->r[t->n];
    t->thread[t->n++] = thread;
    memset(r, 0, sizeof(*r));
    r->h.kind = kind;
    r->h.etype = etype;
    r->h.id = id;
    r->h.ticks = ns;
    r->h.aux = 1; /* comm serial 1 for STARTs */
    return r;
}

/* A Coll START: func/dtype/algo/proto string ids, count, seq, channels;
 * sampled (NSC_RF_SAMPLED) when the session records KernelCh, as the
 * plugin marks every operation without NCCLSCOPE_KERNEL_SAMPLE (clear the
 * flag for one that was not). */
static inline struct nsc_rec *ct_coll(struct ct_trace *t, uint32_t thread, uint64_t id, uint64_t ns,
                                      uint64_t seq, uint64_t count, unsigned nch) {
    struct nsc_rec *r = ct_rec(t, thread, NSC_REC_START, NSC_ET_COLL, id, ns);
    if ((t->mask >> NSC_ET_KERNEL_CH) & 1)
        r->h.flags |= NSC_RF_SAMPLED;
    r->u.start.d.coll.seq = seq;
    r->u.start.d.coll.func = 2;
    r->u.start.d.coll.dtype = 3;
    r->u.start.d.coll.algo = 4;
    r->u.start.d.coll.proto = 5;
    r->u.start.d.coll.count = count;
    r->u.start.d.coll.nch = (uint8_t)nch;
    return r;
}

static inline void ct_kernel_ch(struct ct_trace *t, uint32_t thread, uint64_t id, uint64_t parent,
                                unsigned ch, uint64_t ns_start, uint64_t gpu_start,
                                uint64_t gpu_end, uint64_t ns_stop) {
    struct nsc_rec *r = ct_rec(t, thread, NSC_REC_START, NSC_ET_KERNEL_CH, id, ns_start);
    r->u.start.parent = parent;
    r->u.start.d.kernel_ch.ch = (uint8_t)ch;
    r->u.start.d.kernel_ch.ptimer = gpu_start;
    r = ct_rec(t, thread, NSC_REC_STATE, NSC_ET_KERNEL_CH, id, ns_stop);
    r->h.aux = NSC_ABI_KERNEL_CH_STOP;
    r->u.state.arg = gpu_end;
    ct_rec(t, thread, NSC_REC_STOP, NSC_ET_KERNEL_CH, id, ns_stop);
}

/* The chunk (one segment per run of a thread's records) and END. */
static inline void ct_finish(struct ct_trace *t) {
    struct ct_buf p = {0};
    for (unsigned i = 0; i < t->n;) {
        unsigned k = i;
        while (k < t->n && t->thread[k] == t->thread[i])
            k++;
        struct nsc_segment seg = {t->thread[i], k - i};
        ct_put(&p, &seg, sizeof(seg));
        ct_put(&p, &t->r[i], (k - i) * sizeof(t->r[0]));
        i = k;
    }
    ct_block(&t->b, NSC_BLK_CHUNK, p.p, (uint32_t)p.len);
    free(p.p);
    ct_block(&t->b, NSC_BLK_END, "", 0);
    free(t->r);
    free(t->thread);
    t->r = NULL;
    t->thread = NULL;
}

/* Written to a temporary file; returns its path (static buffer per call
 * site: copy it) or NULL. */
static inline char *ct_write(const struct ct_trace *t, char *path, size_t n) {
    snprintf(path, n, "/tmp/nsc-conv-unit-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    ssize_t w = write(fd, t->b.p, t->b.len);
    close(fd);
    return w == (ssize_t)t->b.len ? path : NULL;
}

#endif /* NSC_CONV_TRACE_H */
