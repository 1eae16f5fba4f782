// SPDX-License-Identifier: Apache-2.0
/*
 * trace_writer.h - the trace file: creating it and appending blocks
 * (docs/format.md).
 *
 * Used by the compressor whose turn it is only (one writer per file, no
 * locking): no callback, init, finalize or exit path ever waits on these
 * calls. The file operations themselves are made by the writer process
 * (writer_proc.h) when the session has one.
 * Each block is built in memory and handed to the kernel with one write(2),
 * so a crash leaves complete blocks plus at most one torn block at the end.
 * A failed write (disk full, I/O error) is cut back off the file with
 * ftruncate, so the file stays a sequence of whole blocks and later blocks
 * append cleanly once writing works again; the caller counts what was lost.
 */
#ifndef NSC_TRACE_WRITER_H
#define NSC_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "trace_format.h"
#include "writer_proc.h"

#define NSC_WRITER_SMALL_MAX (256u << 10)

struct nsc_writer {
    int fd;              /* -1 until opened */
    uint32_t seq;        /* next block's sequence number */
    uint64_t bytes;      /* bytes in the file (all whole blocks) */
    int last_errno;      /* errno of the last failure, 0 after a success */
    ZSTD_CCtx *small_cctx; /* small whole blocks (strings, comms, stats) */
    unsigned char *small_buf;
    size_t small_cap;
    int level;
    char dir[1024];
    char stem[160];      /* <host>-<pid> */
    unsigned first_index; /* first number tried: the process's session count */
    char path[1280];
    /* rotation (NCCLSCOPE_MAX_MB, plugin/segments.h): files are named
     * <stem>[-N].<segment, 6 digits>.nsc; the flusher bumps `segment` and
     * opens again to start the next one */
    int rotate;
    unsigned segment;
    /* where the file operations go: the session's writer process, or NULL
     * (this process; writer_proc.h) */
    struct nsc_wchan *io;
};

/* Remembers where the file goes; touches no disk. */
void nsc_writer_init(struct nsc_writer *w, const char *dir, const char *host, int pid,
                     unsigned session_index, int zstd_level);

/* Creates the directory (0750 before umask) and a new file in it (0640
 * before umask; <stem>.nsc for a process's first session, <stem>-N.nsc for
 * its session N, or the next free N when taken: no cap; with rotation
 * <stem>[-N].SSSSSS.nsc, segment S, the next free S for a later segment),
 * and writes the file header and the SESSION block. Returns 0 or -1 with
 * errno in w->last_errno. */
int nsc_writer_open(struct nsc_writer *w, const struct nsc_session *session);

/* Rewrites the open file's SESSION payload in place (stored raw, at
 * NSC_SESSION_PAYLOAD_OFF): a session the Python package opened learns
 * NCCL's API version at NCCL's first init (trace_format.h). One pwrite(2);
 * the file's length and append position do not change. Returns 0 or -1. */
int nsc_writer_rewrite_session(struct nsc_writer *w, const struct nsc_session *session);

/* Writes one small block, compressed when compress is set. Returns 0 or -1. */
int nsc_writer_block(struct nsc_writer *w, enum nsc_block_type type, const void *raw, size_t len,
                     int compress);

/* Writes a block whose payload is already at buf + sizeof(struct
 * nsc_block_header) (stored bytes; raw_len before compression; flags says
 * whether it is a zstd frame). Returns 0 or -1. */
int nsc_writer_prepared(struct nsc_writer *w, unsigned char *buf, enum nsc_block_type type,
                        uint16_t flags, size_t stored, size_t raw_len);

void nsc_writer_close(struct nsc_writer *w);

#endif /* NSC_TRACE_WRITER_H */
