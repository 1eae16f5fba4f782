// SPDX-License-Identifier: Apache-2.0
/* json_sink.c - Chrome trace JSON (json_sink.h). */
#include "json_sink.h"

static const char *const doc_head = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";

void json_sink_begin(struct json_sink *j, struct jw *w) {
    j->w = w;
    j->first = 1;
    jw_raw(w, doc_head);
}

static void begin_event(struct json_sink *j) {
    jw_raw(j->w, j->first ? "\n" : ",\n");
    j->first = 0;
}

void json_sink_event(struct json_sink *j, const struct nsc_tev *e) {
    struct jw *w = j->w;
    begin_event(j);
    switch (e->k) {
    case NSC_TEV_PROCESS:
        jw_raw(w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
        jw_u64(w, e->pid);
        jw_raw(w, ",\"args\":{\"name\":");
        jw_str(w, e->name);
        jw_raw(w, "}}");
        if (e->sort) {
            begin_event(j);
            jw_raw(w, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
            jw_u64(w, e->pid);
            jw_raw(w, ",\"args\":{\"sort_index\":");
            jw_u64(w, e->sort);
            jw_raw(w, "}}");
        }
        return;
    case NSC_TEV_THREAD:
        jw_raw(w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        jw_u64(w, e->pid);
        jw_raw(w, ",\"tid\":");
        jw_u64(w, e->tid);
        jw_raw(w, ",\"args\":{\"name\":");
        jw_str(w, e->name);
        jw_raw(w, "}}");
        if (e->sort) {
            begin_event(j);
            jw_raw(w, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":");
            jw_u64(w, e->pid);
            jw_raw(w, ",\"tid\":");
            jw_u64(w, e->tid);
            jw_raw(w, ",\"args\":{\"sort_index\":");
            jw_u64(w, e->sort);
            jw_raw(w, "}}");
        }
        return;
    case NSC_TEV_COUNTER:
        jw_raw(w, "{\"ph\":\"C\",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"pid\":");
        jw_u64(w, e->pid);
        if (e->has_tid) {
            jw_raw(w, ",\"tid\":");
            jw_u64(w, e->tid);
        }
        jw_raw(w, ",\"ts\":");
        jw_us(w, e->ts);
        jw_raw(w, ",\"args\":{\"");
        jw_raw(w, e->ckey);
        jw_raw(w, "\":");
        jw_i64(w, e->cval);
        jw_raw(w, "}}");
        return;
    case NSC_TEV_FLOW_OUT:
    case NSC_TEV_FLOW_IN:
        jw_raw(w, e->k == NSC_TEV_FLOW_OUT ? "{\"ph\":\"s\",\"cat\":\"flow\",\"name\":"
                                           : "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"id\":");
        jw_u64(w, e->id);
        break;
    case NSC_TEV_SLICE:
        jw_raw(w, "{\"ph\":\"X\",\"cat\":");
        jw_str(w, e->cat);
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        break;
    case NSC_TEV_ASYNC:
        /* the end first (complete), then the begin, which takes the args */
        jw_raw(w, "{\"ph\":\"e\",\"cat\":");
        jw_str(w, e->cat);
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"id\":");
        jw_u64(w, e->id);
        jw_raw(w, ",\"pid\":");
        jw_u64(w, e->pid);
        jw_raw(w, ",\"tid\":");
        jw_u64(w, e->tid);
        jw_raw(w, ",\"ts\":");
        jw_us(w, e->ts + e->dur);
        jw_raw(w, "}");
        begin_event(j);
        jw_raw(w, "{\"ph\":\"b\",\"cat\":");
        jw_str(w, e->cat);
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        jw_raw(w, ",\"id\":");
        jw_u64(w, e->id);
        break;
    case NSC_TEV_INSTANT:
        jw_raw(w, e->scope == 'p' ? "{\"ph\":\"i\",\"s\":\"p\"" : "{\"ph\":\"i\",\"s\":\"t\"");
        if (e->cat) {
            jw_raw(w, ",\"cat\":");
            jw_str(w, e->cat);
        }
        jw_raw(w, ",\"name\":");
        jw_str(w, e->name);
        break;
    }
    jw_raw(w, ",\"pid\":");
    jw_u64(w, e->pid);
    jw_raw(w, ",\"tid\":");
    jw_u64(w, e->tid);
    jw_raw(w, ",\"ts\":");
    jw_us(w, e->ts);
    if (e->k == NSC_TEV_SLICE) {
        jw_raw(w, ",\"dur\":");
        jw_us(w, e->dur);
    }
    if (e->args) {
        jw_raw(w, ",\"args\":{");
        nsc_args_write_json(e->args, w);
        jw_raw(w, "}");
    }
    jw_raw(w, "}");
}

void json_sink_end_part(struct json_sink *j, int part) {
    jw_raw(j->w, "\n],\"metadata\":{\"ncclscope\":{\"part\":");
    jw_u64(j->w, (uint64_t)part);
    jw_raw(j->w, ",\"continued\":true}}}\n");
}

void json_sink_finish(struct json_sink *j, const struct nsc_args *meta) {
    jw_raw(j->w, "\n],\"metadata\":{\"ncclscope\":{");
    nsc_args_write_json(meta, j->w);
    jw_raw(j->w, "}}}\n");
}
