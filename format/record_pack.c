// SPDX-License-Identifier: Apache-2.0
/* record_pack.c - decoding packed records (the encoder is inline in the
 * header: the flusher runs it once per record). */
#include "record_pack.h"

static int get_varint(const unsigned char **pp, const unsigned char *end, uint64_t *v) {
    const unsigned char *p = *pp;
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -1;
        unsigned char b = *p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *v = x;
            return 0;
        }
    }
    return -1; /* more than 10 bytes: not ours */
}

int nsc_unpack_record(struct nsc_pack_state *s, const unsigned char **pp, const unsigned char *end,
                      struct nsc_rec *r) {
    const unsigned char *p = *pp;
    if (p >= end)
        return -1;
    unsigned tag = *p++;
    struct nsc_pack_ctx *c = nsc_pack_context(s, tag);
    uint64_t flags = c->flags, aux = c->aux, dt, did;
    if ((tag & 0x80) && (get_varint(&p, end, &flags) || get_varint(&p, end, &aux) ||
                         flags > 0xffff || aux > 0xffffffffu))
        return -1;
    if (get_varint(&p, end, &dt) || get_varint(&p, end, &did) || p >= end)
        return -1;
    unsigned m = *p++;
    if (m & ~0x1fu)
        return -1;
    uint64_t w[5];
    for (unsigned i = 0; i < 5; i++) {
        uint64_t d = 0;
        if ((m & (1u << i)) && get_varint(&p, end, &d))
            return -1;
        w[i] = c->w[i] + (uint64_t)nsc_unzigzag(d);
    }
    memcpy(c->w, w, sizeof(w));
    c->flags = (uint16_t)flags;
    c->aux = (uint32_t)aux;
    memset(r, 0, sizeof(*r));
    /* 3 bits of kind: 0 (never written before v3) is MARK (event type 15)
     * or PY (kind 8, event types 0..4) */
    r->h.kind = (uint8_t)((tag & 7) ? (tag & 7)
                          : ((tag >> 3) & 15) == NSC_MARK_ETYPE ? NSC_REC_MARK : NSC_REC_PY);
    r->h.etype = (uint8_t)((tag >> 3) & 15);
    r->h.flags = (uint16_t)flags;
    r->h.aux = (uint32_t)aux;
    r->h.ticks = s->ticks + (uint64_t)nsc_unzigzag(dt);
    s->ticks = r->h.ticks;
    if (r->h.kind == NSC_REC_START) {
        r->h.id = s->last_start + 1 + (uint64_t)nsc_unzigzag(did);
        s->last_start = r->h.id;
    } else {
        r->h.id = s->last_start - (uint64_t)nsc_unzigzag(did);
    }
    if (r->h.kind == NSC_REC_START && w[0])
        w[0] = r->h.id - (uint64_t)nsc_unzigzag(w[0] - 1);
    memcpy(&r->u, w, sizeof(w));
    *pp = p;
    return 0;
}
