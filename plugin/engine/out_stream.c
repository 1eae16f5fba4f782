// SPDX-License-Identifier: Apache-2.0
/* out_stream.c - the stream output mode: every chunk goes to the trace
 * file as it comes, in sequence order, with what its records refer to
 * (strings, comm descriptions, an anchor, THREAD records in a new segment)
 * before it and STATS after it; with NCCLSCOPE_MAX_MB the file is a series
 * of segments (segments.h), each readable alone. */
#include <errno.h>
#include <stdatomic.h>

#include "clock.h"
#include "engine_int.h"
#include "intern.h"
#include "log.h"
#include "thread_state.h"

/* ---- rotation (NCCLSCOPE_MAX_MB, segments.h) ---- */

/* Closes the segment being written (END: it is whole) so that the next
 * write opens the next one. */
static void next_segment(struct engine *f) {
    nsc_writer_block(&f->w, NSC_BLK_END, "", 0, 0);
    nsc_segments_closed(&f->segs, f->w.path, f->w.bytes);
    nsc_writer_close(&f->w);
    f->w.segment++;
}

/* A write failed for want of space (a full disk, or the user's quota)
 * with rotation on: the oldest segment goes, as a cap that fits the disk
 * would have it, and the write is tried again at once. Returns 1 when one
 * was deleted. */
static int make_room(struct engine *f) {
    int e = f->w.last_errno;
    if (!f->w.rotate || (e != ENOSPC && e != EDQUOT) || !nsc_segments_drop_oldest(&f->segs))
        return 0;
    if (!f->full_disk_said) { /* once: the count is in every later STATS */
        f->full_disk_said = 1;
        nsc_log_warn("ncclscope: the disk under %s is full before NCCLSCOPE_MAX_MB: deleting the "
                     "oldest segments to make room for the newest records (counted in STATS)",
                     f->w.dir);
    }
    f->next_open_try_ns = 0;
    return 1;
}

/* Everything a job carries, in the order readers need. Returns 0 when its
 * chunk reached the file. */
static int stream_write(struct engine *f, struct job *j, unsigned char *out, uint16_t flags,
                        size_t stored, uint32_t strings) {
    if (f->w.fd < 0) {
        uint64_t now = eng_now_ns();
        if (now < f->next_open_try_ns)
            return -1;
        if (eng_open_file(f) != 0) {
            f->next_open_try_ns = now + 1000000000ull; /* retry once a second */
            return -1;
        }
        f->strings_written = 0;
        if (f->w.rotate && f->w.segment > 0)
            eng_describe_again(f); /* hook: each segment stands alone */
    }
    if (f->w.rotate) /* hook: room for what follows before it is written */
        nsc_segments_prune(&f->segs, f->w.bytes, stored + (64u << 10));
    if (eng_write_strings(f, strings) != 0 || eng_write_comms(f) != 0)
        return -1;
    /* The anchor is taken now, not at sealing: it bounds every record
     * written so far from above, and anchors stay in file order when
     * several drainers' jobs are written in another order than sealed. */
    nsc_clock_anchor(&j->anchor);
    if (nsc_writer_block(&f->w, NSC_BLK_ANCHOR, &j->anchor, sizeof(j->anchor), 0) != 0)
        return -1;
    if (f->threads_due) {
        eng_write_threads(f, j->anchor.ticks);
        f->threads_due = 0;
    }
    /* hook: rotation makes room for the chunk, STATS and END first, so the
     * files never exceed the cap, even for a moment */
    uint64_t tail = 4096 + 32ull * nsc_thread_count();
    if (f->w.rotate)
        nsc_segments_prune(&f->segs, f->w.bytes, stored + sizeof(struct nsc_block_header) + tail);
    if (j->raw_len &&
        nsc_writer_prepared(&f->w, out, NSC_BLK_PACKED, flags, stored, j->raw_len) != 0)
        return -1;
    f->segs.cur_records += j->records;
    f->segs.cur_chunks++;
    return 0;
}

static int stream_chunk(struct engine *f, struct job *j, unsigned char *out, uint16_t flags,
                        size_t stored) {
    eng_take_comms(f);
    eng_session_refresh(f); /* NCCL's API version, once its first init came */
    uint32_t strings = nsc_intern_count();
    /* hook: rotation closes a segment this chunk would take past its size */
    if (f->w.fd >= 0 && nsc_segments_due(&f->segs, f->w.bytes, stored + 4096))
        next_segment(f);
    /* A failed write was cut back off the file (trace_writer.h), so trying
     * again appends cleanly; each round deletes a segment: it ends. */
    int rc;
    while ((rc = stream_write(f, j, out, flags, stored, strings)) != 0 && make_room(f))
        ;
    return rc;
}

/* After each chunk: a HANG block not written yet, STATS (the counts so
 * far: a file cut here still has them), END after the session's last. */
static void stream_after_chunk(struct engine *f, int last) {
    if (f->w.fd < 0)
        return;
    eng_hang_block(f, 0); /* hook: a HANG block not written yet */
    eng_stats_block(f);
    if (last)
        nsc_writer_block(&f->w, NSC_BLK_END, "", 0, 0);
}

const struct eng_mode eng_stream_mode = {
    .name = "stream",
    .chunk = stream_chunk,
    .after_chunk = stream_after_chunk,
};
