// SPDX-License-Identifier: Apache-2.0
/*
 * decoded.h - what the converter reads of a decoder, through the reader's
 * accessors (reader/trace_decode.h), with zeros where the file has none
 * yet (no SESSION block: a damaged file; no STATS block: nothing counted).
 */
#ifndef NSC_DECODED_H
#define NSC_DECODED_H

#include "trace_decode.h"

static inline const struct nsc_session *nsc_dec_session(const struct nsc_decoder *d) {
    static const struct nsc_session none;
    const struct nsc_session *s = nsc_decoder_session(d);
    return s ? s : &none;
}

static inline const struct nsc_losses *nsc_dec_losses(const struct nsc_decoder *d) {
    static const struct nsc_losses none;
    const struct nsc_losses *l = nsc_decoder_losses(d);
    return l ? l : &none;
}

static inline const struct nsc_stats_header *nsc_dec_stats(const struct nsc_decoder *d) {
    static const struct nsc_stats_header none;
    const struct nsc_stats_header *h = nsc_decoder_stats(d);
    return h ? h : &none;
}

static inline uint64_t nsc_dec_unnamed(const struct nsc_decoder *d) {
    struct nsc_decode_counts c;
    nsc_decoder_counts(d, &c);
    return c.unnamed_events;
}

/* The thread's OS tid and name (index = a record's thread), or 0 / "". */
static inline uint32_t nsc_dec_tid(const struct nsc_decoder *d, uint32_t thread, int *known) {
    const struct nsc_dthread *t = thread < nsc_decoder_nthreads(d) ? nsc_decoder_thread(d, thread)
                                                                   : NULL;
    *known = t && t->known;
    return t ? t->tid : 0;
}

static inline const char *nsc_dec_thread_name(const struct nsc_decoder *d, uint32_t thread) {
    const struct nsc_dthread *t = thread < nsc_decoder_nthreads(d) ? nsc_decoder_thread(d, thread)
                                                                   : NULL;
    return t ? t->name : "";
}

/* A file's SESSION block without reading the rest (its first block), or -1. */
int nsc_dec_read_session(const char *path, struct nsc_session *s);

#endif /* NSC_DECODED_H */
