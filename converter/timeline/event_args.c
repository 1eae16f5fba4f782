// SPDX-License-Identifier: Apache-2.0
/* event_args.c - what an event's slice carries as arguments: its
 * descriptor (per event type, NCCL's field names), parent, rank, recorded
 * states; and the plugin's loss counts and the run's metadata. */
#include "timeline_int.h"

#include <stdio.h>
#include <string.h>

#include "decoded.h"
#include "desc_visit.h"
#include "event_types.h"
#include "nccl_abi.h"
#include "result.h"

static int file_of_pid(const struct nsc_timeline *t, const struct tl_file *f, uint32_t pid) {
    for (int i = 0; i < t->o.nfiles; i++)
        if (t->o.file_pids[i] == pid && strcmp(t->o.file_hosts[i], nsc_dec_session(f->dec)->host) == 0)
            return i;
    return -1;
}

/* py_caller: "file:line function" (the stack's first line), the whole
 * py_stack (frames joined by " | ") when it has more lines, and
 * py_caller_from "process" when the thread had no caller of its own.
 * Nothing without a stack. */
static void py_caller_args(struct nsc_args *a, const struct nsc_decoder *d, const struct nsc_rec *r) {
    uint32_t id = nsc_py_stack_id(r);
    const char *s = id ? nsc_decoder_str(d, id) : NULL;
    if (!s)
        return;
    const char *nl = strchr(s, '\n');
    char first[256];
    size_t n = nl ? (size_t)(nl - s) : strlen(s);
    if (n >= sizeof(first))
        n = sizeof(first) - 1;
    memcpy(first, s, n);
    first[n] = '\0';
    nsc_arg_scopy(a, "py_caller", first);
    if (nl) { /* one line per frame in the trace; " | " between them here, which
               * every output (JSON, protobuf args) keeps as it is */
        char stack[1024];
        size_t k = 0;
        for (const char *p = s; *p && k + 4 < sizeof(stack); p++) {
            if (*p == '\n') {
                memcpy(stack + k, " | ", 3);
                k += 3;
            } else {
                stack[k++] = *p;
            }
        }
        stack[k] = '\0';
        nsc_arg_scopy(a, "py_stack", stack);
    }
    if (r->h.flags & NSC_RF_PY_PROCESS)
        nsc_arg_s(a, "py_caller_from", "process");
}

struct field_args {
    struct nsc_timeline *t;
    struct nsc_args *a;
    const struct nsc_decoder *dec;
    const struct nsc_rec *r;
};

static void field_arg(void *ud, const struct nsc_desc_field *f) {
    struct field_args *fa = ud;
    switch (f->kind) {
    case NSC_DESC_U64: nsc_arg_u(fa->a, f->name, f->v.u); break;
    case NSC_DESC_I64: nsc_arg_i(fa->a, f->name, f->v.i); break;
    case NSC_DESC_STR_ID: nsc_arg_s(fa->a, f->name, nsc_decoder_str(fa->dec, (uint32_t)f->v.u)); break;
    case NSC_DESC_PTR: nsc_arg_hex(fa->a, f->name, f->v.u); break;
    case NSC_DESC_EVENT_ID:
        nsc_arg_u(fa->a, f->name, tl_out_id(fa->t, fa->t->f.index, f->v.u));
        break;
    case NSC_DESC_TEXT: nsc_arg_s(fa->a, f->name, f->v.text); break;
    case NSC_DESC_PY_STACK: py_caller_args(fa->a, fa->dec, fa->r); break;
    }
}

void tl_event_args(struct nsc_timeline *t, struct nsc_args *a, const struct nsc_event *e) {
    const struct tl_file *f = &t->f;
    const struct nsc_decoder *dec = f->dec;
    const struct nsc_rec *r = &e->start;
    const union nsc_desc *d = &r->u.start.d;
    const union nsc_ext *x = e->has_ext ? &e->ext.u.ext : NULL;
    nsc_arg_u(a, "id", tl_out_id(t, f->index, e->id));
    uint64_t parent = r->u.start.parent;
    if (parent && (r->h.flags & NSC_RF_FOREIGN_PARENT)) {
        int pf = file_of_pid(t, f, (uint32_t)d->proxy_op.pid);
        if (pf >= 0) {
            nsc_arg_u(a, "parent", tl_out_id(t, pf, parent));
        } else {
            struct jw *w = nsc_arg_json_begin(a, "foreign_parent");
            jw_raw(w, "{\"pid\":");
            jw_i64(w, d->proxy_op.pid);
            jw_raw(w, ",\"id\":");
            jw_u64(w, parent);
            jw_raw(w, "}");
            nsc_arg_json_end(a);
        }
    } else if (parent) {
        nsc_arg_u(a, "parent", tl_out_id(t, f->index, parent));
    }
    if (r->h.flags & NSC_RF_BAD_PARENT)
        nsc_arg_bool(a, "bad_parent", 1);
    const struct nsc_comm_info *ci = nsc_decoder_comm(dec, r->h.aux);
    if (ci)
        nsc_arg_i(a, "rank", ci->rank);
    /* The descriptor's fields, in the schema's order (nccl/event_schema.def
     * through reader/desc_visit.h), as typed arguments. */
    struct field_args fa = {t, a, dec, r};
    nsc_desc_visit(r, x, field_arg, &fa);
    if (r->h.etype == NSC_ET_COLL && ci)
        nsc_arg_hex(a, "commHash", ci->comm_id);
    if (e->nstates) {
        struct jw *w = nsc_arg_json_begin(a, "states");
        jw_raw(w, "[");
        for (uint32_t i = 0; i < e->nstates; i++) {
            const struct nsc_event_state *s = &e->states[i];
            const char *sn = nsc_state_name(s->state);
            jw_raw(w, i ? ",{\"state\":" : "{\"state\":");
            if (sn)
                jw_str(w, sn);
            else
                jw_u64(w, s->state);
            jw_raw(w, ",\"ts\":");
            jw_us(w, s->ns);
            if (s->state == NSC_ABI_KERNEL_CH_STOP || s->state == NSC_ABI_KERNEL_PHASE_STOP) {
                jw_key(w, "pTimer");
                jw_u64(w, s->arg);
            } else if (s->arg) {
                jw_key(w, "value");
                jw_u64(w, s->arg);
            }
            jw_raw(w, "}");
        }
        jw_raw(w, "]");
        nsc_arg_json_end(a);
    }
    if (e->states_dropped)
        nsc_arg_u(a, "states_not_shown", e->states_dropped);
}

void tl_losses_args(struct nsc_args *a, const struct nsc_losses *l, const struct nsc_stats_header *h,
                    uint64_t unnamed) {
    nsc_arg_u(a, "lost_records", l->total);
    nsc_arg_u(a, "lost_write_records", l->write);
    nsc_arg_u(a, "lost_exit_records", l->exit);
    nsc_arg_u(a, "write_errors", h->write_errors);
    nsc_arg_i(a, "write_errno", h->write_errno);
    nsc_arg_s(a, "write_error", h->write_errno ? nsc_errno_name(h->write_errno) : NULL);
    nsc_arg_u(a, "string_overflow", h->string_overflow);
    nsc_arg_u(a, "unnamed_events", unnamed);
    nsc_arg_u(a, "comm_overflow", h->comm_overflow);
    nsc_arg_u(a, "memory_peak_bytes", h->memory_peak);
    nsc_arg_u(a, "memory_budget_bytes", h->memory_budget);
}

/* One file's object in the metadata's "files" list, as JSON text (a nested
 * value: the protobuf output carries it as legacy JSON too). */
static void file_meta_json(struct jw *w, const struct nsc_file_meta *f, int idx, int detail) {
    const struct nsc_session *s = &f->session;
    const struct nsc_losses *l = &f->losses;
    const struct nsc_stats_header *h = &f->stats;
#define U(k, v) (jw_key(w, k), jw_u64(w, v))
    jw_raw(w, idx ? ",\n{" : "\n{");
    jw_raw(w, "\"file\":");
    jw_str(w, f->path);
    jw_raw(w, ",\"host\":");
    jw_str(w, s->host);
    U("pid", s->pid);
    U("format_version", s->format_version);
    U("api_version", s->api_version);
    jw_key(w, "plugin_version");
    jw_str(w, s->plugin_version);
    char mask[256];
    jw_key(w, "event_mask");
    jw_str(w, nsc_mask_format(s->event_mask, mask, sizeof(mask)));
    jw_key(w, "clock");
    jw_str(w, s->clock_source == NSC_CLOCK_TSC ? "tsc" : "monotonic");
    U("ring_records", s->ring_records);
    U("records", f->records);
    U("dropped_records", f->dropped);
    U("lost_records", l->total);
    U("lost_write_records", l->write);
    U("lost_exit_records", l->exit);
    U("write_errors", h->write_errors);
    jw_key(w, "write_errno");
    jw_i64(w, h->write_errno);
    jw_key(w, "write_error");
    jw_str(w, h->write_errno ? nsc_errno_name(h->write_errno) : NULL);
    U("string_overflow", h->string_overflow);
    U("unnamed_events", f->unnamed_events);
    U("comm_overflow", h->comm_overflow);
    U("memory_peak_bytes", h->memory_peak);
    U("memory_budget_bytes", h->memory_budget);
    U("complete", (uint64_t)f->ended);
    jw_key(w, "shift_ns");
    jw_i64(w, f->shift_ns);
    U("operations_drawn", f->counts.ops_drawn);
    U("operations_async", f->counts.ops_async);
    U("gpu_impossible_intervals", f->counts.gpu_impossible);
    U("gpu_starts_before_enqueue", f->counts.gpu_before_enqueue);
    if (!detail) { /* the default layout's operations tracks (ops_track.c) */
        U("operations_estimated", f->counts.ops_estimated);
        U("operation_tracks_max", f->counts.ops_lanes);
        U("kernelch_not_drawn", f->counts.kernelch_not_drawn);
    }
    if (f->have_py) {
        U("python_calls", f->py_calls);
        U("python_calls_not_recorded", f->py_skipped); /* per-function rate limit */
        U("python_exits_without_call", f->py_unmatched);
    }
    if (f->replayed)
        jw_raw(w, ",\"replayed\":true");
    jw_raw(w, ",\"gpu_clocks\":[");
    int firstg = 1;
    for (uint32_t k = 0; k < f->ngpu; k++) {
        if (!f->gpu[k].have)
            continue;
        char buf[200];
        snprintf(buf, sizeof(buf),
                 "%s{\"comm_serial\":%u,\"offset_ns\":%lld,\"kernels\":%llu,"
                 "\"median_notice_delay_ns\":%llu,\"impossible\":%llu}",
                 firstg ? "" : ",", k, (long long)f->gpu[k].offset_ns,
                 (unsigned long long)f->gpu[k].kernels,
                 (unsigned long long)f->gpu[k].median_delay_ns,
                 (unsigned long long)f->gpu[k].impossible);
        jw_raw(w, buf);
        firstg = 0;
    }
    jw_raw(w, "]");
    jw_raw(w, ",\"threads\":[");
    for (uint32_t i = 0; i < f->ntstats; i++) {
        const struct nsc_thread_stats *t = &f->tstats[i];
        jw_raw(w, i ? ",{\"thread\":" : "{\"thread\":");
        jw_u64(w, t->thread);
        U("tid", t->tid);
        U("records", t->records);
        U("drops_ring", t->drops_ring);
        U("drops_events", t->drops_events);
        jw_raw(w, "}");
    }
    jw_raw(w, "]}");
#undef U
}

void nsc_timeline_run_meta(struct nsc_args *a, const struct nsc_run_meta *m) {
    struct jw *w = nsc_arg_json_begin(a, "files");
    jw_raw(w, "[");
    int idx = 0;
    for (int i = 0; i < m->nfiles; i++)
        if (m->files[i].path)
            file_meta_json(w, &m->files[i], idx++, m->detail);
    jw_raw(w, "]");
    nsc_arg_json_end(a);
    nsc_arg_s(a, "layout", m->detail ? "detail" : "default");
    nsc_arg_u(a, "unfinished_events", m->unfinished);
    nsc_arg_u(a, "parts", m->parts);
    nsc_arg_u(a, "filtered_out", m->filtered);
    nsc_arg_u(a, "flows", m->flows);
    nsc_arg_u(a, "collective_chains_not_linked", m->chains_not_linked);
    w = nsc_arg_json_begin(a, "orphan_records_by_type");
    jw_raw(w, "{");
    int first_t = 1;
    for (unsigned k = 0; k < NSC_ET_COUNT; k++)
        if (m->orphans_by_type[k]) {
            jw_raw(w, first_t ? "\"" : ",\"");
            jw_raw(w, nsc_etype_name(k));
            jw_raw(w, "\":");
            jw_u64(w, m->orphans_by_type[k]);
            first_t = 0;
        }
    jw_raw(w, "}");
    nsc_arg_json_end(a);
    nsc_arg_u(a, "lost_records", m->lost);
    nsc_arg_u(a, "dropped_records", m->dropped);
    nsc_arg_u(a, "lost_write_records", m->lost_write);
    nsc_arg_u(a, "lost_exit_records", m->lost_exit);
    nsc_arg_u(a, "unnamed_events", m->unnamed);
    nsc_arg_u(a, "orphan_records", m->orphans);
    nsc_arg_u(a, "damaged", m->damaged);
}
