// SPDX-License-Identifier: Apache-2.0
/* file_out.c - the blocks both output modes write besides chunks: STATS,
 * STRINGS, COMMS, THREAD records, HANG; and the accounting of chunks that
 * could not be kept. Called by the compressor whose turn it is only. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "block_payload.h"
#include "comm_table.h"
#include "counters.h"
#include "engine_int.h"
#include "intern.h"
#include "log.h"
#include "page_pool.h"
#include "thread_state.h"

void eng_session_now(const struct engine *f, struct nsc_session *s) {
    *s = f->session;
    /* ACQUIRE: pairs with nsc_engine_nccl_joined's RELEASE; the mask was
     * stored before the version */
    uint32_t api = atomic_load_explicit(&f->nccl_api, memory_order_acquire);
    if (api) {
        s->api_version = api;
        s->event_mask = atomic_load_explicit(&f->nccl_mask, memory_order_relaxed);
    }
}

int eng_open_file(struct engine *f) {
    struct nsc_session s;
    eng_session_now(f, &s);
    if (nsc_writer_open(&f->w, &s) != 0)
        return -1;
    f->file_api = s.api_version;
    return 0;
}

/* Before each chunk: NCCL's init stored its version before its first
 * record, and this chunk was drained after that record's ring publication
 * (then handed over under f->mu): a chunk with NCCL records always finds
 * the version here, so the SESSION says it before they are in the file. */
void eng_session_refresh(struct engine *f) {
    if (f->w.fd < 0)
        return;
    struct nsc_session s;
    eng_session_now(f, &s);
    if (s.api_version == f->file_api)
        return;
    if (nsc_writer_rewrite_session(&f->w, &s) != 0) { /* counted; the file keeps the old one */
        atomic_fetch_add_explicit(&f->write_errors, 1, memory_order_relaxed);
        atomic_store_explicit(&f->write_errno, f->w.last_errno, memory_order_relaxed);
        nsc_log_warn("ncclscope: cannot record NCCL's API version v%u in %s: %s", s.api_version,
                     f->w.path, strerror(f->w.last_errno));
    }
    f->file_api = s.api_version;
}

/* Atomic loads and plain reads only, no call that is not: the crash
 * handler fills its STATS with these too (crash_dump.c). */
void eng_stats_header(const struct engine *f, struct nsc_stats_header *sh, uint32_t n) {
    memset(sh, 0, sizeof(*sh));
    struct nsc_thread *sent = nsc_thread_sentinel();
    sh->nthreads = n;
    sh->header_size = sizeof(*sh);
    sh->drops_no_thread = atomic_load_explicit(&sent->drops_ring, memory_order_relaxed);
    sh->invalid_context = atomic_load_explicit(&nsc_counters.invalid_context, memory_order_relaxed);
    sh->invalid_handle = atomic_load_explicit(&nsc_counters.invalid_handle, memory_order_relaxed);
    sh->string_overflow = nsc_intern_overflows();
    sh->lost_write = atomic_load_explicit(&f->lost_write, memory_order_relaxed);
    sh->lost_exit = atomic_load_explicit(&f->lost_exit, memory_order_relaxed);
    sh->comm_overflow = nsc_comm_overflows();
    sh->memory_peak = (uint64_t)page_pool_peak() * NSC_PAGE_BYTES +
                      (uint64_t)f->njobs * 0; /* pages; job buffers are fixed (memory_budget) */
    sh->memory_budget = (uint64_t)f->cfg.memory_mb << 20;
    sh->write_errno = atomic_load_explicit(&f->write_errno, memory_order_relaxed);
    sh->write_errors = atomic_load_explicit(&f->write_errors, memory_order_relaxed);
    sh->chain_lost = atomic_load_explicit(&nsc_counters.chain_lost, memory_order_relaxed);
    sh->segment = f->w.rotate ? f->w.segment : 0;
    sh->segments_deleted = f->segs.deleted;
    sh->bytes_deleted = f->segs.bytes_deleted;
    sh->records_deleted = f->segs.records_deleted;
    sh->writer_fallback = f->wp.pid == 0;
}

void eng_thread_stats(uint32_t i, struct nsc_thread_stats *ts) {
    struct nsc_thread *t = nsc_thread_at(i);
    ts->thread = i;
    ts->tid = atomic_load_explicit(&t->tid, memory_order_relaxed);
    ts->records = atomic_load_explicit(&t->ring.head, memory_order_relaxed);
    ts->drops_ring = atomic_load_explicit(&t->drops_ring, memory_order_relaxed);
    ts->drops_events = atomic_load_explicit(&t->drops_events, memory_order_relaxed);
}

void eng_stats_block(struct engine *f) {
    uint32_t n = nsc_thread_count();
    size_t len = nsc_stats_size(n);
    unsigned char *buf = calloc(1, len);
    if (!buf)
        return;
    struct nsc_stats_header *sh = (struct nsc_stats_header *)buf;
    struct nsc_thread_stats *ts = (struct nsc_thread_stats *)(sh + 1);
    eng_stats_header(f, sh, n);
    for (uint32_t i = 0; i < n; i++)
        eng_thread_stats(i, &ts[i]);
    nsc_writer_block(&f->w, NSC_BLK_STATS, buf, len, 1);
    free(buf);
}

int eng_write_strings(struct engine *f, uint32_t upto) {
    unsigned char buf[65536];
    /* Entries below nsc_intern_count() are immutable (intern.h): no lock. */
    while (f->strings_written < upto) {
        uint32_t id = f->strings_written;
        size_t len = nsc_strings_encode(buf, sizeof(buf), &id, upto, nsc_intern_text);
        if (len && nsc_writer_block(&f->w, NSC_BLK_STRINGS, buf, len, 1) != 0)
            return -1;
        f->strings_written = id;
    }
    return 0;
}

/* Takes the comm descriptions registered so far into the pending list,
 * where they stay until a COMMS block reaches the file: a description is
 * never lost with a failed write. Only the compressor whose turn it is calls
 * this (the comm table's single taker). */
void eng_take_comms(struct engine *f) {
    for (;;) {
        if (f->pending_cap - f->npending < 256) {
            unsigned cap = f->pending_cap ? f->pending_cap * 2 : 256;
            struct nsc_comm_info *c = realloc(f->pending_comms, cap * sizeof(*c));
            if (!c)
                return; /* they stay in the comm table until the next job */
            f->pending_comms = c;
            f->pending_cap = cap;
        }
        unsigned n = nsc_comm_take_pending(f->pending_comms + f->npending, f->pending_cap - f->npending);
        void (*comms)(const struct nsc_comm_info *, unsigned) =
            atomic_load_explicit(&eng_hooks.comms, memory_order_relaxed);
        if (comms) /* hook: an observer's comm labels (RELAXED: engine.h) */
            comms(f->pending_comms + f->npending, n);
        f->npending += n;
        if (n == 0)
            return;
    }
}

int eng_write_comms(struct engine *f) {
    unsigned done = 0;
    while (done < f->npending) {
        unsigned k = f->npending - done < 1024 ? f->npending - done : 1024;
        if (nsc_writer_block(&f->w, NSC_BLK_COMMS, f->pending_comms + done, k * sizeof(struct nsc_comm_info), 1) != 0) {
            memmove(f->pending_comms, f->pending_comms + done, (f->npending - done) * sizeof(struct nsc_comm_info));
            f->npending -= done;
            return -1;
        }
        done += k;
    }
    if (f->recent) /* hook: rotation repeats them in the next segment */
        for (unsigned i = 0; i < f->npending; i++)
            f->recent[f->nrecent++ % RECENT_COMMS] = f->pending_comms[i];
    f->npending = 0;
    return 0;
}

/* A new segment (or a flight dump) repeats what its records may refer to: the descriptions
 * written recently and those of every open comm (strings are written again
 * from id 1 by write_job, threads by write_threads). */
void eng_describe_again(struct engine *f) {
    unsigned n = f->nrecent < RECENT_COMMS ? f->nrecent : RECENT_COMMS;
    unsigned need = f->npending + n + NSC_MAX_COMMS;
    if (f->pending_cap < need) {
        struct nsc_comm_info *c = realloc(f->pending_comms, need * sizeof(*c));
        if (!c)
            return;
        f->pending_comms = c;
        f->pending_cap = need;
    }
    /* oldest first: a later entry with the same serial replaces an earlier one */
    for (unsigned i = 0; i < n; i++)
        f->pending_comms[f->npending++] = f->recent[(f->nrecent - n + i) % RECENT_COMMS];
    f->npending += nsc_comm_describe_open(f->pending_comms + f->npending, NSC_MAX_COMMS);
    f->threads_due = 1;
}

/* Every live writer thread's THREAD record (tid, name), at the segment's
 * start, so its records are named without the segment that held the
 * thread's first record. */
void eng_write_threads(struct engine *f, uint64_t ticks) {
    uint32_t n = nsc_thread_count();
    size_t cap = (size_t)n * (sizeof(struct nsc_packed_segment) + NSC_PACK_MAX);
    unsigned char *buf = n ? malloc(cap) : NULL;
    if (!buf)
        return;
    unsigned char *p = buf;
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_rec r;
        memset(&r, 0, sizeof(r));
        r.h.kind = NSC_REC_THREAD;
        r.h.ticks = ticks;
        if (!nsc_thread_describe(i, &r.h.aux, r.u.thread_name))
            continue;
        struct nsc_pack_state st;
        nsc_pack_reset(&st);
        unsigned char *q = nsc_pack_record(&st, &r, p + sizeof(struct nsc_packed_segment));
        struct nsc_packed_segment seg = {.thread = i, .nrecords = 1,
                                         .nbytes = (uint32_t)(q - p - sizeof(seg))};
        memcpy(p, &seg, sizeof(seg));
        p = q;
    }
    if (p > buf && (size_t)(p - buf) <= NSC_WRITER_SMALL_MAX)
        nsc_writer_block(&f->w, NSC_BLK_PACKED, buf, (size_t)(p - buf), 1);
    free(buf);
}

/* HANG blocks from the watchdog's hook (engine.h): those not written yet
 * (the watchdog's and the suspect level's), or (dump) the latest of each
 * for a flight dump, the suspect level's first. */
void eng_hang_block(struct engine *f, int dump) {
    unsigned char *(*take)(int, size_t *) =
        atomic_load_explicit(&eng_hooks.hang_take, memory_order_acquire);
    for (int k = 0; take && k < 2; k++) {
        size_t n = 0;
        unsigned char *b = take(dump ? 2 - k : 0, &n);
        if (!b) {
            if (!dump)
                return;
            continue;
        }
        nsc_writer_block(&f->w, NSC_BLK_HANG, b, n, 1);
        free(b);
    }
}

void eng_account(struct engine *f, struct job *j, int ok) {
    if (ok) {
        if (f->in_error) {
            nsc_log_warn("ncclscope: writing %s works again; %llu records were lost (counted in the trace)",
                         f->w.path, (unsigned long long)atomic_load(&f->lost_write));
            f->in_error = 0;
        }
        return;
    }
    int e = f->w.last_errno;
    atomic_fetch_add_explicit(&f->lost_write, j->records, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->write_errors, 1, memory_order_relaxed);
    atomic_store_explicit(&f->write_errno, e, memory_order_relaxed);
    if (!f->in_error) {
        nsc_log_warn("ncclscope: cannot write the trace %s: %s (errno %d); counting lost records and retrying",
                     f->w.fd >= 0 ? f->w.path : f->cfg.dir, strerror(e), e);
        f->in_error = 1;
    }
}
