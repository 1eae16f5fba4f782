// SPDX-License-Identifier: Apache-2.0
/* trace_writer.c - the trace file (see trace_writer.h). */
#include "trace_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Files 0640 before the umask (directories 0750: writer_proc.c): a
 * permissive umask (000) never makes a trace world-writable or
 * world-readable. */
#define FILE_MODE 0640

/* Where the calls go: the session's writer process, or this process. */
static struct nsc_wchan in_process = {.sock = -1};

static struct nsc_wchan *chan(const struct nsc_writer *w) { return w->io ? w->io : &in_process; }

void nsc_writer_init(struct nsc_writer *w, const char *dir, const char *host, int pid,
                     unsigned session_index, int zstd_level) {
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    w->level = zstd_level;
    snprintf(w->dir, sizeof(w->dir), "%s", dir);
    snprintf(w->stem, sizeof(w->stem), "%s-%d", host, pid);
    w->first_index = session_index;
}

/* Appends bytes as one write; on failure cuts the file back to its last
 * whole block so that later blocks append after valid data. */
static int append(struct nsc_writer *w, const void *p, size_t n) {
    /* the writer cuts a failed append back itself */
    if (nsc_wch_append(chan(w), w->fd, w->bytes, p, n) == 0) {
        w->bytes += n;
        w->last_errno = 0;
        return 0;
    }
    w->last_errno = errno ? errno : EIO;
    return -1;
}

int nsc_writer_open(struct nsc_writer *w, const struct nsc_session *session) {
    if (w->fd >= 0)
        return 0;
    if (!w->small_cctx) {
        w->small_cap = sizeof(struct nsc_block_header) + ZSTD_compressBound(NSC_WRITER_SMALL_MAX);
        w->small_buf = malloc(w->small_cap);
        w->small_cctx = ZSTD_createCCtx();
        if (!w->small_buf || !w->small_cctx) {
            w->last_errno = ENOMEM;
            return -1;
        }
        ZSTD_CCtx_setParameter(w->small_cctx, ZSTD_c_compressionLevel, w->level);
        ZSTD_CCtx_setParameter(w->small_cctx, ZSTD_c_checksumFlag, 1);
    }
    if (nsc_wch_mkdir(chan(w), w->dir) != 0) {
        w->last_errno = errno;
        return -1;
    }
    /* Never overwrite: a taken name gets the next number, without a cap
     * (a process may run any number of sessions). A later segment keeps the
     * session's number and takes the next free segment number. */
    for (unsigned long n = w->first_index;; n++) {
        char seg[16] = "";
        if (w->rotate)
            snprintf(seg, sizeof(seg), ".%06u", w->segment);
        int len = n == 0 ? snprintf(w->path, sizeof(w->path), "%s/%s%s%s", w->dir, w->stem, seg,
                                    NSC_FILE_SUFFIX)
                         : snprintf(w->path, sizeof(w->path), "%s/%s-%lu%s%s", w->dir, w->stem, n,
                                    seg, NSC_FILE_SUFFIX);
        if (len >= (int)sizeof(w->path)) {
            w->last_errno = ENAMETOOLONG;
            return -1;
        }
        w->fd = nsc_wch_create(chan(w), w->path, FILE_MODE);
        if (w->fd >= 0 && w->rotate)
            w->first_index = (unsigned)n; /* the next segments keep it */
        if (w->fd >= 0 || errno != EEXIST)
            break;
        if (w->rotate && w->segment > 0) { /* a later segment: the next segment number */
            w->segment++;
            n--;
        }
    }
    if (w->fd < 0) {
        w->last_errno = errno;
        return -1;
    }
    struct nsc_file_header fh;
    memcpy(fh.magic, NSC_FILE_MAGIC, 8);
    fh.format_version = NSC_FORMAT_VERSION;
    fh.header_size = sizeof(fh);
    w->bytes = 0;
    w->seq = 0;
    /* SESSION uncompressed, first: nsc_writer_rewrite_session finds it at
     * NSC_SESSION_PAYLOAD_OFF. */
    if (append(w, &fh, sizeof(fh)) != 0 ||
        nsc_writer_block(w, NSC_BLK_SESSION, session, sizeof(*session), 0) != 0) {
        /* A file without its SESSION block is useless: remove it and try
         * again later from scratch. */
        int e = w->last_errno;
        nsc_wch_close(chan(w), w->fd);
        nsc_wch_unlink(chan(w), w->path);
        w->fd = -1;
        w->last_errno = e;
        return -1;
    }
    return 0;
}

int nsc_writer_rewrite_session(struct nsc_writer *w, const struct nsc_session *session) {
    if (w->fd < 0) {
        w->last_errno = EBADF;
        return -1;
    }
    /* through the writer process where there is one: w->fd is its
     * descriptor there, not one of ours */
    if (nsc_wch_pwrite(chan(w), w->fd, NSC_SESSION_PAYLOAD_OFF, session, sizeof(*session)) != 0) {
        w->last_errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

int nsc_writer_prepared(struct nsc_writer *w, unsigned char *buf, enum nsc_block_type type,
                        uint16_t flags, size_t stored, size_t raw_len) {
    if (w->fd < 0) {
        w->last_errno = EBADF;
        return -1;
    }
    struct nsc_block_header h;
    h.magic = NSC_BLOCK_MAGIC;
    h.type = (uint16_t)type;
    h.flags = flags;
    h.stored_len = (uint32_t)stored;
    h.raw_len = (uint32_t)raw_len;
    h.seq = w->seq;
    h.check = nsc_header_check(&h);
    memcpy(buf, &h, sizeof(h));
    if (append(w, buf, sizeof(h) + stored) != 0)
        return -1;
    /* Only a block that reached the file takes a number: a lost block
     * leaves no gap a reader would report as damage (the loss is counted
     * in STATS instead). */
    w->seq++;
    return 0;
}

int nsc_writer_block(struct nsc_writer *w, enum nsc_block_type type, const void *raw, size_t len,
                     int compress) {
    if (w->fd < 0 || !w->small_buf) {
        w->last_errno = EBADF;
        return -1;
    }
    if (len > NSC_WRITER_SMALL_MAX) {
        w->last_errno = EMSGSIZE;
        return -1;
    }
    unsigned char *payload = w->small_buf + sizeof(struct nsc_block_header);
    size_t stored;
    if (compress) {
        stored = ZSTD_compress2(w->small_cctx, payload,
                                w->small_cap - sizeof(struct nsc_block_header), raw, len);
        if (ZSTD_isError(stored)) {
            w->last_errno = ENOMEM;
            return -1;
        }
    } else {
        memcpy(payload, raw, len);
        stored = len;
    }
    return nsc_writer_prepared(w, w->small_buf, type, compress ? NSC_BLK_F_ZSTD : 0, stored, len);
}

void nsc_writer_close(struct nsc_writer *w) {
    if (w->fd >= 0)
        nsc_wch_close(chan(w), w->fd);
    w->fd = -1;
    ZSTD_freeCCtx(w->small_cctx);
    w->small_cctx = NULL;
    free(w->small_buf);
    w->small_buf = NULL;
}
