/* trace_writer.c - block encoding and file output. */
#include "trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_p(const char *dir) {
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return (mkdir(tmp, 0777) != 0 && errno != EEXIST) ? -1 : 0;
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int nsc_writer_open(struct nsc_writer *w, const char *dir, const char *host, int pid,
                    int zstd_level, size_t max_raw, char *err, size_t errlen) {
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    w->level = zstd_level;
    if (mkdir_p(dir) != 0) {
        snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(errno));
        return -1;
    }
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(w->path, sizeof(w->path), "%s/%s-%d%s", dir, host, pid, NSC_FILE_SUFFIX);
        else
            snprintf(w->path, sizeof(w->path), "%s/%s-%d-%d%s", dir, host, pid, n,
                     NSC_FILE_SUFFIX);
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (w->fd >= 0 || errno != EEXIST)
            break;
    }
    if (w->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", w->path, strerror(errno));
        return -1;
    }
    w->buf_cap = sizeof(struct nsc_block_header) + ZSTD_compressBound(max_raw);
    w->buf = malloc(w->buf_cap);
    w->cctx = ZSTD_createCCtx();
    w->small_cap = sizeof(struct nsc_block_header) + ZSTD_compressBound(NSC_WRITER_SMALL_MAX);
    w->small_buf = malloc(w->small_cap);
    w->small_cctx = ZSTD_createCCtx();
    if (!w->buf || !w->cctx || !w->small_buf || !w->small_cctx) {
        snprintf(err, errlen, "out of memory for the trace writer");
        nsc_writer_close(w);
        return -1;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, zstd_level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(w->small_cctx, ZSTD_c_compressionLevel, zstd_level);
    ZSTD_CCtx_setParameter(w->small_cctx, ZSTD_c_checksumFlag, 1);
    struct nsc_file_header fh;
    memcpy(fh.magic, NSC_FILE_MAGIC, 8);
    fh.format_version = NSC_FORMAT_VERSION;
    fh.header_size = sizeof(fh);
    if (write_all(w->fd, &fh, sizeof(fh)) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
        nsc_writer_close(w);
        return -1;
    }
    w->bytes = sizeof(fh);
    return 0;
}

/* Header in front of the payload already at buf + header, one write. */
static int write_block(struct nsc_writer *w, unsigned char *buf, uint16_t type, uint16_t flags,
                       size_t stored, size_t raw_len) {
    struct nsc_block_header h;
    h.magic = NSC_BLOCK_MAGIC;
    h.type = type;
    h.flags = flags;
    h.stored_len = (uint32_t)stored;
    h.raw_len = (uint32_t)raw_len;
    h.seq = w->seq++;
    h.check = nsc_header_check(&h);
    memcpy(buf, &h, sizeof(h));
    if (write_all(w->fd, buf, sizeof(h) + stored) != 0) {
        w->failed = 1;
        return -1;
    }
    w->bytes += sizeof(h) + stored;
    return 0;
}

void nsc_writer_stream_begin(struct nsc_writer *w, enum nsc_block_type type, int level) {
    /* Drops any half-built frame; parameters (checksum) stay. The level may
     * change between frames. */
    ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
    if (level != w->level && !ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level)))
        w->level = level;
    w->streaming = 1;
    w->stream_type = (uint16_t)type;
    w->stream_out = 0;
    w->stream_raw = 0;
}

static int stream_run(struct nsc_writer *w, const void *raw, size_t len, ZSTD_EndDirective mode) {
    ZSTD_outBuffer out = {w->buf + sizeof(struct nsc_block_header),
                          w->buf_cap - sizeof(struct nsc_block_header), w->stream_out};
    ZSTD_inBuffer in = {raw, len, 0};
    for (;;) {
        size_t left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
        if (ZSTD_isError(left) || (out.pos == out.size && left != 0)) {
            w->failed = 1;
            return -1;
        }
        if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0)
            break;
    }
    w->stream_out = out.pos;
    w->stream_raw += len;
    return 0;
}

int nsc_writer_stream_feed(struct nsc_writer *w, const void *raw, size_t len) {
    if (w->failed || w->fd < 0 || !w->streaming)
        return -1;
    return stream_run(w, raw, len, ZSTD_e_continue);
}

int nsc_writer_stream_end(struct nsc_writer *w) {
    if (w->failed || w->fd < 0 || !w->streaming)
        return -1;
    w->streaming = 0;
    if (stream_run(w, "", 0, ZSTD_e_end) != 0)
        return -1;
    return write_block(w, w->buf, w->stream_type, NSC_BLK_F_ZSTD, w->stream_out, w->stream_raw);
}

int nsc_writer_block(struct nsc_writer *w, enum nsc_block_type type, const void *raw, size_t len,
                     int compress) {
    if (w->failed || w->fd < 0)
        return -1;
    struct nsc_block_header h;
    unsigned char *payload = w->small_buf + sizeof(h);
    size_t stored;
    if (len > NSC_WRITER_SMALL_MAX) {
        w->failed = 1;
        return -1;
    }
    if (compress) {
        stored = ZSTD_compress2(w->small_cctx, payload, w->small_cap - sizeof(h), raw, len);
        if (ZSTD_isError(stored)) {
            w->failed = 1;
            return -1;
        }
    } else {
        memcpy(payload, raw, len);
        stored = len;
    }
    return write_block(w, w->small_buf, (uint16_t)type, compress ? NSC_BLK_F_ZSTD : 0, stored, len);
}

void nsc_writer_close(struct nsc_writer *w) {
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    ZSTD_freeCCtx(w->cctx);
    w->cctx = NULL;
    free(w->buf);
    w->buf = NULL;
    ZSTD_freeCCtx(w->small_cctx);
    w->small_cctx = NULL;
    free(w->small_buf);
    w->small_buf = NULL;
}
