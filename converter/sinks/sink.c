// SPDX-License-Identifier: Apache-2.0
/* sink.c - the sink interface (sink.h): parts of one byte stream, and the
 * dispatch to the JSON and protobuf encoders. */
#include "sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_sink.h"
#include "perfetto_proto.h"
#include "spool.h"

struct nsc_sink {
    struct nsc_sink_opts o;
    struct jw w;               /* the byte stream of the current part */
    int part;
    int failed;                /* a part could not be written: the run fails */
    int err_taken;
    char err[1200];
    struct pf_writer *pf;      /* protobuf: the encoder of the current part */
    FILE *spool;               /* a spool (spool.h): events kept aside */
    struct jw raw;             /* spool for JSON: events encoded, not yet in the spool */
    struct json_sink js;       /* JSON: the document's state */
};

void nsc_sink_part_path(const struct nsc_sink_opts *o, int k, char *buf, size_t n) {
    if (!o->split_bytes) {
        snprintf(buf, n, "%s", o->path);
        return;
    }
    /* the number goes before the format's extension, so each part keeps
     * the name its reader expects (.json, .json.gz, .pftrace, .pftrace.gz) */
    const char *p = o->path, *dot = strstr(p, ".json");
    if (!dot)
        dot = strstr(p, ".pftrace");
    if (!dot)
        dot = strstr(p, ".pb");
    if (!dot)
        dot = p + strlen(p);
    snprintf(buf, n, "%.*s-%03d%s", (int)(dot - p), p, k, dot);
}

static int begin_part(struct nsc_sink *s) {
    if (s->o.format == NSC_SINK_PERFETTO) {
        pf_close(s->pf);
        s->pf = pf_open(&s->w); /* interned strings and tracks start over */
        return s->pf ? 0 : -1;
    }
    json_sink_begin(&s->js, &s->w);
    return 0;
}

struct nsc_sink *nsc_sink_open(const struct nsc_sink_opts *o, char *err, size_t errlen) {
    struct nsc_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->o = *o;
    char path[4200];
    nsc_sink_part_path(o, 0, path, sizeof(path));
    if (jw_open_path(&s->w, path, o->inputs, o->ninputs, s->err, sizeof(s->err)) != 0) {
        snprintf(err, errlen, "cannot write %s", s->err);
        free(s);
        return NULL;
    }
    if (begin_part(s) != 0) {
        snprintf(err, errlen, "out of memory");
        jw_abort(&s->w);
        free(s);
        return NULL;
    }
    return s;
}

struct nsc_sink *nsc_sink_open_spool(FILE *f, enum nsc_sink_format format) {
    struct nsc_sink *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->spool = f;
    s->o.format = format;
    if (format == NSC_SINK_JSON) {
        /* encoded here, in parallel; every event begins with ",\n" (the
         * real sink drops the comma of a part's first event) */
        if (jw_open_mem(&s->raw) != 0) {
            free(s);
            return NULL;
        }
        json_sink_begin(&s->js, &s->raw);
        s->raw.len = 0; /* no document head: only events */
        s->js.first = 0;
    }
    return s;
}

FILE *nsc_sink_spool(const struct nsc_sink *s) { return s->spool; }

static void spool_failed(struct nsc_sink *s) {
    if (!s->failed)
        snprintf(s->err, sizeof(s->err), "a temporary file for -j cannot be written (use -j 1)");
    s->failed = 1;
}

static void spool_flush(struct nsc_sink *s) {
    if (s->raw.len && nsc_spool_raw(s->spool, s->raw.buf, s->raw.len) != 0)
        spool_failed(s);
    s->raw.len = 0;
}

int nsc_sink_spool_chain(struct nsc_sink *s, const struct nsc_chain_point *c) {
    spool_flush(s); /* the arrow goes after the events before it */
    if (nsc_spool_chain(s->spool, c) != 0)
        spool_failed(s);
    return s->failed ? -1 : 0;
}

int nsc_sink_close_spool(struct nsc_sink *s) {
    if (!s)
        return -1;
    if (s->o.format == NSC_SINK_JSON) {
        spool_flush(s);
        jw_close(&s->raw, NULL, 0);
    }
    int rc = s->failed || s->raw.error ? -1 : 0;
    free(s);
    return rc;
}

void nsc_sink_raw(struct nsc_sink *s, const char *p, size_t n) {
    if (s->pf || n < 2)
        return; /* JSON only (spools of a protobuf run hold typed events) */
    if (s->js.first) { /* the part's first event: no comma before it */
        jw_rawn(&s->w, "\n", 1);
        p += 2;
        n -= 2;
        s->js.first = 0;
    }
    jw_rawn(&s->w, p, n);
}

void nsc_sink_event(struct nsc_sink *s, const struct nsc_tev *e) {
    if (s->spool) {
        if (s->o.format == NSC_SINK_JSON) {
            json_sink_event(&s->js, e);
            if (s->raw.len >= (1u << 16))
                spool_flush(s);
        } else if (nsc_spool_event(s->spool, e) != 0) {
            spool_failed(s);
        }
        return;
    }
    if (s->pf)
        pf_event(s->pf, e);
    else
        json_sink_event(&s->js, e);
}

static void fail(struct nsc_sink *s, const char *fmt, const char *msg) {
    if (!s->failed) /* once: a full disk fails every part after */
        snprintf(s->err, sizeof(s->err), fmt, msg);
    s->failed = 1;
}

int nsc_sink_rotate(struct nsc_sink *s) {
    if (s->spool || !s->o.split_bytes || s->w.bytes + s->w.len < s->o.split_bytes)
        return 0;
    if (!s->pf)
        json_sink_end_part(&s->js, s->part);
    char err[1000];
    if (jw_close(&s->w, err, sizeof(err)) != 0)
        fail(s, "%s", err);
    char path[4200];
    nsc_sink_part_path(&s->o, ++s->part, path, sizeof(path));
    if (jw_open_path(&s->w, path, s->o.inputs, s->o.ninputs, err, sizeof(err)) != 0) {
        fail(s, "cannot write %s", err);
        jw_open(&s->w, NULL); /* discards (no file) until the end; reported */
        s->w.error = 1;
    }
    if (begin_part(s) != 0)
        fail(s, "%s", "out of memory");
    return 1;
}

const char *nsc_sink_error(struct nsc_sink *s) {
    if (!s->failed || s->err_taken)
        return NULL;
    s->err_taken = 1;
    return s->err;
}

uint64_t nsc_sink_bytes(const struct nsc_sink *s) { return s->w.bytes + s->w.len; }

int nsc_sink_parts(const struct nsc_sink *s) { return s->part + 1; }

int nsc_sink_finish(struct nsc_sink *s, const struct nsc_args *meta, uint64_t ts, char *err,
                    size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    if (s->pf) {
        struct nsc_tev e = {.k = NSC_TEV_INSTANT, .scope = 'p', .name = "ncclscope metadata",
                            .pid = 0, .ts = ts, .args = meta};
        pf_event(s->pf, &e);
    } else {
        json_sink_finish(&s->js, meta);
    }
    int rc = 0;
    if (s->failed) {
        jw_abort(&s->w); /* a part is missing: the last one is not worth keeping */
        if (!s->err_taken && err)
            snprintf(err, errlen, "%s", s->err);
        rc = -1;
    } else if (jw_close(&s->w, err, errlen) != 0) {
        rc = -1;
    }
    pf_close(s->pf);
    free(s);
    return rc;
}

void nsc_sink_abort(struct nsc_sink *s) {
    if (!s)
        return;
    jw_abort(&s->w);
    pf_close(s->pf);
    free(s);
}
