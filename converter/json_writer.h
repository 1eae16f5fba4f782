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

struct jw {
    FILE *f;
    void *gz;       /* a zlib gzFile when writing .gz (zlib's own deflate) */
    char *buf;
    size_t len, cap;
    int error;
    uint64_t bytes; /* written so far (uncompressed) */
    int mem;        /* in memory: the buffer grows, nothing is written out */
};

int jw_open(struct jw *w, FILE *f);
/* A growing in-memory writer: buf[0..len) is what was written. */
int jw_open_mem(struct jw *w);
/* Opens path for writing ("-" = stdout); gzip-compressed when it ends in
 * ".gz". Returns 0, or -1 with errno set (ENOTSUP: built without zlib). */
int jw_open_path(struct jw *w, const char *path);
int jw_close(struct jw *w); /* flushes; returns -1 if any write failed */
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
void jw_str(struct jw *w, const char *s);     /* "escaped" (null -> null) */
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

#endif /* NSC_JSON_WRITER_H */
