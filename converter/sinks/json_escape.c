// SPDX-License-Identifier: Apache-2.0
/* json_escape.c - UTF-8 kept, invalid sequences as U+FFFD, JSON's escapes
 * (json_escape.h). */
#include "json_escape.h"

#include <string.h>

size_t nsc_utf8_seq(const unsigned char *p, int *valid) {
    unsigned c = p[0];
    *valid = 1;
    if (c < 0x80)
        return 1;
    /* the sequence's length, and the range of its second byte (the first
     * continuation is narrower where overlongs, surrogates and values past
     * U+10FFFF begin) */
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        *valid = 0; /* a continuation byte alone, C0, C1, F5-FF */
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        unsigned b = p[i];
        if (b < lo || b > hi) {
            *valid = 0;
            return i; /* the maximal subpart: what could still have been a character */
        }
        lo = 0x80;
        hi = 0xbf;
    }
    return n;
}

size_t nsc_json_escape(char *out, const char *s, unsigned flags) {
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        if (c >= 0x80) {
            int valid;
            size_t n = nsc_utf8_seq(p, &valid);
            if (valid)
                memcpy(o, p, n), o += n;
            else
                memcpy(o, "\xef\xbf\xbd", 3), o += 3; /* U+FFFD: at most 3 bytes for 1 */
            p += n;
            continue;
        }
        p++;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c == '\n') {
            *o++ = '\\', *o++ = 'n';
        } else if (c == '\t') {
            *o++ = '\\', *o++ = 't';
        } else if (c == '\r') {
            *o++ = '\\', *o++ = 'r';
        } else if (c < 0x20 || (c == '<' && (flags & NSC_JSON_ESC_SCRIPT))) {
            *o++ = '\\', *o++ = 'u', *o++ = '0', *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    return (size_t)(o - out);
}

void nsc_json_print(FILE *f, const char *s, unsigned flags) {
    if (!s) {
        fputs("null", f);
        return;
    }
    /* in pieces: a name of any length, no allocation */
    enum { PIECE = 256, LONGEST = PIECE + 3 };
    char piece[LONGEST + 1], buf[NSC_JSON_ESC_MAX * LONGEST];
    fputc('"', f);
    size_t len = strlen(s), at = 0;
    while (at < len) {
        size_t n = len - at < PIECE ? len - at : PIECE;
        /* a cut must not split a sequence (valid or not: a maximal subpart
         * is at most 4 bytes): up to 3 continuation bytes more */
        while (at + n < len && n < LONGEST && ((unsigned char)s[at + n] & 0xc0) == 0x80)
            n++;
        memcpy(piece, s + at, n);
        piece[n] = '\0';
        fwrite(buf, 1, nsc_json_escape(buf, piece, flags), f);
        at += n;
    }
    fputc('"', f);
}
