// SPDX-License-Identifier: Apache-2.0
/*
 * json_writer.h - a small buffered writer for Chrome trace JSON: escaping,
 * integers and microsecond timestamps without printf on the hot path.
 */
#ifndef NSC_JSON_WRITER_H
#define NSC_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json_escape.h"
#include "out_file.h"

struct jw {
    FILE *f;
    void *gz;       /* a zlib gzFile when writing .gz (zlib's own deflate) */
    char *buf;
    size_t len, cap;
    int error;
    uint64_t bytes; /* written so far (uncompressed) */
    int mem;        /* in memory: the buffer grows, nothing is written out */
    int err_no;     /* errno of the first failed write */
    struct nsc_out out; /* the file being written (out_file.h); fd -1 for stdout */
};

int jw_open(struct jw *w, FILE *f);
/* A growing in-memory writer: buf[0..len) is what was written. */
int jw_open_mem(struct jw *w);
/* Opens path for writing ("-" = stdout) through out_file.h (refused when
 * it is one of the inputs); gzip-compressed when it ends in ".gz". Returns
 * 0, or -1 with a message in err. */
int jw_open_path(struct jw *w, const char *path, const char *const *inputs, int ninputs,
                 char *err, size_t errlen);
/* Flushes and closes; the file takes its name only when every write
 * succeeded. Returns 0, or -1 with a message in err (err may be NULL). */
int jw_close(struct jw *w, char *err, size_t errlen);
/* Closes and removes what was written (a failed run). */
void jw_abort(struct jw *w);
void jw_rawn_slow(struct jw *w, const char *s, size_t n);
/* Inline so that strlen of a literal folds at compile time and the common
 * case is one memcpy into the buffer. */
static inline void jw_rawn(struct jw *w, const char *s, size_t n) {
    if (__builtin_expect(w->len + n <= w->cap, 1)) {
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        return;
    }
    jw_rawn_slow(w, s, n);
}
static inline void jw_raw(struct jw *w, const char *s) { jw_rawn(w, s, strlen(s)); }
/* "escaped" (null -> null): UTF-8 kept, invalid bytes as U+FFFD, JSON's
 * escapes only (json_escape.h) */
void jw_str(struct jw *w, const char *s);
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
void jw_us(struct jw *w, uint64_t ns);        /* ns as microseconds, 3 decimals */
void jw_hex(struct jw *w, uint64_t v);        /* "0x..." as a string */
/* ,"key": (inline: a literal key's length folds at compile time) */
static inline void jw_key(struct jw *w, const char *key) {
    jw_rawn(w, ",\"", 2);
    jw_raw(w, key);
    jw_rawn(w, "\":", 2);
}

/* Prints s as a JSON string literal on a stdio stream, as jw_str writes
 * it (json_escape.h): names come from traces, which may hold any bytes.
 * For the commands that print JSON with fprintf. */
void jw_print_string(FILE *f, const char *s);

#endif /* NSC_JSON_WRITER_H */
