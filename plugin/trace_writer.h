/*
 * trace_writer.h - appends blocks to a trace file (docs/format.md).
 *
 * Used by the flusher thread only (one writer per file, no locking).
 * Each block is built in memory and handed to the kernel with one write(2),
 * so a crash leaves complete blocks plus at most one torn block at the end.
 */
#ifndef NSC_TRACE_WRITER_H
#define NSC_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "trace_format.h"

#define NSC_WRITER_SMALL_MAX (256u << 10)

struct nsc_writer {
    int fd;
    int failed;          /* a write failed: stop writing, keep counting */
    uint32_t seq;
    int level;           /* zstd level of the streamed block now */
    ZSTD_CCtx *cctx;     /* the streamed (chunk) block */
    unsigned char *buf;  /* its header + compressed payload */
    size_t buf_cap;
    ZSTD_CCtx *small_cctx; /* whole blocks (strings, comms, stats...), which are
                            * written while a chunk is still being streamed */
    unsigned char *small_buf;
    size_t small_cap;
    uint64_t bytes;      /* bytes written */
    /* the streamed block under construction (nsc_writer_stream_*) */
    int streaming;
    uint16_t stream_type;
    size_t stream_out;   /* compressed bytes so far, after the header */
    size_t stream_raw;   /* raw bytes fed so far */
    char path[1200];
};

/* Creates <dir>/<host>-<pid>.nsc (or -1, -2, ... if taken) and writes the
 * file header. max_raw bounds a streamed block's raw size; whole blocks
 * (nsc_writer_block) may be up to NSC_WRITER_SMALL_MAX.
 * Returns 0, or -1 with a message in err. */
int nsc_writer_open(struct nsc_writer *w, const char *dir, const char *host, int pid,
                    int zstd_level, size_t max_raw, char *err, size_t errlen);

/* Writes one block; compresses the payload when compress is set. Returns 0
 * or -1 (the writer is then marked failed). */
int nsc_writer_block(struct nsc_writer *w, enum nsc_block_type type, const void *raw, size_t len,
                     int compress);

/* A compressed block fed in pieces, so the flusher spreads compression
 * over its drain passes instead of stalling on a whole chunk at once: begin,
 * feed any number of times (total at most max_raw), end writes the block
 * with one write(2). Returns 0 or -1 (the writer is then marked failed). */
void nsc_writer_stream_begin(struct nsc_writer *w, enum nsc_block_type type, int level);
int nsc_writer_stream_feed(struct nsc_writer *w, const void *raw, size_t len);
int nsc_writer_stream_end(struct nsc_writer *w);

void nsc_writer_close(struct nsc_writer *w);

#endif /* NSC_TRACE_WRITER_H */
