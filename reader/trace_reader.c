// SPDX-License-Identifier: Apache-2.0
/* trace_reader.c - block iteration, validation and resynchronisation. */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static int fail(struct nsc_reader *r, enum nsc_result code, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct nsc_reader *r, enum nsc_result code, uint64_t off, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(r->err, sizeof(r->err), "%s: offset %llu: %s: %s", r->path, (unsigned long long)off,
             nsc_result_str(code), msg);
    r->last = code;
    r->errors++;
    return -1;
}

static enum nsc_result check_header(struct nsc_reader *r) {
    struct nsc_file_header fh;
    if (fread(&fh, 1, sizeof(fh), r->f) != sizeof(fh) || memcmp(fh.magic, NSC_FILE_MAGIC, 8) != 0) {
        snprintf(r->err, sizeof(r->err),
                 "%s: offset 0: %s: expected the 8-byte magic \"%s\" of an ncclscope trace",
                 r->path, nsc_result_str(NSC_E_NOT_TRACE), NSC_FILE_MAGIC);
        return NSC_E_NOT_TRACE;
    }
    if (fh.format_version < NSC_FORMAT_VERSION_MIN || fh.format_version > NSC_FORMAT_VERSION ||
        fh.header_size < sizeof(fh) ||
        fh.header_size > 4096) {
        snprintf(r->err, sizeof(r->err),
                 "%s: offset 8: %s: format version %u (this reader knows versions 1 to %u); "
                 "use a newer ncclscope",
                 r->path, nsc_result_str(NSC_E_VERSION), fh.format_version, NSC_FORMAT_VERSION);
        return NSC_E_VERSION;
    }
    r->version = fh.format_version;
    r->offset = fh.header_size;
    if (fseeko(r->f, (off_t)r->offset, SEEK_SET) != 0)
        return NSC_E_IO;
    return NSC_OK;
}

static enum nsc_result finish_open(struct nsc_reader *r) {
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        snprintf(r->err, sizeof(r->err), "%s: %s", r->path, nsc_result_str(NSC_E_NOMEM));
        fclose(r->f);
        r->f = NULL;
        return NSC_E_NOMEM;
    }
    if (fseeko(r->f, 0, SEEK_END) == 0)
        r->size = (uint64_t)ftello(r->f);
    rewind(r->f);
    enum nsc_result rc = check_header(r);
    if (rc != NSC_OK) {
        ZSTD_freeDCtx(r->dctx);
        fclose(r->f);
        r->dctx = NULL;
        r->f = NULL;
    }
    return rc;
}

const char *nsc_file_kind(mode_t mode) {
    return S_ISREG(mode)    ? "a regular file"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

enum nsc_result nsc_reader_open(struct nsc_reader *r, const char *path) {
    memset(r, 0, sizeof(*r));
    r->path = path;
    /* Non-blocking, so that opening a FIFO nobody writes to returns at
     * once; what is not a regular file is refused before any read (a FIFO
     * or a device would block, or never end). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(r->err, sizeof(r->err), "%s: %s: %s", path, nsc_result_str(NSC_E_IO),
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return NSC_E_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(r->err, sizeof(r->err), "%s: %s: expected a trace file, found %s", path,
                 nsc_result_str(NSC_E_IO), nsc_file_kind(st.st_mode));
        close(fd);
        return NSC_E_IO;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    r->f = fdopen(fd, "rb");
    if (!r->f) {
        snprintf(r->err, sizeof(r->err), "%s: %s: %s", path, nsc_result_str(NSC_E_IO),
                 strerror(errno));
        close(fd);
        return NSC_E_IO;
    }
    return finish_open(r);
}

enum nsc_result nsc_reader_open_memory(struct nsc_reader *r, const void *data, size_t len,
                                       const char *name) {
    memset(r, 0, sizeof(*r));
    r->path = name;
    r->f = fmemopen((void *)(uintptr_t)data, len ? len : 1, "rb");
    if (!r->f)
        return NSC_E_NOMEM;
    if (len == 0) {
        fclose(r->f);
        r->f = NULL;
        snprintf(r->err, sizeof(r->err), "%s: offset 0: %s: empty file", name,
                 nsc_result_str(NSC_E_NOT_TRACE));
        return NSC_E_NOT_TRACE;
    }
    return finish_open(r);
}

void nsc_reader_close(struct nsc_reader *r) {
    if (r->f)
        fclose(r->f);
    ZSTD_freeDCtx(r->dctx);
    free(r->stored);
    free(r->raw);
    memset(r, 0, sizeof(*r));
}

static int grow(unsigned char **p, size_t *cap, size_t need) {
    if (*cap >= need)
        return 0;
    size_t n = need < 65536 ? 65536 : need;
    unsigned char *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int header_ok(const struct nsc_block_header *h) {
    return h->magic == NSC_BLOCK_MAGIC && h->check == nsc_header_check(h) && h->type >= 1 &&
           h->type <= NSC_BLK_TYPE_MAX && h->raw_len <= NSC_BLOCK_MAX_RAW &&
           h->stored_len <= NSC_BLOCK_MAX_RAW + 1024 &&
           (h->flags == 0 || h->flags == NSC_BLK_F_ZSTD || h->flags == NSC_BLK_F_SUM);
}

/* Scans forward from `from` for the next plausible block header. Returns its
 * offset, or r->size when there is none. */
static uint64_t resync(struct nsc_reader *r, uint64_t from) {
    unsigned char win[65536 + sizeof(struct nsc_block_header)];
    uint64_t pos = from;
    while (pos + sizeof(struct nsc_block_header) <= r->size) {
        if (fseeko(r->f, (off_t)pos, SEEK_SET) != 0)
            break;
        size_t got = fread(win, 1, sizeof(win), r->f);
        if (got < sizeof(struct nsc_block_header))
            break;
        for (size_t i = 0; i + sizeof(struct nsc_block_header) <= got; i++) {
            struct nsc_block_header h;
            memcpy(&h, win + i, sizeof(h));
            if (header_ok(&h))
                return pos + i;
        }
        pos += got - sizeof(struct nsc_block_header) + 1;
    }
    return r->size;
}

int nsc_reader_next(struct nsc_reader *r, struct nsc_block *b) {
    if (r->offset >= r->size)
        return 0;
    uint64_t off = r->offset;
    struct nsc_block_header h;
    if (fseeko(r->f, (off_t)off, SEEK_SET) != 0)
        return fail(r, NSC_E_IO, off, "seek failed"), r->offset = r->size, -1;
    size_t got = fread(&h, 1, sizeof(h), r->f);
    if (got < sizeof(h)) {
        r->offset = r->size;
        return fail(r, NSC_E_TRUNCATED, off,
                    "expected a %zu-byte block header, the file ends after %zu bytes "
                    "(the writer was stopped mid-block)",
                    sizeof(h), got);
    }
    if (!header_ok(&h)) {
        uint64_t next = resync(r, off + 1);
        r->offset = next;
        return fail(r, NSC_E_BAD_BLOCK, off,
                    "expected a block header (magic 0x%08x, valid check), found magic 0x%08x "
                    "type %u; skipped %llu bytes to %s",
                    NSC_BLOCK_MAGIC, h.magic, h.type, (unsigned long long)(next - off),
                    next < r->size ? "the next intact block" : "the end of the file");
    }
    if (off + sizeof(h) + h.stored_len > r->size) {
        r->offset = r->size;
        return fail(r, NSC_E_TRUNCATED, off,
                    "block %u (type %u) announces %u payload bytes, only %llu remain "
                    "(the writer was stopped mid-block)",
                    h.seq, h.type, h.stored_len,
                    (unsigned long long)(r->size - off - sizeof(h)));
    }
    r->offset = off + sizeof(h) + h.stored_len;
    if (grow(&r->stored, &r->stored_cap, h.stored_len + 1) != 0 ||
        grow(&r->raw, &r->raw_cap, (size_t)h.raw_len + 1) != 0)
        return fail(r, NSC_E_NOMEM, off, "block of %u bytes", h.raw_len);
    if (fread(r->stored, 1, h.stored_len, r->f) != h.stored_len)
        return fail(r, NSC_E_IO, off, "read failed");
    const void *data = r->stored;
    size_t len = h.stored_len;
    if (h.flags & NSC_BLK_F_ZSTD) {
        size_t n = ZSTD_decompressDCtx(r->dctx, r->raw, h.raw_len, r->stored, h.stored_len);
        if (ZSTD_isError(n))
            return fail(r, NSC_E_DECOMPRESS, off, "block %u (type %u): zstd says \"%s\"", h.seq,
                        h.type, ZSTD_getErrorName(n));
        if (n != h.raw_len)
            return fail(r, NSC_E_DECOMPRESS, off,
                        "block %u (type %u): expected %u bytes after decompression, got %zu",
                        h.seq, h.type, h.raw_len, n);
        data = r->raw;
        len = n;
    } else if (h.flags & NSC_BLK_F_SUM) {
        if ((uint64_t)h.raw_len + NSC_BLK_SUM_BYTES != h.stored_len)
            return fail(r, NSC_E_BAD_BLOCK, off,
                        "block %u (type %u): a checksummed block stores raw + %u bytes, "
                        "found raw %u, stored %u",
                        h.seq, h.type, NSC_BLK_SUM_BYTES, h.raw_len, h.stored_len);
        uint32_t want;
        memcpy(&want, r->stored + h.raw_len, sizeof(want));
        uint32_t got_sum = nsc_payload_check(NSC_PAYLOAD_CHECK_SEED, r->stored, h.raw_len);
        if (got_sum != want) {
            /* the block was there, only its payload is damaged: one report,
             * not a second one for the sequence gap it would leave */
            r->next_seq = h.seq + 1;
            return fail(r, NSC_E_CHECKSUM, off,
                        "block %u (type %u): payload checksum 0x%08x, the block says 0x%08x "
                        "(FNV-1a of its %u bytes); block skipped",
                        h.seq, h.type, got_sum, want, h.raw_len);
        }
        len = h.raw_len;
    } else if (h.raw_len != h.stored_len) {
        return fail(r, NSC_E_BAD_BLOCK, off, "uncompressed block with raw %u != stored %u",
                    h.raw_len, h.stored_len);
    }
    int gap = h.seq != r->next_seq;
    uint32_t expected = r->next_seq;
    r->next_seq = h.seq + 1;
    b->type = h.type;
    b->seq = h.seq;
    b->offset = off;
    b->data = data;
    b->len = len;
    if (gap) /* reported, but the block is still handed out */
        fail(r, NSC_E_SEQUENCE, off, "expected block %u, found block %u (%d blocks lost)",
             expected, h.seq, (int)(h.seq - expected));
    return 1;
}
