// SPDX-License-Identifier: Apache-2.0
/* ncclscope_reader.c - libncclscope: the public reader API
 * (include/ncclscope/reader.h) over trace_decode.
 *
 * The decoder pushes what one block holds through callbacks; the API pulls.
 * Each ncclscope_next() that finds the queue empty steps the decoder by one
 * block, queueing what it delivers, and hands the queue out in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCCLSCOPE_BUILDING_READER
#include "ncclscope/reader.h"

#include "desc_visit.h"
#include "event_types.h"
#include "trace_decode.h"
#include "version.h"

#define MAX_FIELDS 32 /* the most any event type has is 16 */

struct item {
    int kind;               /* enum ncclscope_rec_kind */
    uint32_t thread;
    struct nsc_rec r, x;
    int has_x;
    char *text;             /* DAMAGE: owned */
};

struct ncclscope_trace {
    struct nsc_decoder dec;
    struct item *q;
    size_t qlen, qcap, qpos;
    int failed;             /* out of memory while queueing: reported once as damage */
    struct ncclscope_record cur;
    struct ncclscope_field fields[MAX_FIELDS];
    struct ncclscope_comm comm;
    struct ncclscope_session session;
    char thread_name[17];
    unsigned damage;
    char last_error[600];
    char *name;             /* the path or name messages use: the caller's may not outlive open */
};

const char *ncclscope_version(void) { return NSC_VERSION; }

static struct item *push(ncclscope_trace *t) {
    if (t->qlen == t->qcap) {
        size_t n = t->qcap ? t->qcap * 2 : 256;
        struct item *q = realloc(t->q, n * sizeof(*q));
        if (!q) {
            t->failed = 1;
            return NULL;
        }
        t->q = q;
        t->qcap = n;
    }
    struct item *it = &t->q[t->qlen++];
    memset(it, 0, sizeof(*it));
    return it;
}

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    (void)d;
    ncclscope_trace *t = ud;
    struct item *it = push(t);
    if (!it)
        return;
    it->kind = r->h.kind;
    it->thread = thread;
    it->r = *r;
    if (ext) {
        it->x = *ext;
        it->has_x = 1;
    }
}

static void on_comm(void *ud, struct nsc_decoder *d, const struct nsc_comm_info *c) {
    (void)d;
    ncclscope_trace *t = ud;
    struct item *it = push(t);
    if (!it)
        return;
    it->kind = NCCLSCOPE_REC_COMM_INFO;
    it->r.h.aux = c->serial;
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    ncclscope_trace *t = ud;
    t->damage++;
    snprintf(t->last_error, sizeof(t->last_error), "%s", msg);
    struct item *it = push(t);
    if (!it)
        return;
    it->kind = NCCLSCOPE_REC_DAMAGE;
    it->text = strdup(msg);
}

static const struct nsc_decode_ops ops = {
    .record = on_record, .comm = on_comm, .stats = NULL, .error = on_error};

static void drop_queue(ncclscope_trace *t) {
    for (size_t i = 0; i < t->qlen; i++)
        free(t->q[i].text);
    t->qlen = t->qpos = 0;
}

static ncclscope_trace *opened(ncclscope_trace *t, enum nsc_result rc, char *err,
                               size_t errlen) {
    if (rc != NSC_OK) {
        if (err && errlen)
            snprintf(err, errlen, "%s",
                     nsc_decoder_error(&t->dec)[0] ? nsc_decoder_error(&t->dec) : nsc_result_str(rc));
        free(t->name);
        free(t);
        return NULL;
    }
    /* The first block is the SESSION: read it now so ncclscope_session
     * answers before the first record is asked for. */
    nsc_decoder_step(&t->dec, &ops, t);
    return t;
}

ncclscope_trace *ncclscope_open(const char *path, char *err, size_t errlen) {
    ncclscope_trace *t = calloc(1, sizeof(*t));
    if (!t) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    t->name = strdup(path);
    if (!t->name) {
        free(t);
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    return opened(t, nsc_decoder_open(&t->dec, t->name), err, errlen);
}

ncclscope_trace *ncclscope_open_memory(const void *data, size_t len, const char *name, char *err,
                                       size_t errlen) {
    ncclscope_trace *t = calloc(1, sizeof(*t));
    if (!t) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", name ? name : "(memory)");
        return NULL;
    }
    t->name = strdup(name ? name : "(memory)");
    if (!t->name) {
        free(t);
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", name ? name : "(memory)");
        return NULL;
    }
    return opened(t, nsc_decoder_open_memory(&t->dec, data, len, t->name), err, errlen);
}

struct fill_ctx {
    ncclscope_trace *t;
    unsigned n;
};

static void on_field(void *ud, const struct nsc_desc_field *df) {
    struct fill_ctx *c = ud;
    if (c->n >= MAX_FIELDS)
        return;
    struct ncclscope_field *f = &c->t->fields[c->n++];
    memset(f, 0, sizeof(*f));
    f->name = df->name;
    switch (df->kind) {
    case NSC_DESC_U64:
        f->kind = NCCLSCOPE_FIELD_U64;
        f->u = df->v.u;
        f->i = (int64_t)df->v.u;
        break;
    case NSC_DESC_I64:
        f->kind = NCCLSCOPE_FIELD_I64;
        f->i = df->v.i;
        f->u = (uint64_t)df->v.i;
        break;
    case NSC_DESC_STR_ID:
    case NSC_DESC_PY_STACK:
        f->kind = NCCLSCOPE_FIELD_STRING;
        f->u = df->v.u;
        f->s = nsc_decoder_str(&c->t->dec, (uint32_t)df->v.u);
        break;
    case NSC_DESC_TEXT:
        f->kind = NCCLSCOPE_FIELD_STRING;
        f->s = df->v.text;
        break;
    case NSC_DESC_PTR:
        f->kind = NCCLSCOPE_FIELD_POINTER;
        f->u = df->v.u;
        break;
    case NSC_DESC_EVENT_ID:
        f->kind = NCCLSCOPE_FIELD_EVENT_ID;
        f->u = df->v.u;
        break;
    }
}

const struct ncclscope_record *ncclscope_next(ncclscope_trace *t) {
    while (t->qpos == t->qlen) {
        drop_queue(t);
        if (t->failed) {
            t->failed = 0;
            on_error(t, &t->dec, "out of memory: records of a block were not all kept");
            if (t->qlen)
                break;
        }
        if (!nsc_decoder_step(&t->dec, &ops, t) && t->qlen == 0)
            return NULL;
    }
    const struct item *it = &t->q[t->qpos++];
    struct ncclscope_record *o = &t->cur;
    memset(o, 0, sizeof(*o));
    o->kind = it->kind;
    if (it->kind == NCCLSCOPE_REC_DAMAGE) {
        o->text = it->text ? it->text : "damage (out of memory for its text)";
        return o;
    }
    if (it->kind == NCCLSCOPE_REC_COMM_INFO) {
        o->comm = it->r.h.aux;
        return o;
    }
    const struct nsc_rec *r = &it->r;
    const struct nsc_dthread *th = nsc_decoder_thread(&t->dec, it->thread);
    o->thread = it->thread;
    o->tid = th && th->known ? th->tid : 0;
    o->ticks = r->h.ticks;
    o->time_ns = nsc_decoder_mono_ns(&t->dec, r->h.ticks);
    o->id = r->h.id;
    switch (r->h.kind) {
    case NSC_REC_START: {
        o->etype = r->h.etype;
        o->etype_name = nsc_etype_name(r->h.etype);
        o->parent = r->u.start.parent;
        o->comm = r->h.aux;
        o->flags = r->h.flags;
        struct fill_ctx c = {t, 0};
        nsc_desc_visit(r, it->has_x ? &it->x.u.ext : NULL, on_field, &c);
        o->nfields = c.n;
        o->fields = t->fields;
        break;
    }
    case NSC_REC_STOP:
        o->etype = r->h.etype;
        o->etype_name = nsc_etype_name(r->h.etype);
        break;
    case NSC_REC_STATE:
        o->etype = r->h.etype;
        o->etype_name = nsc_etype_name(r->h.etype);
        o->state = (int)r->h.aux;
        o->state_name = nsc_state_name(r->h.aux);
        o->arg = r->u.state.arg;
        break;
    case NSC_REC_THREAD:
        o->tid = r->h.aux;
        memcpy(t->thread_name, r->u.thread_name, 16);
        t->thread_name[16] = '\0';
        o->text = t->thread_name;
        break;
    case NSC_REC_COMM_INIT:
    case NSC_REC_COMM_FINALIZE:
        o->comm = r->h.aux;
        break;
    case NSC_REC_MARK:
        if (r->h.etype == NSC_MARK_ETYPE) {
            o->text = nsc_decoder_str(&t->dec, r->h.aux);
            memcpy(&o->arg, &r->u, sizeof(o->arg));
            break;
        }
        /* kind 0 with another type: a PY record (trace_format.h) */
        o->kind = NCCLSCOPE_REC_PY;
        /* fall through */
    case NSC_REC_PY:
        o->etype = r->h.etype;
        o->text = nsc_decoder_str(&t->dec, r->h.aux);
        o->arg = r->u.state.arg;
        break;
    default:
        break;
    }
    return o;
}

const struct ncclscope_comm *ncclscope_comm(ncclscope_trace *t, uint32_t serial) {
    const struct nsc_comm_info *c = nsc_decoder_comm(&t->dec, serial);
    if (!c)
        return NULL;
    t->comm.serial = c->serial;
    t->comm.rank = c->rank;
    t->comm.nranks = c->nranks;
    t->comm.nnodes = c->nnodes;
    t->comm.comm_hash = c->comm_id;
    t->comm.name = c->name;
    return &t->comm;
}

const struct ncclscope_session *ncclscope_session(ncclscope_trace *t) {
    const struct nsc_session *s = nsc_decoder_session(&t->dec);
    if (!s)
        return NULL;
    t->session.format_version = s->format_version;
    t->session.api_version = s->api_version;
    t->session.pid = s->pid;
    t->session.event_mask = s->event_mask;
    t->session.host = s->host;
    t->session.plugin_version = s->plugin_version;
    t->session.replayed = nsc_session_replayed(s);
    return &t->session;
}

int ncclscope_losses(const ncclscope_trace *t, struct ncclscope_losses *out) {
    const struct nsc_losses *l = nsc_decoder_losses(&t->dec);
    memset(out, 0, sizeof(*out));
    if (!l)
        return 0;
    out->dropped = l->dropped;
    out->write = l->write;
    out->exit = l->exit;
    out->total = l->total;
    out->events = l->events;
    return 1;
}

unsigned ncclscope_damage_count(const ncclscope_trace *t) { return t->damage; }

const char *ncclscope_last_error(const ncclscope_trace *t) { return t->last_error; }

int ncclscope_complete(const ncclscope_trace *t) { return nsc_decoder_ended(&t->dec); }

void ncclscope_close(ncclscope_trace *t) {
    if (!t)
        return;
    drop_queue(t);
    free(t->q);
    nsc_decoder_close(&t->dec);
    free(t->name);
    free(t);
}
