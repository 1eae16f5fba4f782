// SPDX-License-Identifier: Apache-2.0
/* spool.c - events kept aside and read back (spool.h). The format is this
 * process's own (native byte order, never kept past the run). */
#include "spool.h"

#include <stdlib.h>
#include <string.h>

enum { ITEM_EVENT = 1, ITEM_CHAIN = 2, ITEM_RAW = 3 };
#define NO_STR 0xffffffffu

/* An item is built in memory and written with one fwrite (a call per
 * field would take the stream's lock per field). */
struct out {
    unsigned char *p;
    size_t len, cap;
    int oom;
};

static _Thread_local struct out ob;

static void put(struct out *o, const void *p, size_t n) {
    if (o->len + n > o->cap) {
        size_t cap = (o->len + n) * 2 + 256;
        unsigned char *q = realloc(o->p, cap);
        if (!q) {
            o->oom = 1;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->len, p, n);
    o->len += n;
}

static void put_u64(struct out *o, uint64_t v) { put(o, &v, 8); }

static void put_str(struct out *o, const char *s, size_t n) {
    uint32_t len = s ? (uint32_t)n : NO_STR;
    put(o, &len, 4);
    if (s)
        put(o, s, n);
}

static void put_cstr(struct out *o, const char *s) { put_str(o, s, s ? strlen(s) : 0); }

void nsc_spool_thread_done(void) {
    free(ob.p);
    memset(&ob, 0, sizeof(ob));
}

static int flush_item(FILE *f, struct out *o) {
    int rc = o->oom || fwrite(o->p, 1, o->len, f) != o->len ? -1 : 0;
    o->len = 0;
    o->oom = 0;
    if (o->cap > (1u << 20)) { /* one huge item: do not keep its buffer */
        free(o->p);
        o->p = NULL;
        o->cap = 0;
    }
    return rc;
}

int nsc_spool_event(FILE *f, const struct nsc_tev *e) {
    struct out *o = &ob;
    const struct nsc_args *a = e->args;
    unsigned char head[5] = {ITEM_EVENT, (unsigned char)e->k, (unsigned char)e->scope,
                             (unsigned char)e->has_tid, a != NULL};
    put(o, head, sizeof(head));
    uint64_t v[7] = {e->pid, e->tid, e->ts, e->dur, e->id, e->sort, (uint64_t)e->cval};
    put(o, v, sizeof(v));
    put_cstr(o, e->cat);
    put_cstr(o, e->name);
    put_cstr(o, e->ckey);
    if (a) {
        uint32_t n = a->n;
        put(o, &n, 4);
        for (uint32_t k = 0; k < n; k++) {
            const struct nsc_arg *x = &a->a[k];
            put_cstr(o, x->key);
            put(o, &x->kind, 1);
            if (x->kind == NSC_ARG_STR)
                put_cstr(o, nsc_arg_str(a, x));
            else if (x->kind == NSC_ARG_JSON)
                put_str(o, a->text.buf + x->off, x->len);
            else
                put_u64(o, x->v.u);
        }
    }
    return flush_item(f, o);
}

int nsc_spool_chain(FILE *f, const struct nsc_chain_point *c) {
    struct out *o = &ob;
    unsigned char t = ITEM_CHAIN;
    uint64_t v[5] = {c->key, c->flow_id, c->pid, c->tid, c->ts};
    put(o, &t, 1);
    put(o, v, sizeof(v));
    put_cstr(o, c->name);
    return flush_item(f, o);
}

int nsc_spool_raw(FILE *f, const void *p, size_t n) {
    unsigned char t = ITEM_RAW;
    uint64_t len = n;
    return fwrite(&t, 1, 1, f) != 1 || fwrite(&len, 8, 1, f) != 1 || fwrite(p, 1, n, f) != n ? -1
                                                                                            : 0;
}

int nsc_spool_item_init(struct nsc_spool_item *it) {
    memset(it, 0, sizeof(*it));
    return nsc_args_init(&it->args);
}

void nsc_spool_item_free(struct nsc_spool_item *it) {
    nsc_args_free(&it->args);
    free(it->strs);
    memset(it, 0, sizeof(*it));
}

/* Strings of one item go to it->strs, referred to by offset until the item
 * is complete (the buffer may move while it grows). */
struct reader {
    FILE *f;
    struct nsc_spool_item *it;
    size_t used;
    int bad;
};

static void get(struct reader *r, void *p, size_t n) {
    if (!r->bad && fread_unlocked(p, 1, n, r->f) != n) /* one reader per spool */
        r->bad = 1;
}

/* The offset of the string read (+1), or 0 for NULL. */
static size_t get_str(struct reader *r) {
    uint32_t len = NO_STR;
    get(r, &len, 4);
    if (r->bad || len == NO_STR)
        return 0;
    if (r->used + len + 1 > r->it->strs_cap) {
        size_t cap = (r->used + len + 1) * 2;
        char *p = realloc(r->it->strs, cap);
        if (!p) {
            r->bad = 1;
            return 0;
        }
        r->it->strs = p;
        r->it->strs_cap = cap;
    }
    size_t at = r->used;
    get(r, r->it->strs + at, len);
    r->it->strs[at + len] = '\0';
    r->used += len + 1;
    return at + 1;
}

static const char *str_at(const struct reader *r, size_t at) {
    return at ? r->it->strs + at - 1 : NULL;
}

int nsc_spool_next(FILE *f, struct nsc_spool_item *it) {
    struct reader r = {f, it, 0, 0};
    int type = getc_unlocked(f);
    if (type == EOF)
        return 0;
    nsc_args_clear(&it->args);
    if (type == ITEM_RAW) {
        uint64_t len = 0;
        get(&r, &len, 8);
        if (r.bad || len > ((uint64_t)1 << 40))
            return -1;
        if (len + 1 > it->strs_cap) {
            char *q = realloc(it->strs, (size_t)len + 1);
            if (!q)
                return -1;
            it->strs = q;
            it->strs_cap = (size_t)len + 1;
        }
        get(&r, it->strs, (size_t)len);
        if (r.bad)
            return -1;
        it->is_chain = 0;
        it->raw = it->strs;
        it->raw_len = (size_t)len;
        return 1;
    }
    it->raw = NULL;
    it->raw_len = 0;
    if (type == ITEM_CHAIN) {
        uint64_t v[5];
        get(&r, v, sizeof(v));
        size_t name = get_str(&r);
        if (r.bad)
            return -1;
        it->is_chain = 1;
        it->chain = (struct nsc_chain_point){v[0], v[1], v[2], v[3], v[4], str_at(&r, name)};
        return 1;
    }
    if (type != ITEM_EVENT)
        return -1;
    unsigned char head[4];
    uint64_t v[7];
    get(&r, head, sizeof(head));
    get(&r, v, sizeof(v));
    size_t cat = get_str(&r), name = get_str(&r), ckey = get_str(&r);
    /* arguments: keys and strings first (their buffer settles), then the list */
    struct pending {
        size_t key, str;
        unsigned char kind;
        uint64_t u;
    } *p = NULL;
    uint32_t n = 0;
    if (head[3]) {
        get(&r, &n, 4);
        if (!r.bad && n > (1u << 20))
            r.bad = 1;
        p = r.bad ? NULL : calloc((size_t)n + 1, sizeof(*p));
        if (!r.bad && !p)
            r.bad = 1;
        for (uint32_t k = 0; k < n && !r.bad; k++) {
            p[k].key = get_str(&r);
            get(&r, &p[k].kind, 1);
            if (p[k].kind == NSC_ARG_STR || p[k].kind == NSC_ARG_JSON)
                p[k].str = get_str(&r);
            else
                get(&r, &p[k].u, 8);
        }
    }
    if (r.bad) {
        free(p);
        return -1;
    }
    struct nsc_args *a = &it->args;
    for (uint32_t k = 0; k < n; k++) {
        const char *key = str_at(&r, p[k].key);
        switch (p[k].kind) {
        case NSC_ARG_STR: nsc_arg_s(a, key, str_at(&r, p[k].str)); break;
        case NSC_ARG_JSON: {
            struct jw *w = nsc_arg_json_begin(a, key);
            jw_raw(w, str_at(&r, p[k].str));
            nsc_arg_json_end(a);
            break;
        }
        case NSC_ARG_U64: nsc_arg_u(a, key, p[k].u); break;
        case NSC_ARG_I64: nsc_arg_i(a, key, (int64_t)p[k].u); break;
        case NSC_ARG_HEX: nsc_arg_hex(a, key, p[k].u); break;
        case NSC_ARG_US: nsc_arg_us(a, key, p[k].u); break;
        case NSC_ARG_BOOL: nsc_arg_bool(a, key, (int)p[k].u); break;
        default: free(p); return -1;
        }
    }
    free(p);
    it->is_chain = 0;
    it->ev = (struct nsc_tev){.k = (enum nsc_tev_kind)head[0], .scope = (char)head[1],
                              .has_tid = head[2], .pid = v[0], .tid = v[1], .ts = v[2],
                              .dur = v[3], .id = v[4], .sort = v[5], .cval = (int64_t)v[6],
                              .cat = str_at(&r, cat), .name = str_at(&r, name),
                              .ckey = str_at(&r, ckey), .args = head[3] ? a : NULL};
    return 1;
}
