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
    if (!w->buf || !w->cctx) {
        snprintf(err, errlen, "out of memory for the trace writer");
        nsc_writer_close(w);
        return -1;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, zstd_level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
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

int nsc_writer_block(struct nsc_writer *w, enum nsc_block_type type, const void *raw, size_t len,
                     int compress) {
    if (w->failed || w->fd < 0)
        return -1;
    struct nsc_block_header h;
    unsigned char *payload = w->buf + sizeof(h);
    size_t stored;
    if (compress) {
        stored = ZSTD_compress2(w->cctx, payload, w->buf_cap - sizeof(h), raw, len);
        if (ZSTD_isError(stored)) {
            w->failed = 1;
            return -1;
        }
    } else {
        if (len > w->buf_cap - sizeof(h)) {
            w->failed = 1;
            return -1;
        }
        memcpy(payload, raw, len);
        stored = len;
    }
    h.magic = NSC_BLOCK_MAGIC;
    h.type = (uint16_t)type;
    h.flags = compress ? NSC_BLK_F_ZSTD : 0;
    h.stored_len = (uint32_t)stored;
    h.raw_len = (uint32_t)len;
    h.seq = w->seq++;
    h.check = nsc_header_check(&h);
    memcpy(w->buf, &h, sizeof(h));
    if (write_all(w->fd, w->buf, sizeof(h) + stored) != 0) {
        w->failed = 1;
        return -1;
    }
    w->bytes += sizeof(h) + stored;
    return 0;
}

void nsc_writer_close(struct nsc_writer *w) {
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    ZSTD_freeCCtx(w->cctx);
    w->cctx = NULL;
    free(w->buf);
    w->buf = NULL;
}
