// SPDX-License-Identifier: Apache-2.0
/*
 * record_pack.h - the packed record encoding of PACKED chunks (format
 * version 2; docs/format.md, "Packed records", is the specification).
 *
 * The ring holds fixed 64-byte records (one cache line, written in one go
 * by the callback). Most of those bytes are zero or repeat an earlier
 * record, so before compressing, the flusher rewrites each record as a few
 * varints predicted from the records before it in the same segment:
 *
 *   tag     u8      kind & 7 | etype << 3 | 0x80 when flags/aux follow
 *                   (kind 8, PY, is written as 0 like MARK; MARK's etype is
 *                   15, PY's 0..4)
 *   flags   varint  } only with 0x80: the (kind, etype) context's previous
 *   aux     varint  } flags/aux are reused otherwise
 *   ticks   varint  zigzag(ticks - previous record's ticks)
 *   id      varint  START: zigzag(id - (last START id + 1))
 *                   others: zigzag(last START id - id)
 *   mask    u8      bit w: payload word w differs from the context's
 *   words   varint  zigzag(word - context's previous word), for each bit
 *
 * A context is (kind, etype): the payload of the previous STOP of a
 * KernelCh, the previous START of a Coll, ... A START's word 0 (the parent
 * id) is first made relative: zigzag(id - parent) + 1, 0 for none. With
 * these predictions a STOP takes about 5 bytes, a repeated operation's
 * descriptors a few more, and zstd then runs over 3-4x fewer bytes, which
 * is most of the flusher's time (docs/benchmarks.md).
 *
 * All prediction state starts at zero at each segment, so segments decode
 * alone. The transform is lossless for every record, payload bytes
 * included.
 */
#ifndef NSC_RECORD_PACK_H
#define NSC_RECORD_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_format.h"

/* Longest encoding of one record: tag, mask, 2 + 2 + 5 varints. */
#define NSC_PACK_MAX 96
#define NSC_PACK_CONTEXTS 128 /* kind (3 bits) x etype (4 bits) */

struct nsc_pack_ctx {
    uint64_t w[5];
    uint32_t aux;
    uint16_t flags;
};

struct nsc_pack_state {
    uint64_t ticks, last_start;
    uint64_t valid[2]; /* contexts seen in this segment */
    struct nsc_pack_ctx ctx[NSC_PACK_CONTEXTS];
};

static inline void nsc_pack_reset(struct nsc_pack_state *s) {
    s->ticks = 0;
    s->last_start = 0;
    s->valid[0] = s->valid[1] = 0;
}

/* The context of (kind, etype), zeroed the first time it is used in a
 * segment (cheaper than clearing all of them per segment). */
static inline struct nsc_pack_ctx *nsc_pack_context(struct nsc_pack_state *s, unsigned tag) {
    unsigned c = tag & 0x7f;
    struct nsc_pack_ctx *x = &s->ctx[c];
    uint64_t bit = 1ull << (c & 63);
    if (!(s->valid[c >> 6] & bit)) {
        s->valid[c >> 6] |= bit;
        memset(x, 0, sizeof(*x));
    }
    return x;
}

static inline unsigned char *nsc_put_varint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static inline uint64_t nsc_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t nsc_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Appends the packed form of r at p (room for NSC_PACK_MAX); returns the end. */
static inline unsigned char *nsc_pack_record(struct nsc_pack_state *s, const struct nsc_rec *r,
                                             unsigned char *p) {
    unsigned tag = (unsigned)(r->h.kind & 7) | (unsigned)(r->h.etype & 15) << 3;
    struct nsc_pack_ctx *c = nsc_pack_context(s, tag);
    uint64_t w[5];
    memcpy(w, &r->u, sizeof(w));
    int start = r->h.kind == NSC_REC_START;
    if (start && w[0])
        w[0] = nsc_zigzag((int64_t)(r->h.id - w[0])) + 1;
    int fa = r->h.flags != c->flags || r->h.aux != c->aux;
    *p++ = (unsigned char)(tag | (fa ? 0x80u : 0u));
    if (fa) {
        p = nsc_put_varint(p, r->h.flags);
        p = nsc_put_varint(p, r->h.aux);
        c->flags = r->h.flags;
        c->aux = r->h.aux;
    }
    p = nsc_put_varint(p, nsc_zigzag((int64_t)(r->h.ticks - s->ticks)));
    s->ticks = r->h.ticks;
    if (start) {
        p = nsc_put_varint(p, nsc_zigzag((int64_t)(r->h.id - (s->last_start + 1))));
        s->last_start = r->h.id;
    } else {
        p = nsc_put_varint(p, nsc_zigzag((int64_t)(s->last_start - r->h.id)));
    }
    unsigned char *mask = p++;
    unsigned m = 0;
    for (unsigned i = 0; i < 5; i++)
        if (w[i] != c->w[i]) {
            m |= 1u << i;
            p = nsc_put_varint(p, nsc_zigzag((int64_t)(w[i] - c->w[i])));
            c->w[i] = w[i];
        }
    *mask = (unsigned char)m;
    return p;
}

/* Decodes one record from [*pp, end). Returns 0 and advances *pp, or -1 for
 * input that is cut short or not a packed record. */
int nsc_unpack_record(struct nsc_pack_state *s, const unsigned char **pp, const unsigned char *end,
                      struct nsc_rec *r);

#endif /* NSC_RECORD_PACK_H */
