/* json_writer.c - buffered JSON output. */
#include "json_writer.h"

#include <stdlib.h>
#include <string.h>

int jw_open(struct jw *w, FILE *f) {
    w->f = f;
    w->cap = 1 << 20;
    w->len = 0;
    w->error = 0;
    w->buf = malloc(w->cap);
    return w->buf ? 0 : -1;
}

static void flush(struct jw *w) {
    if (w->len && fwrite(w->buf, 1, w->len, w->f) != w->len)
        w->error = 1;
    w->len = 0;
}

int jw_close(struct jw *w) {
    flush(w);
    if (fflush(w->f) != 0)
        w->error = 1;
    free(w->buf);
    w->buf = NULL;
    return w->error ? -1 : 0;
}

static inline void reserve(struct jw *w, size_t n) {
    if (w->len + n > w->cap)
        flush(w);
}

void jw_rawn(struct jw *w, const char *s, size_t n) {
    if (n > w->cap / 2) {
        flush(w);
        if (fwrite(s, 1, n, w->f) != n)
            w->error = 1;
        return;
    }
    reserve(w, n);
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

void jw_raw(struct jw *w, const char *s) { jw_rawn(w, s, strlen(s)); }

void jw_str(struct jw *w, const char *s) {
    if (!s) {
        jw_raw(w, "null");
        return;
    }
    reserve(w, strlen(s) * 6 + 2);
    char *o = w->buf + w->len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            /* Non-ASCII bytes are escaped one by one: names come from C
             * programs and may not be valid UTF-8. */
            static const char hex[] = "0123456789abcdef";
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    w->len = (size_t)(o - w->buf);
}

void jw_u64(struct jw *w, uint64_t v) {
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
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
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "\"0x%llx\"", (unsigned long long)v);
    jw_rawn(w, tmp, (size_t)n);
}

void jw_key(struct jw *w, const char *key) {
    jw_raw(w, ",\"");
    jw_raw(w, key);
    jw_raw(w, "\":");
}
