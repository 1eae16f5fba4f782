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

struct nsc_writer {
    int fd;
    int failed;          /* a write failed: stop writing, keep counting */
    uint32_t seq;
    int level;
    ZSTD_CCtx *cctx;
    unsigned char *buf;  /* block header + compressed payload */
    size_t buf_cap;
    uint64_t bytes;      /* bytes written */
    char path[1200];
};

/* Creates <dir>/<host>-<pid>.nsc (or -1, -2, ... if taken) and writes the
 * file header. max_raw bounds the payloads passed to nsc_writer_block.
 * Returns 0, or -1 with a message in err. */
int nsc_writer_open(struct nsc_writer *w, const char *dir, const char *host, int pid,
                    int zstd_level, size_t max_raw, char *err, size_t errlen);

/* Writes one block; compresses the payload when compress is set. Returns 0
 * or -1 (the writer is then marked failed). */
int nsc_writer_block(struct nsc_writer *w, enum nsc_block_type type, const void *raw, size_t len,
                     int compress);

void nsc_writer_close(struct nsc_writer *w);

#endif /* NSC_TRACE_WRITER_H */
