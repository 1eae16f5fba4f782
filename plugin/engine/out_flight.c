// SPDX-License-Identifier: Apache-2.0
/* out_flight.c - the flight output mode (NCCLSCOPE_MODE=flight): chunks go
 * to the window in memory (flight.h), the newest NCCLSCOPE_FLIGHT_MB; a
 * trigger (triggers.c) or the session's end writes the window as a
 * standalone trace file. The fatal signals write it from their handler
 * (crash_dump.c). */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "engine_int.h"
#include "intern.h"
#include "log.h"

/* Nothing reaches the disk until a dump. Comm descriptions go to the recent
 * ring a dump repeats (with every open comm's); the chunk to the window. */
static int flight_chunk(struct engine *f, struct job *j, unsigned char *out, uint16_t flags,
                        size_t stored) {
    eng_take_comms(f);
    for (unsigned i = 0; i < f->npending; i++)
        f->recent[f->nrecent++ % RECENT_COMMS] = f->pending_comms[i];
    f->npending = 0;
    nsc_clock_anchor(&j->anchor);
    /* A window frozen by a dump from a signal handler refuses the chunk:
     * then the job stays as it is, not marked kept, so that dump writes it
     * from the job's packed bytes; this thread waits for the dump to end
     * (a fatal signal: the process ends first; SIGTERM with the
     * application's handler: the window thaws and takes the chunk). */
    while (j->raw_len && nsc_flight_keep(f->flight, &j->anchor, out + sizeof(struct nsc_block_header),
                                         stored, j->raw_len, flags, j->records) == -2) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    /* RELEASE: the crash handler's ACQUIRE load skips this job from now on
     * (its chunk is in the window) */
    atomic_store_explicit(&j->kept, 1, memory_order_release);
    return 0;
}

struct dump_ctx {
    struct engine *f;
    uint64_t chunks;
};

static int dump_chunk(void *ud, const struct nsc_anchor *a, unsigned char *block, uint16_t flags,
                      size_t stored, size_t raw_len) {
    struct dump_ctx *d = ud;
    struct engine *f = d->f;
    if (nsc_writer_block(&f->w, NSC_BLK_ANCHOR, a, sizeof(*a), 0) != 0)
        return -1;
    if (f->threads_due) { /* names for every thread, before its first records */
        eng_write_threads(f, a->ticks);
        f->threads_due = 0;
    }
    if (nsc_writer_prepared(&f->w, block, NSC_BLK_PACKED, flags, stored, raw_len) != 0)
        return -1;
    d->chunks++;
    return 0;
}

/* Writes the flight window as a standalone trace file (a new file each
 * time: <host>-<pid>[-N].nsc): strings, the recent and open comm
 * descriptions, every thread's name, the kept chunks, STATS, END. The window
 * stays: recording goes on, and a later dump covers it again. Called by the
 * compressor whose turn it is to write. */
static void flight_dump(struct engine *f, const char *why, int last) {
    /* NCCLSCOPE_MAX_MB holds the dumps too: one that would take them past
     * it (judged by the last dump's size: the window's, give or take its
     * growth) is refused, logged the first time, counted, and the total
     * said at the session's end. The first dump is always written. */
    uint64_t cap = (uint64_t)f->cfg.max_mb << 20;
    if (cap && f->dumps && f->dumped_bytes + f->last_dump_bytes > cap) {
        if (!f->dumps_refused++)
            nsc_log_warn("ncclscope: flight recorder (%s): NCCLSCOPE_MAX_MB=%u reached by %u "
                         "dump(s) of %llu bytes: no more dumps in the session (counted; its end "
                         "says how many)",
                         why, f->cfg.max_mb, f->dumps, (unsigned long long)f->dumped_bytes);
        if (last)
            nsc_log_warn("ncclscope: flight recorder: %llu dump(s) refused by NCCLSCOPE_MAX_MB=%u "
                         "(the session's end included)",
                         (unsigned long long)f->dumps_refused, f->cfg.max_mb);
        return;
    }
    if (eng_open_file(f) != 0) { /* the session as it stands now: NCCL's version once known */
        nsc_log_warn("ncclscope: flight recorder: cannot write a dump in %s: %s", f->cfg.dir,
                     strerror(f->w.last_errno));
        return;
    }
    f->strings_written = 0;
    eng_describe_again(f);
    struct dump_ctx d = {.f = f};
    int rc = eng_write_strings(f, nsc_intern_count()) == 0 && eng_write_comms(f) == 0
                 ? nsc_flight_each(f->flight, dump_chunk, &d) : -1;
    if (f->threads_due) {
        struct nsc_anchor a;
        nsc_clock_anchor(&a);
        nsc_writer_block(&f->w, NSC_BLK_ANCHOR, &a, sizeof(a), 0);
        eng_write_threads(f, a.ticks);
        f->threads_due = 0;
    }
    eng_hang_block(f, 1); /* hook: the latest HANG block */
    eng_stats_block(f);
    nsc_writer_block(&f->w, NSC_BLK_END, "", 0, 0);
    f->dumps++;
    f->last_dump_bytes = f->w.bytes;
    f->dumped_bytes += f->w.bytes;
    /* requests the gap merged into this dump (triggers.c) */
    uint64_t merged = atomic_exchange_explicit(&f->dumps_merged, 0, memory_order_relaxed);
    if (rc == 0)
        nsc_log_info("ncclscope: flight recorder (%s): %llu records in %llu chunks -> %s%s%.0llu%s",
                     why, (unsigned long long)nsc_flight_records(f->flight),
                     (unsigned long long)d.chunks, f->w.path, merged ? " (" : "",
                     (unsigned long long)merged,
                     merged ? " more request(s) merged into it: at most one dump per second)" : "");
    else
        nsc_log_warn("ncclscope: flight recorder (%s): writing %s failed: %s", why, f->w.path,
                     strerror(f->w.last_errno));
    nsc_writer_close(&f->w);
}

/* After each chunk: a dump if a trigger asked for one, or at the session's
 * end. */
static void flight_after_chunk(struct engine *f, int last) {
    if (atomic_exchange_explicit(&f->dump_req, 0, memory_order_acq_rel) || last)
        flight_dump(f, last ? "end of the session" : "trigger", last);
}

const struct eng_mode eng_flight_mode = {
    .name = "flight",
    .chunk = flight_chunk,
    .after_chunk = flight_after_chunk,
    .poll = eng_flight_triggers,
};
