// SPDX-License-Identifier: Apache-2.0
/* args.c - typed event arguments (args.h). */
#include "args.h"

#include <stdlib.h>
#include <string.h>

int nsc_args_init(struct nsc_args *a) {
    memset(a, 0, sizeof(*a));
    return jw_open_mem(&a->text);
}

void nsc_args_free(struct nsc_args *a) {
    free(a->a);
    jw_close(&a->text, NULL, 0);
    memset(a, 0, sizeof(*a));
}

static struct nsc_arg *add(struct nsc_args *a, const char *key, int kind) {
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 32;
        struct nsc_arg *n = realloc(a->a, cap * sizeof(*n));
        if (!n) {
            a->oom = 1;
            return NULL;
        }
        a->a = n;
        a->cap = cap;
    }
    struct nsc_arg *x = &a->a[a->n++];
    memset(x, 0, sizeof(*x));
    x->key = key;
    x->kind = (uint8_t)kind;
    return x;
}

void nsc_arg_u(struct nsc_args *a, const char *key, uint64_t v) {
    struct nsc_arg *x = add(a, key, NSC_ARG_U64);
    if (x)
        x->v.u = v;
}

void nsc_arg_i(struct nsc_args *a, const char *key, int64_t v) {
    struct nsc_arg *x = add(a, key, NSC_ARG_I64);
    if (x)
        x->v.i = v;
}

void nsc_arg_s(struct nsc_args *a, const char *key, const char *s) {
    struct nsc_arg *x = add(a, key, NSC_ARG_STR);
    if (x)
        x->v.s = s;
}

void nsc_arg_scopy(struct nsc_args *a, const char *key, const char *s) {
    if (!s) {
        nsc_arg_s(a, key, NULL);
        return;
    }
    struct nsc_arg *x = add(a, key, NSC_ARG_STR);
    if (!x)
        return;
    size_t n = strlen(s);
    x->owned = 1;
    x->off = (uint32_t)a->text.len;
    x->len = (uint32_t)n;
    jw_rawn(&a->text, s, n + 1); /* with its NUL */
}

void nsc_arg_hex(struct nsc_args *a, const char *key, uint64_t v) {
    struct nsc_arg *x = add(a, key, NSC_ARG_HEX);
    if (x)
        x->v.u = v;
}

void nsc_arg_us(struct nsc_args *a, const char *key, uint64_t ns) {
    struct nsc_arg *x = add(a, key, NSC_ARG_US);
    if (x)
        x->v.u = ns;
}

void nsc_arg_bool(struct nsc_args *a, const char *key, int v) {
    struct nsc_arg *x = add(a, key, NSC_ARG_BOOL);
    if (x)
        x->v.u = v != 0;
}

struct jw *nsc_arg_json_begin(struct nsc_args *a, const char *key) {
    struct nsc_arg *x = add(a, key, NSC_ARG_JSON);
    a->json_at = x ? a->n : 0; /* without x the text is written and not pointed at */
    if (x)
        x->off = (uint32_t)a->text.len;
    return &a->text;
}

void nsc_arg_json_end(struct nsc_args *a) {
    if (a->json_at) {
        struct nsc_arg *x = &a->a[a->json_at - 1];
        x->len = (uint32_t)(a->text.len - x->off);
        a->json_at = 0;
    }
}

const char *nsc_arg_str(const struct nsc_args *a, const struct nsc_arg *x) {
    return x->owned ? a->text.buf + x->off : x->v.s;
}

void nsc_args_write_json(const struct nsc_args *a, struct jw *w) {
    for (uint32_t k = 0; k < a->n; k++) {
        const struct nsc_arg *x = &a->a[k];
        if (k)
            jw_rawn(w, ",", 1);
        jw_rawn(w, "\"", 1);
        jw_raw(w, x->key);
        jw_rawn(w, "\":", 2);
        switch (x->kind) {
        case NSC_ARG_U64: jw_u64(w, x->v.u); break;
        case NSC_ARG_I64: jw_i64(w, x->v.i); break;
        case NSC_ARG_STR: jw_str(w, nsc_arg_str(a, x)); break;
        case NSC_ARG_HEX: jw_hex(w, x->v.u); break;
        case NSC_ARG_US: jw_us(w, x->v.u); break;
        case NSC_ARG_BOOL: jw_raw(w, x->v.u ? "true" : "false"); break;
        case NSC_ARG_JSON: jw_rawn(w, a->text.buf + x->off, x->len); break;
        }
    }
}
