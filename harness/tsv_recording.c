// SPDX-License-Identifier: Apache-2.0
/* tsv_recording.c - NCCL callback recordings (one line per call) to scripts. */
#include "tsv_recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"

#define MAX_FIELDS 40

struct kv {
    const char *k, *v;
};

static const char *get(const struct kv *kv, int n, const char *key) {
    for (int i = 0; i < n; i++)
        if (strcmp(kv[i].k, key) == 0)
            return kv[i].v;
    return NULL;
}

static uint64_t u64(const struct kv *kv, int n, const char *key) {
    const char *v = get(kv, n, key);
    if (!v || strcmp(v, "(nil)") == 0)
        return 0;
    return strtoull(v, NULL, 0);
}

static long long i64(const struct kv *kv, int n, const char *key) {
    const char *v = get(kv, n, key);
    return v ? strtoll(v, NULL, 0) : 0;
}

static const char *sv(struct nsc_script *s, const struct kv *kv, int n, const char *key) {
    const char *v = get(kv, n, key);
    return v && strcmp(v, "(null)") != 0 ? nsc_script_intern(s, v) : NULL;
}

static int type_from_name(const char *name) {
    for (unsigned i = 0; i < NSC_ET_COUNT; i++)
        if (strcmp(nsc_etype_name(i), name) == 0)
            return (int)i;
    return -1;
}

/* The v7 descriptor from a recording's key=value fields, one statement per
 * row of nccl/event_schema.def with a TSV key (NetPlugin has none). */
#define TSV_U(dst, key) dst = u64(kv, n, key)
#define TSV_I(dst, key) dst = i64(kv, n, key)
#define TSV_B(dst, key) dst = u64(kv, n, key) != 0
#define TSV_STR(dst, key) dst = sv(s, kv, n, key)
#define TSV_PTR(dst, key) dst = (void *)(uintptr_t)u64(kv, n, key)
#define TSV_PARENT(dst, key) c->parent_group = u64(kv, n, key)
#define TSV_CETAG(dst, key) dst = u64(kv, n, key)
#define TSV_PY(dst, key)
#define TSV_NETID(dst, key)
#define TSV_NETU(dst, key)
#define TSV_NETI(dst, key)
#define TSV_NETPTR(dst, key)
#define TSV_LIT(dst, key)
static void fill(struct nsc_script *s, struct nsc_call *c, int et, const struct kv *kv, int n) {
    nsc_abi_descr_v7 *d = &c->d;
    switch (et) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ET_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_FIELD(ET, NAME, KIND, ABI, WHERE, OURS, TSV, VMIN, SHOW)                           \
    if (TSV) {                                                                                 \
        TSV_##KIND(d->ABI, TSV);                                                               \
    }
#include "event_schema.def"
    default:
        break;
    }
}
#undef TSV_U
#undef TSV_I
#undef TSV_B
#undef TSV_STR
#undef TSV_PTR
#undef TSV_PARENT
#undef TSV_CETAG
#undef TSV_PY
#undef TSV_NETID
#undef TSV_NETU
#undef TSV_NETI
#undef TSV_NETPTR
#undef TSV_LIT

static int comm_index(struct nsc_script *s, uint64_t *ctx_ids, uint64_t ctx) {
    for (size_t i = 0; i < s->ncomms; i++)
        if (ctx_ids[i] == ctx)
            return (int)i;
    return -1;
}

int nsc_script_from_tsv(struct nsc_script *s, const char *path, char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    uint64_t ctx_ids[256];
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        char *fld[MAX_FIELDS];
        int nf = 0;
        for (char *p = line, *tok; nf < MAX_FIELDS && (tok = strsep(&p, "\t")) != NULL;)
            fld[nf++] = tok;
        if (nf < 5) {
            snprintf(err, errlen, "%s:%ld: expected seq, tid, t_ns, call and its fields", path,
                     lineno);
            rc = -1;
            break;
        }
        uint32_t tid = (uint32_t)strtoul(fld[1], NULL, 10);
        char op = fld[3][0];
        struct nsc_call *c = nsc_script_add(s);
        if (!c) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        c->thread = nsc_script_thread(s, tid, NULL);
        c->t_ns = strtoull(fld[2], NULL, 10);
        if (op == 'I' && nf >= 11) {
            if (s->ncomms >= 256) {
                snprintf(err, errlen, "%s:%ld: more than 256 contexts", path, lineno);
                rc = -1;
                break;
            }
            struct nsc_script_comm *cm = realloc(s->comms, (s->ncomms + 1) * sizeof(*cm));
            if (!cm) {
                rc = -1;
                break;
            }
            s->comms = cm;
            memset(&cm[s->ncomms], 0, sizeof(cm[0]));
            ctx_ids[s->ncomms] = strtoull(fld[4], NULL, 10);
            cm[s->ncomms].comm_id = strtoull(fld[5], NULL, 10);
            cm[s->ncomms].nnodes = atoi(fld[6]);
            cm[s->ncomms].nranks = atoi(fld[7]);
            cm[s->ncomms].rank = atoi(fld[8]);
            if (strcmp(fld[9], "(null)") != 0)
                snprintf(cm[s->ncomms].name, sizeof(cm[0].name), "%s", fld[9]);
            c->kind = NSC_CALL_INIT;
            c->comm = (uint32_t)s->ncomms++;
        } else if (op == 'S' && nf >= 9) {
            int ci = comm_index(s, ctx_ids, strtoull(fld[4], NULL, 10));
            int et = type_from_name(fld[6]);
            if (ci < 0 || et < 0) {
                snprintf(err, errlen, "%s:%ld: unknown context %s or event type %s", path, lineno,
                         fld[4], fld[6]);
                rc = -1;
                break;
            }
            struct kv kv[MAX_FIELDS];
            int nkv = 0;
            for (int i = 9; i < nf; i++) {
                char *eq = strchr(fld[i], '=');
                if (!eq)
                    continue;
                *eq = '\0';
                kv[nkv].k = fld[i];
                kv[nkv].v = eq + 1;
                nkv++;
            }
            c->kind = NSC_CALL_START;
            c->comm = (uint32_t)ci;
            c->id = strtoull(fld[5], NULL, 10);
            c->parent = strtoull(fld[7], NULL, 10);
            c->d.type = 1ull << et;
            c->d.rank = atoi(fld[8]);
            fill(s, c, et, kv, nkv);
        } else if (op == 'E' && nf >= 5) {
            c->kind = NSC_CALL_STOP;
            c->id = strtoull(fld[4], NULL, 10);
        } else if (op == 'R' && nf >= 7) {
            c->kind = NSC_CALL_STATE;
            c->id = strtoull(fld[4], NULL, 10);
            c->state = atoi(fld[5]);
            char *eq = strchr(fld[6], '=');
            c->arg = eq ? strtoull(eq + 1, NULL, 0) : 0;
        } else if (op == 'F' && nf >= 5) {
            int ci = comm_index(s, ctx_ids, strtoull(fld[4], NULL, 10));
            if (ci < 0) {
                snprintf(err, errlen, "%s:%ld: finalize of unknown context %s", path, lineno,
                         fld[4]);
                rc = -1;
                break;
            }
            c->kind = NSC_CALL_FINALIZE;
            c->comm = (uint32_t)ci;
        } else {
            snprintf(err, errlen, "%s:%ld: unrecognised call '%s'", path, lineno, fld[3]);
            rc = -1;
            break;
        }
    }
    free(line);
    fclose(f);
    if (rc != 0)
        nsc_script_free(s);
    return rc;
}
