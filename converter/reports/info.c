// SPDX-License-Identifier: Apache-2.0
/* info.c - trace file summary. */
#include "info.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "block_payload.h"
#include "decoded.h"
#include "event_types.h"
#include "result.h"
#include "trace_decode.h"

struct info {
    FILE *out;
    uint64_t per_type[NSC_ET_COUNT];
    uint64_t kinds[8];
    uint64_t ext;         /* EXT records joined to their START (delivered with it) */
    struct nsc_stats_header stats;
    struct nsc_thread_stats *ts;
    uint32_t nts;
    int errors;
    uint64_t ops, sampled; /* Coll/P2p STARTs, and those whose enqueue asked for KernelCh */
    FILE *marks;          /* the first marks' lines */
    unsigned nmarks_shown;
    /* HANG blocks: the watchdog's, the suspect level's; the latest
     * suspects (what the process suspected last) */
    uint64_t hang_blocks, suspect_blocks;
    struct nsc_hang_suspect suspects[8];
    uint32_t nsuspects, suspects_all, suspect_seconds;
};

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    (void)thread;
    struct info *in = ud;
    in->ext += ext != NULL;
    if (r->h.kind < 8)
        in->kinds[r->h.kind]++;
    if (r->h.kind == NSC_REC_MARK && in->marks && in->nmarks_shown < 20) {
        const char *text = nsc_decoder_str(d, r->h.aux);
        fprintf(in->marks, "  #%" PRIu64 " \"%s\"\n", r->u.state.arg, text ? text : "?");
        in->nmarks_shown++;
    }
    if (r->h.kind == NSC_REC_START && r->h.etype < NSC_ET_COUNT)
        in->per_type[r->h.etype]++;
    if (r->h.kind == NSC_REC_START && (r->h.etype == NSC_ET_COLL || r->h.etype == NSC_ET_P2P)) {
        const struct nsc_session *s = nsc_dec_session(d);
        in->ops++;
        in->sampled += nsc_op_sampled(s->format_version, s->event_mask, r->h.flags) != 0;
    }
}

static void on_stats(void *ud, struct nsc_decoder *d, const struct nsc_stats_header *h,
                     const struct nsc_thread_stats *t) {
    (void)d;
    struct info *in = ud;
    in->stats = *h;
    free(in->ts);
    in->ts = malloc((h->nthreads + 1) * sizeof(*t));
    in->nts = in->ts ? h->nthreads : 0;
    if (in->ts)
        memcpy(in->ts, t, h->nthreads * sizeof(*t));
}

static void on_hang(void *ud, struct nsc_decoder *d, const void *data, size_t len) {
    struct info *in = ud;
    struct nsc_hang_view v;
    const char *why;
    if (nsc_hang_decode(data, len, &v, &why) != 0) {
        in->errors++;
        fprintf(stderr, "ncclscope info: %s: %s\n", nsc_decoder_path(d), why);
        return;
    }
    if (!v.h.nsuspects) {
        in->hang_blocks++;
        return;
    }
    in->suspect_blocks++;
    in->suspects_all = v.h.nsuspects;
    in->suspect_seconds = v.h.suspect_seconds;
    in->nsuspects = v.h.nsuspects < 8 ? v.h.nsuspects : 8;
    for (uint32_t k = 0; k < in->nsuspects; k++)
        nsc_hang_suspect_at(&v, k, &in->suspects[k]);
}

static void on_error(void *ud, struct nsc_decoder *d, const char *msg) {
    (void)d;
    struct info *in = ud;
    in->errors++;
    fprintf(stderr, "ncclscope info: %s\n", msg);
}

int nsc_info(const char *path, FILE *out) {
    struct nsc_decoder d;
    enum nsc_result orc = nsc_decoder_open(&d, path);
    if (orc != NSC_OK) {
        fprintf(stderr, "ncclscope info: %s\n", nsc_decoder_error(&d));
        return orc == NSC_E_IO ? 3 : 2; /* unreadable, or not a (known) trace */
    }
    struct info in;
    memset(&in, 0, sizeof(in));
    in.out = out;
    char *marks_text = NULL;
    size_t marks_len = 0;
    in.marks = open_memstream(&marks_text, &marks_len);
    struct nsc_decode_ops ops = {.record = on_record, .stats = on_stats, .error = on_error,
                                 .hang = on_hang};
    nsc_decoder_run(&d, &ops, &in);
    const struct nsc_session *s = nsc_decoder_session(&d);
    struct nsc_decode_counts dc;
    nsc_decoder_counts(&d, &dc);
    char mask[256];
    fprintf(out, "file            %s (%" PRIu64 " bytes, %" PRIu64 " blocks, %" PRIu64 " chunks)\n",
            path, dc.file_size, dc.blocks, dc.chunks);
    if (s) {
        fprintf(out, "format          version %u, written by ncclscope %s\n", s->format_version,
                s->plugin_version);
        if (nsc_session_replayed(s))
            fprintf(out, "replayed        by ncclscope replay: host times are the replay's, GPU "
                         "timers the recording's\n");
        fprintf(out, "process         host %s pid %u\n", s->host, s->pid);
        if (s->api_version == NSC_SESSION_API_NONE)
            fprintf(out, "NCCL API        none (the Python package's session; no NCCL "
                         "communicator took part)\n");
        else
            fprintf(out, "NCCL API        v%u\n", s->api_version);
        fprintf(out, "events          %s\n", nsc_mask_format(s->event_mask, mask, sizeof(mask)));
        fprintf(out, "clock           %s, %" PRIu64 " ticks/s\n",
                s->clock_source == NSC_CLOCK_TSC ? "tsc" : "monotonic", s->ticks_per_sec);
        fprintf(out, "ring            %u records/thread, max %u threads, flush every %u ms\n",
                s->ring_records, s->max_threads, s->flush_ms);
    } else {
        fprintf(out, "session         (no session block)\n");
    }
    fprintf(out, "closed cleanly  %s\n", nsc_decoder_ended(&d) ? "yes" : "no (process ended without finalize, or killed)");
    fprintf(out, "comms           %s\n", dc.comm_slots ? "" : "none");
    for (uint32_t i = 1; i < dc.comm_slots; i++) {
        const struct nsc_comm_info *c = nsc_decoder_comm(&d, i);
        if (c)
            fprintf(out, "  #%u rank %d of %d, %d node(s), commId %016" PRIx64 " name \"%s\"\n",
                    c->serial, c->rank, c->nranks, c->nnodes, c->comm_id, c->name);
    }
    fprintf(out, "records         %" PRIu64 " (start %" PRIu64 ", stop %" PRIu64 ", state %" PRIu64 ")\n",
            dc.records, in.kinds[NSC_REC_START], in.kinds[NSC_REC_STOP], in.kinds[NSC_REC_STATE]);
    /* The threads' "records in file" count every record the file holds; the
     * line above counts them as read (a START and its EXT are one, an EXT
     * whose START was dropped is none): without this line the two did not
     * add up (8,020 vs 8,220 on h200x2_mixed_64KiB) and nothing said why. */
    uint64_t in_file = 0;
    for (uint32_t i = 0; i < nsc_decoder_nthreads(&d); i++)
        in_file += nsc_decoder_thread(&d, i)->records;
    /* EXTs without their START (dropped before it was written) */
    uint64_t orphan = in_file > dc.records + in.ext ? in_file - dc.records - in.ext : 0;
    fprintf(out, "in file         %" PRIu64 " records: these, %" PRIu64
                 " EXT (the rest of a START's descriptor)", in_file, in.ext);
    if (orphan)
        fprintf(out, ", %" PRIu64 " EXT whose START is not in the file", orphan);
    fprintf(out, "\n");
    fprintf(out, "events by type ");
    int any = 0;
    for (unsigned i = 0; i < NSC_ET_COUNT; i++)
        if (in.per_type[i]) {
            fprintf(out, " %s=%" PRIu64, nsc_etype_name(i), in.per_type[i]);
            any = 1;
        }
    fprintf(out, "%s\n", any ? "" : " none");
    /* Format 4 says per operation whether KernelCh was asked for: with
     * NCCLSCOPE_KERNEL_SAMPLE only some have GPU times of their own. */
    if (s && s->format_version >= 4 && (s->event_mask >> NSC_ET_KERNEL_CH) & 1)
        fprintf(out, "KernelCh sampled: %" PRIu64 " of %" PRIu64 " operations%s\n", in.sampled,
                in.ops,
                in.sampled < in.ops ? " (GPU time and completion of their own; "
                                      "NCCLSCOPE_KERNEL_SAMPLE)"
                                    : " (every one)");
    /* "written" is the plugin's count (the thread's ring); the flusher
     * adds THREAD records naming the thread (engine/file_out.c eng_write_threads) */
    fprintf(out, "threads         in file: all its records, EXT and THREAD included; written: what\n"
                 "                the plugin put in its ring (not the THREAD records the file adds)\n");
    uint64_t drops = in.stats.drops_no_thread;
    for (uint32_t i = 0; i < nsc_decoder_nthreads(&d); i++) {
        const struct nsc_dthread *t = nsc_decoder_thread(&d, i);
        if (!t->known && !t->records)
            continue;
        const struct nsc_thread_stats *st = NULL;
        for (uint32_t k = 0; k < in.nts; k++)
            if (in.ts[k].thread == i)
                st = &in.ts[k];
        fprintf(out, "  #%u tid %u \"%s\": %" PRIu64 " records in file", i, t->tid, t->name,
                t->records);
        if (st) {
            fprintf(out, ", %" PRIu64 " written, %" PRIu64 " dropped (%" PRIu64 " events lost)",
                    st->records, st->drops_ring, st->drops_events);
            drops += st->drops_ring;
        }
        fprintf(out, "\n");
    }
    const struct nsc_losses *l = nsc_dec_losses(&d);
    const struct nsc_stats_header *h = nsc_dec_stats(&d);
    int v3 = dc.format_version >= 3;
    fprintf(out, "dropped         %" PRIu64 " records (%" PRIu64 " from threads over the limit)\n",
            drops, in.stats.drops_no_thread);
    fprintf(out, "lost            %" PRIu64 " records in all: %" PRIu64 " dropped, %" PRIu64
                 " to write errors, %" PRIu64 " still in memory at exit%s\n",
            l->total, l->dropped, l->write, l->exit,
            v3 ? "" : " (this format version records drops only)");
    if (h->write_errors || h->lost_write || h->write_errno) {
        const char *en = nsc_errno_name(h->write_errno);
        fprintf(out, "write errors    %u failed writes", h->write_errors);
        if (h->write_errno)
            fprintf(out, ", the last: %s (errno %d, %s)\n", en ? en : "?", h->write_errno,
                    strerror(h->write_errno));
        else
            fprintf(out, "; writing resumed after them\n");
    }
    fprintf(out, "strings         %" PRIu64 " past the plugin's table; %" PRIu64
                 " events name one and show \"?\"\n",
            h->string_overflow, dc.unnamed_events);
    if (v3) {
        fprintf(out, "comms lost      %" PRIu64 " descriptions not kept\n", h->comm_overflow);
        fprintf(out, "record memory   peak %.1f MiB of a %.1f MiB budget\n",
                (double)h->memory_peak / 1048576.0, (double)h->memory_budget / 1048576.0);
    }
    fprintf(out, "invalid calls   %" PRIu64 " unknown contexts, %" PRIu64 " unknown handles\n",
            in.stats.invalid_context, in.stats.invalid_handle);
    if (in.stats.chain_lost)
        fprintf(out, "chained plugin  %" PRIu64 " calls without its handle (table slot reused)\n",
                in.stats.chain_lost);
    if (in.stats.header_size >= offsetof(struct nsc_stats_header, chain_lost) &&
        (in.stats.segment || in.stats.segments_deleted))
        fprintf(out, "segment         %u; %u older segment(s) deleted (%" PRIu64 " bytes, %" PRIu64
                " records)\n", in.stats.segment, in.stats.segments_deleted, in.stats.bytes_deleted,
                in.stats.records_deleted);
    if (in.stats.writer_fallback)
        fprintf(out, "writer          the job's own threads (%s could not be started): a stalled "
                     "directory could hold the job's exit\n", "ncclscope-writer");
    if (in.marks)
        fclose(in.marks);
    if (in.kinds[NSC_REC_MARK])
        fprintf(out, "marks           %" PRIu64 "\n%s", in.kinds[NSC_REC_MARK], marks_text ? marks_text : "");
    free(marks_text);
    if (in.hang_blocks || in.suspect_blocks)
        fprintf(out, "hang blocks     %" PRIu64 " of the watchdog (NCCLSCOPE_HANG_SECONDS), %" PRIu64
                " of the suspect level (NCCLSCOPE_SUSPECT_SECONDS)%s\n",
                in.hang_blocks, in.suspect_blocks,
                in.suspect_blocks ? "; the latest suspects:" : "");
    for (uint32_t k = 0; k < in.nsuspects; k++) {
        const struct nsc_hang_suspect *hs = &in.suspects[k];
        fprintf(out, "  comm %016" PRIx64 " rank %d: %s seqNumber %" PRIu64
                " not entered by rank(s) ", hs->comm_id, hs->rank, hs->func, hs->seq);
        uint32_t shown = hs->nmissing < NSC_HANG_SUSPECT_RANKS ? hs->nmissing : NSC_HANG_SUSPECT_RANKS;
        for (uint32_t r = 0; r < shown; r++)
            fprintf(out, "%s%d", r ? ", " : "", hs->missing[r]);
        if (hs->nmissing > shown)
            fprintf(out, " and %u more", hs->nmissing - shown);
        fprintf(out, " %u s after this rank (%u of %u ranks known; NCCLSCOPE_SUSPECT_SECONDS=%u)\n",
                hs->waited_s, hs->nknown, hs->nranks, in.suspect_seconds);
    }
    if (in.suspects_all > in.nsuspects)
        fprintf(out, "  and %u more\n", in.suspects_all - in.nsuspects);
    fprintf(out, "damage          %s\n", in.errors ? "yes (see messages above)" : "none");
    free(in.ts);
    nsc_decoder_close(&d);
    return in.errors ? 2 : 0;
}
