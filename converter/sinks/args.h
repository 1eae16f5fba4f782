// SPDX-License-Identifier: Apache-2.0
/*
 * args.h - an event's arguments, typed: what a sink writes as the event's
 * "args" (JSON) or as its debug annotations (Perfetto protobuf), each in its
 * own way, from the same list. The timeline builds the list; nothing is
 * formatted as text on the way and no sink parses anything back.
 *
 * Keys are string literals (or other strings that outlive the event);
 * string values are either borrowed (valid until the sink wrote the event:
 * the decoder's strings) or copied into the list's own text. Nested values
 * (the states of an event, the run's file list) are JSON text: the JSON
 * sink writes them as they are, the protobuf sink as legacy_json_value.
 */
#ifndef NSC_ARGS_H
#define NSC_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "json_writer.h"

enum nsc_arg_kind {
    NSC_ARG_U64,
    NSC_ARG_I64,
    NSC_ARG_STR,  /* NULL: JSON null (protobuf: the string "null") */
    NSC_ARG_HEX,  /* "0x..." (a string in both outputs) */
    NSC_ARG_US,   /* ns shown as microseconds, 3 decimals (protobuf: a double) */
    NSC_ARG_BOOL,
    NSC_ARG_JSON, /* JSON text held in the list */
};

struct nsc_arg {
    const char *key;
    uint8_t kind;
    uint8_t owned;    /* STR: the string is in the list's text at off */
    uint32_t off, len; /* JSON and owned STR: where in text */
    union {
        uint64_t u;
        int64_t i;
        const char *s;
    } v;
};

struct nsc_args {
    struct nsc_arg *a;
    uint32_t n, cap;
    int oom;          /* an argument could not be kept (out of memory) */
    uint32_t json_at; /* 1 + index of the JSON value being written, 0 none */
    struct jw text;   /* owned strings and JSON values */
};

int nsc_args_init(struct nsc_args *a);
void nsc_args_free(struct nsc_args *a);
static inline void nsc_args_clear(struct nsc_args *a) {
    a->n = 0;
    a->text.len = 0;
    a->oom = 0;
    a->json_at = 0;
}

void nsc_arg_u(struct nsc_args *a, const char *key, uint64_t v);
void nsc_arg_i(struct nsc_args *a, const char *key, int64_t v);
void nsc_arg_s(struct nsc_args *a, const char *key, const char *s);   /* borrowed */
void nsc_arg_scopy(struct nsc_args *a, const char *key, const char *s); /* copied */
void nsc_arg_hex(struct nsc_args *a, const char *key, uint64_t v);
void nsc_arg_us(struct nsc_args *a, const char *key, uint64_t ns);
void nsc_arg_bool(struct nsc_args *a, const char *key, int v);
/* A JSON value: begin returns the writer to write it into; end closes it. */
struct jw *nsc_arg_json_begin(struct nsc_args *a, const char *key);
void nsc_arg_json_end(struct nsc_args *a);

/* The string value of a STR argument (borrowed or owned). */
const char *nsc_arg_str(const struct nsc_args *a, const struct nsc_arg *x);

/* The members "k":v,... (no braces) as JSON, into w. */
void nsc_args_write_json(const struct nsc_args *a, struct jw *w);

#endif /* NSC_ARGS_H */
