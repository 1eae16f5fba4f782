// SPDX-License-Identifier: Apache-2.0
/* block_payload.c - encoders and decoders of the small blocks' payloads. */
#include "block_payload.h"

#include <stdlib.h>
#include <string.h>

size_t nsc_strings_encode(unsigned char *buf, size_t cap, uint32_t *id, uint32_t upto,
                          const char *(*text)(uint32_t id)) {
    size_t len = 0;
    while (*id < upto) {
        if (*id == 0) { /* id 0 is NULL: never written */
            (*id)++;
            continue;
        }
        const char *s = text(*id);
        size_t sl = s ? strlen(s) : 0;
        if (sl > UINT16_MAX)
            sl = UINT16_MAX;
        if (len + 6 + sl > cap)
            break;
        uint16_t l16 = (uint16_t)sl;
        memcpy(buf + len, id, 4);
        memcpy(buf + len + 4, &l16, 2);
        if (sl)
            memcpy(buf + len + 6, s, sl);
        len += 6 + sl;
        (*id)++;
    }
    return len;
}

int nsc_strings_next(const unsigned char **p, const unsigned char *end, uint32_t *id,
                     const char **text, uint16_t *len) {
    if (end - *p < 6)
        return 0;
    memcpy(id, *p, 4);
    memcpy(len, *p + 4, 2);
    if ((size_t)(end - *p - 6) < *len || *id >= 65536)
        return 0;
    *text = (const char *)*p + 6;
    *p += 6 + (size_t)*len;
    return 1;
}

int nsc_stats_decode(const void *data, size_t len, struct nsc_stats_header *h,
                     const unsigned char **threads, const char **why) {
    /* v1/v2 headers are 40 bytes with header_size 0; v3 says its size, so a
     * later version may append fields this reader skips. */
    memset(h, 0, sizeof(*h));
    if (len < NSC_STATS_HEADER_V2) {
        *why = "stats block too short";
        return -1;
    }
    memcpy(h, data, NSC_STATS_HEADER_V2);
    size_t hsize = h->header_size ? h->header_size : NSC_STATS_HEADER_V2;
    if (hsize < NSC_STATS_HEADER_V2 || hsize > len) {
        *why = "stats header size out of range";
        return -1;
    }
    memcpy(h, data, hsize < sizeof(*h) ? hsize : sizeof(*h));
    h->header_size = (uint32_t)hsize;
    if ((len - hsize) / sizeof(struct nsc_thread_stats) < h->nthreads) {
        *why = "stats block shorter than its thread count";
        return -1;
    }
    *threads = (const unsigned char *)data + hsize;
    return 0;
}

size_t nsc_hang_encode(unsigned char *buf, const struct nsc_hang_header *h,
                       const struct nsc_hang_comm *comms, uint32_t ncomms,
                       const struct nsc_hang_op *ops, uint32_t nops,
                       const struct nsc_hang_proxy *proxies, uint32_t nproxies) {
    struct nsc_hang_header hh = *h;
    hh.header_size = sizeof(hh);
    hh.comm_size = sizeof(*comms);
    hh.op_size = sizeof(*ops);
    hh.proxy_size = sizeof(*proxies);
    hh.ncomms = ncomms;
    hh.nops = nops;
    hh.nproxies = nproxies;
    unsigned char *p = buf;
    memcpy(p, &hh, sizeof(hh));
    p += sizeof(hh);
    if (ncomms)
        memcpy(p, comms, ncomms * sizeof(*comms));
    p += ncomms * sizeof(*comms);
    if (nops)
        memcpy(p, ops, nops * sizeof(*ops));
    p += nops * sizeof(*ops);
    if (nproxies)
        memcpy(p, proxies, nproxies * sizeof(*proxies));
    p += nproxies * sizeof(*proxies);
    return (size_t)(p - buf);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* What the watchdog writes always holds (docs/format.md, HANG): every
 * operation is a Coll (1) or a P2p (2) whose channels stopped are among
 * those started, and every ProxyOp belongs to an operation of the block.
 * (An operation's comm may be missing from the comms: there are at most
 * 256 of those.) Returns 0, or -1 with *why (out of memory: not damage,
 * the ProxyOps are then not checked). */
static int hang_entries_damage(const struct nsc_hang_view *v, const char **why) {
    for (uint32_t k = 0; k < v->h.nops; k++) {
        struct nsc_hang_op o;
        nsc_hang_op_at(v, k, &o);
        if (o.etype != 1 && o.etype != 2) {
            *why = "hang block: an operation that is neither a Coll nor a P2p";
            return -1;
        }
        if (o.ch_done & ~o.ch_started) {
            *why = "hang block: an operation with channels stopped that never started";
            return -1;
        }
    }
    if (!v->h.nproxies)
        return 0;
    /* sorted ids: a crafted block's counts (bounded by its length only)
     * must not make this quadratic */
    uint64_t *ids = malloc(((size_t)v->h.nops + 1) * sizeof(*ids));
    if (!ids)
        return 0;
    for (uint32_t k = 0; k < v->h.nops; k++) {
        struct nsc_hang_op o;
        nsc_hang_op_at(v, k, &o);
        ids[k] = o.id;
    }
    qsort(ids, v->h.nops, sizeof(*ids), cmp_u64);
    int rc = 0;
    for (uint32_t q = 0; q < v->h.nproxies && !rc; q++) {
        struct nsc_hang_proxy hp;
        nsc_hang_proxy_at(v, q, &hp);
        if (!v->h.nops || !bsearch(&hp.op_id, ids, v->h.nops, sizeof(*ids), cmp_u64)) {
            *why = "hang block: a ProxyOp of an operation the block does not hold";
            rc = -1;
        }
    }
    free(ids);
    return rc;
}

size_t nsc_hang_encode_suspects(unsigned char *buf, size_t hang_len,
                                const struct nsc_hang_suspect *s, uint32_t n) {
    struct nsc_hang_header hh;
    memcpy(&hh, buf, sizeof(hh));
    hh.nsuspects = n;
    hh.suspect_size = n ? (uint16_t)sizeof(*s) : 0;
    memcpy(buf, &hh, sizeof(hh));
    if (n)
        memcpy(buf + hang_len, s, n * sizeof(*s));
    return hang_len + n * sizeof(*s);
}

int nsc_hang_decode(const void *data, size_t len, struct nsc_hang_view *v, const char **why) {
    memset(v, 0, sizeof(*v));
    if (len < sizeof(v->h)) {
        *why = "hang block too short";
        return -1;
    }
    memcpy(&v->h, data, sizeof(v->h));
    const struct nsc_hang_header *h = &v->h;
    if (h->header_size < sizeof(v->h) || h->comm_size < sizeof(struct nsc_hang_comm) ||
        h->op_size < sizeof(struct nsc_hang_op) || h->proxy_size < sizeof(struct nsc_hang_proxy)) {
        *why = "hang block: header or entry sizes smaller than version 3's";
        return -1;
    }
    /* 64-bit sums of 32-bit products: no overflow, whatever the counts say */
    uint64_t need = (uint64_t)h->header_size + (uint64_t)h->ncomms * h->comm_size +
                    (uint64_t)h->nops * h->op_size + (uint64_t)h->nproxies * h->proxy_size;
    if (need > len) {
        *why = "hang block shorter than its counts";
        return -1;
    }
    /* The suspects (after the three arrays; readers before them stop
     * there): a block that announces some must hold them whole. */
    if (h->nsuspects && h->suspect_size < sizeof(struct nsc_hang_suspect)) {
        *why = "hang block: suspect entry size smaller than its first version's";
        return -1;
    }
    uint64_t whole = need + (uint64_t)h->nsuspects * h->suspect_size;
    if (whole > len) {
        *why = "hang block shorter than its suspects";
        return -1;
    }
    /* The block is the header, its three arrays and its suspects, nothing
     * else (a later version grows entries, whose sizes the header gives):
     * more bytes than the counts explain are counts that were damaged
     * downwards. */
    if (whole < len) {
        *why = "hang block longer than its counts";
        return -1;
    }
    const unsigned char *p = (const unsigned char *)data + h->header_size;
    v->comms = p;
    v->ops = v->comms + (size_t)h->ncomms * h->comm_size;
    v->proxies = v->ops + (size_t)h->nops * h->op_size;
    if (h->nsuspects)
        v->suspects = v->proxies + (size_t)h->nproxies * h->proxy_size;
    return hang_entries_damage(v, why);
}

void nsc_hang_comm_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_comm *out) {
    memcpy(out, v->comms + (size_t)k * v->h.comm_size, sizeof(*out));
    out->enq_func[sizeof(out->enq_func) - 1] = 0;
    out->done_func[sizeof(out->done_func) - 1] = 0;
}

void nsc_hang_op_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_op *out) {
    memcpy(out, v->ops + (size_t)k * v->h.op_size, sizeof(*out));
    out->func[sizeof(out->func) - 1] = 0;
}

void nsc_hang_proxy_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_proxy *out) {
    memcpy(out, v->proxies + (size_t)k * v->h.proxy_size, sizeof(*out));
}

void nsc_hang_suspect_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_suspect *out) {
    memcpy(out, v->suspects + (size_t)k * v->h.suspect_size, sizeof(*out));
    out->func[sizeof(out->func) - 1] = 0;
}
