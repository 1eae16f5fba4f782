// SPDX-License-Identifier: Apache-2.0
/*
 * json_escape.h - text from a trace as a JSON string's body, the one
 * function every JSON writer of the converter uses (convert's .json, stats
 * --json, hang --json, the data of report's page): valid UTF-8 is kept as
 * it is (a name in Greek, CJK or an emoji stays readable), each invalid
 * byte sequence becomes U+FFFD, and only what JSON requires is escaped
 * (control characters, the quote and the backslash). Names come from C
 * programs and the trace may be damaged: any bytes can arrive here.
 *
 * An invalid sequence is replaced as Unicode recommends (the "maximal
 * subpart" practice, also Python's and the WHATWG decoder's): a lead byte
 * and the continuation bytes that could still follow it count as one; a
 * byte that cannot start or continue a sequence counts alone. Overlong
 * forms, surrogates (U+D800-U+DFFF) and values past U+10FFFF are invalid.
 */
#ifndef NSC_JSON_ESCAPE_H
#define NSC_JSON_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* The bytes of the UTF-8 sequence that starts at p (p[0] != 0): returns
 * how many bytes it takes (1-4) and *valid whether it is one character
 * (0: those bytes are one invalid sequence, shown as U+FFFD). A NUL ends
 * a sequence as any other byte that does not continue it. */
size_t nsc_utf8_seq(const unsigned char *p, int *valid);

/* Also "<" as \u003c: the string goes inside an HTML <script> element,
 * where "</script>" in a name would end it. */
#define NSC_JSON_ESC_SCRIPT 1u

/* The worst case of nsc_json_escape's output per input byte (a control
 * character: \u00XX). */
#define NSC_JSON_ESC_MAX 6

/* s (NUL-terminated) escaped into out, which has room for NSC_JSON_ESC_MAX
 * x strlen(s) bytes; no quotes, no NUL written. Returns the bytes written. */
size_t nsc_json_escape(char *out, const char *s, unsigned flags);

/* s as a JSON string literal, quotes included, on a stdio stream (the
 * commands that print JSON with fprintf). NULL prints null. */
void nsc_json_print(FILE *f, const char *s, unsigned flags);

#endif /* NSC_JSON_ESCAPE_H */
