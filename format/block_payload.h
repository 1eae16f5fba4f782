// SPDX-License-Identifier: Apache-2.0
/*
 * block_payload.h - the payloads of the small blocks (docs/format.md):
 * each encoder beside its decoder, so the writer (plugin/engine/) and the
 * readers (reader/trace_decode.c) share one definition of the bytes.
 *
 *   STRINGS  (u32 id, u16 len, len bytes)*      ids 1..65535, no terminator
 *   COMMS    struct nsc_comm_info[]             128 bytes each
 *   STATS    struct nsc_stats_header (header_size bytes), struct nsc_thread_stats[]
 *   HANG     struct nsc_hang_header, nsc_hang_comm[], nsc_hang_op[], nsc_hang_proxy[]
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

/* ---- HANG ---- */

/* Bytes of a HANG payload with these counts (a block of the suspect level
 * adds nsc_hang_suspects_size). */
static inline size_t nsc_hang_size(uint32_t ncomms, uint32_t nops, uint32_t nproxies) {
    return sizeof(struct nsc_hang_header) + (size_t)ncomms * sizeof(struct nsc_hang_comm) +
           (size_t)nops * sizeof(struct nsc_hang_op) + (size_t)nproxies * sizeof(struct nsc_hang_proxy);
}

/* Writes a HANG payload into buf (nsc_hang_size bytes): h (its counts and
 * sizes are set here from the arrays), then the arrays. Returns the bytes
 * written. */
size_t nsc_hang_encode(unsigned char *buf, const struct nsc_hang_header *h,
                       const struct nsc_hang_comm *comms, uint32_t ncomms,
                       const struct nsc_hang_op *ops, uint32_t nops,
                       const struct nsc_hang_proxy *proxies, uint32_t nproxies);

/* A suspect block: the HANG payload (nsc_hang_encode, nsc_hang_size bytes)
 * followed by the suspects, written at buf + its size; the header's
 * nsuspects and suspect_size are set here. Returns the whole size. */
static inline size_t nsc_hang_suspects_size(uint32_t nsuspects) {
    return (size_t)nsuspects * sizeof(struct nsc_hang_suspect);
}
size_t nsc_hang_encode_suspects(unsigned char *buf, size_t hang_len,
                                const struct nsc_hang_suspect *s, uint32_t n);
/* A decoded HANG payload: the header, and where each array's entry k
 * starts (entry sizes may exceed this reader's structs: copy with
 * nsc_hang_comm_at & co., which fill the fields this reader knows). */
struct nsc_hang_view {
    struct nsc_hang_header h;
    const unsigned char *comms, *ops, *proxies;
    const unsigned char *suspects; /* h.nsuspects entries of h.suspect_size (0: none) */
};
/* Returns 0, or -1 with a reason in *why (short block, sizes that do not
 * add up, entries smaller than version 3's, entries that contradict each
 * other: a ProxyOp of an operation not in the block, channels stopped that
 * never started, an operation of no known type). */
int nsc_hang_decode(const void *data, size_t len, struct nsc_hang_view *v, const char **why);
void nsc_hang_comm_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_comm *out);
void nsc_hang_op_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_op *out);
void nsc_hang_proxy_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_proxy *out);
void nsc_hang_suspect_at(const struct nsc_hang_view *v, uint32_t k, struct nsc_hang_suspect *out);

#endif /* NSC_BLOCK_PAYLOAD_H */
