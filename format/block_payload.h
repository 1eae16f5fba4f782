/*
 * block_payload.h - the payloads of the small blocks (docs/format.md):
 * each encoder beside its decoder, so the writer (plugin/flusher.c) and the
 * readers (reader/trace_decode.c) share one definition of the bytes.
 *
 *   STRINGS  (u32 id, u16 len, len bytes)*      ids 1..65535, no terminator
 *   COMMS    struct nsc_comm_info[]             128 bytes each
 *   STATS    struct nsc_stats_header (header_size bytes), struct nsc_thread_stats[]
 *
 * Pure functions on caller-owned buffers: no allocation, no I/O.
 */
#ifndef NSC_BLOCK_PAYLOAD_H
#define NSC_BLOCK_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* ---- STRINGS ---- */

/* Appends entries *id, *id + 1, ... below upto to buf[0..cap) while they
 * fit; text(id) gives each string (NULL: empty). Id 0 (NULL strings) is
 * skipped. Advances *id past what was written and returns the bytes used. */
size_t nsc_strings_encode(unsigned char *buf, size_t cap, uint32_t *id, uint32_t upto,
                          const char *(*text)(uint32_t id));

/* Reads the entry at *p (p < end). Returns 1 with id, text (not
 * terminated) and length and *p advanced; 0 when the entry is cut short or
 * its id is out of range (the caller reports the block as damaged). */
int nsc_strings_next(const unsigned char **p, const unsigned char *end, uint32_t *id,
                     const char **text, uint16_t *len);

/* ---- STATS ---- */

/* Bytes of a STATS payload for n threads. */
static inline size_t nsc_stats_size(uint32_t nthreads) {
    return sizeof(struct nsc_stats_header) + (size_t)nthreads * sizeof(struct nsc_thread_stats);
}

/* Reads a STATS payload (v1/v2: 40-byte header; v3: header_size). Returns 0
 * with *h filled (fields a shorter header lacks are 0) and *threads pointing
 * at h->nthreads entries inside data (possibly unaligned: memcpy them), or
 * -1 with a reason in *why. */
int nsc_stats_decode(const void *data, size_t len, struct nsc_stats_header *h,
                     const unsigned char **threads, const char **why);

#endif /* NSC_BLOCK_PAYLOAD_H */
