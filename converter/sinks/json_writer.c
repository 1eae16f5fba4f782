// SPDX-License-Identifier: Apache-2.0
/* json_writer.c - buffered JSON output. */
#include "json_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef NSC_HAVE_ZLIB
#include <zlib.h>
#endif

int jw_open(struct jw *w, FILE *f) {
    memset(w, 0, sizeof(*w));
    w->out.fd = -1;
    w->f = f;
    w->cap = 1 << 20;
    w->buf = malloc(w->cap);
    return w->buf ? 0 : -1;
}

int jw_open_path(struct jw *w, const char *path, const char *const *inputs, int ninputs,
                 char *err, size_t errlen) {
    size_t n = strlen(path);
    int gz = n > 3 && !strcmp(path + n - 3, ".gz");
#ifndef NSC_HAVE_ZLIB
    if (gz) {
        snprintf(err, errlen, "%s: gzip output needs zlib, which this build lacks", path);
        return -1;
    }
#endif
    if (strcmp(path, "-") == 0 && !gz) {
        if (jw_open(w, stdout) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    struct nsc_out out;
    if (nsc_out_open(&out, path, inputs, ninputs, err, errlen) != 0)
        return -1;
    if (jw_open(w, NULL) != 0) {
        close(out.fd);
        nsc_out_finish(&out, 0, NULL, 0);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->out = out;
#ifdef NSC_HAVE_ZLIB
    if (gz) {
        gzFile g = gzdopen(out.fd, "wb1"); /* level 1: 5-10x smaller at a fraction of level 6's time */
        if (g) {
            gzbuffer(g, 1 << 18);
            w->gz = g;
            return 0;
        }
    } else
#endif
    if ((w->f = fdopen(out.fd, "w")) != NULL)
        return 0;
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(out.fd);
    nsc_out_finish(&w->out, 0, NULL, 0);
    free(w->buf);
    w->buf = NULL;
    return -1;
}

int jw_open_mem(struct jw *w) {
    if (jw_open(w, NULL) != 0)
        return -1;
    w->mem = 1;
    return 0;
}

static void failed(struct jw *w) {
    if (!w->error)
        w->err_no = errno ? errno : EIO;
    w->error = 1;
}

/* In memory: make room for n more bytes (0 or -1). */
static int grow(struct jw *w, size_t n) {
    size_t cap = w->cap;
    while (w->len + n > cap)
        cap *= 2;
    if (cap == w->cap)
        return 0;
    char *b = realloc(w->buf, cap);
    if (!b) {
        failed(w);
        return -1;
    }
    w->buf = b;
    w->cap = cap;
    return 0;
}

static int write_out(struct jw *w, const void *p, size_t n) {
    w->bytes += n;
    if (w->error)
        return -1; /* after a failure, nothing more: the output is discarded */
#ifdef NSC_HAVE_ZLIB
    if (w->gz)
        return gzwrite(w->gz, p, (unsigned)n) == (int)n ? 0 : -1;
#endif
    if (!w->f)
        return 0; /* a discarding writer (the output could not be opened) */
    return fwrite(p, 1, n, w->f) == n ? 0 : -1;
}

static void flush(struct jw *w) {
    if (w->mem)
        return; /* the buffer is the output */
    if (w->len && write_out(w, w->buf, w->len) != 0)
        failed(w);
    w->len = 0;
}

int jw_close(struct jw *w, char *err, size_t errlen) {
    flush(w);
    errno = 0;
#ifdef NSC_HAVE_ZLIB
    if (w->gz) {
        if (gzclose(w->gz) != Z_OK)
            failed(w);
        w->gz = NULL;
    } else
#endif
    if (w->f) {
        if (fflush(w->f) != 0 || ferror(w->f))
            failed(w);
        if (w->f != stdout && fclose(w->f) != 0)
            failed(w);
        w->f = NULL;
    }
    free(w->buf);
    w->buf = NULL;
    char e[600] = "";
    int had_out = w->out.fd >= 0 || w->out.tmp;
    const char *name = w->out.path ? w->out.path : "standard output";
    if (w->error)
        snprintf(e, sizeof(e), "%s: write failed: %s%s", name, strerror(w->err_no),
                 w->out.tmp ? " (nothing written there)" : "");
    if (had_out && nsc_out_finish(&w->out, !w->error, e, sizeof(e)) != 0)
        w->error = 1;
    if (w->error && err)
        snprintf(err, errlen, "%s", e);
    return w->error ? -1 : 0;
}

void jw_abort(struct jw *w) {
    if (!w->error) {
        w->error = 1;
        w->err_no = ECANCELED;
    }
    jw_close(w, NULL, 0);
}

static inline void reserve(struct jw *w, size_t n) {
    if (w->len + n > w->cap) {
        if (w->mem)
            grow(w, n);
        else
            flush(w);
    }
}

void jw_rawn_slow(struct jw *w, const char *s, size_t n) {
    if (w->mem) {
        if (grow(w, n) == 0) {
            memcpy(w->buf + w->len, s, n);
            w->len += n;
        }
        return;
    }
    if (n > w->cap / 2) {
        flush(w);
        if (write_out(w, s, n) != 0)
            failed(w);
        return;
    }
    reserve(w, n);
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}


void jw_str(struct jw *w, const char *s) {
    if (!s) {
        jw_raw(w, "null");
        return;
    }
    reserve(w, strlen(s) * NSC_JSON_ESC_MAX + 2);
    char *o = w->buf + w->len;
    *o++ = '"';
    o += nsc_json_escape(o, s, 0);
    *o++ = '"';
    w->len = (size_t)(o - w->buf);
}

/* Two digits per division: integers are most of what a trace is made of. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

void jw_u64(struct jw *w, uint64_t v) {
    char tmp[24];
    int i = 24;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[--i] = digit_pairs[d + 1];
        tmp[--i] = digit_pairs[d];
    }
    if (v >= 10) {
        tmp[--i] = digit_pairs[v * 2 + 1];
        tmp[--i] = digit_pairs[v * 2];
    } else {
        tmp[--i] = (char)('0' + v);
    }
    jw_rawn(w, tmp + i, (size_t)(24 - i));
}

void jw_i64(struct jw *w, int64_t v) {
    if (v < 0) {
        jw_raw(w, "-");
        jw_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        jw_u64(w, (uint64_t)v);
    }
}

void jw_us(struct jw *w, uint64_t ns) {
    jw_u64(w, ns / 1000);
    char frac[4] = {'.', (char)('0' + (ns / 100) % 10), (char)('0' + (ns / 10) % 10),
                    (char)('0' + ns % 10)};
    jw_rawn(w, frac, 4);
}

void jw_hex(struct jw *w, uint64_t v) {
    static const char hex[] = "0123456789abcdef";
    char tmp[24];
    int i = 24;
    tmp[--i] = '"';
    do {
        tmp[--i] = hex[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    tmp[--i] = '"';
    jw_rawn(w, tmp + i, (size_t)(24 - i));
}

void jw_print_string(FILE *f, const char *s) {
    nsc_json_print(f, s, 0);
}
