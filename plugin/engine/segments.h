// SPDX-License-Identifier: Apache-2.0
/*
 * segments.h - bounded disk (NCCLSCOPE_MAX_MB): a streaming session's trace
 * as a series of segment files, each standalone (file header, SESSION, the
 * strings and comm descriptions its records use, thread names), the
 * oldest deleted first so that the session's files together stay within
 * the cap. What was deleted is counted in the newest file's STATS
 * (segments, bytes, records).
 *
 * A segment is closed before a job would take it past cap/4 (it holds at
 * least one chunk), so about four segments are kept: deleting the oldest
 * gives back a quarter of the cap at a time, and what is kept is at least
 * three quarters of the cap's worth of the newest records. A single chunk
 * larger than the cap (NCCLSCOPE_CHUNK_KB's compressed size) cannot be
 * held under it: the newest segment is never deleted.
 *
 * Used only by the compressor whose turn it is to write (flusher.c), like
 * the writer itself: no locking.
 */
#ifndef NSC_SEGMENTS_H
#define NSC_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

struct nsc_segment_file {
    char *path;
    uint64_t bytes, records;
};

struct nsc_segments {
    uint64_t cap;            /* bytes of all segments; 0: no rotation */
    uint64_t target;         /* a segment's size before the next one starts */
    struct nsc_segment_file *old; /* closed segments still on disk, oldest first */
    unsigned nold, old_cap;
    uint64_t cur_records;    /* records in the segment being written */
    unsigned cur_chunks;     /* chunks in it */
    uint32_t deleted;        /* segments deleted to hold the cap */
    uint64_t bytes_deleted, records_deleted;
    /* how a segment is deleted: by the writer process (writer_proc.h), or
     * unlink(2) here when NULL */
    int (*unlink)(void *ctx, const char *path);
    void *unlink_ctx;
};

void nsc_segments_init(struct nsc_segments *s, uint64_t cap_bytes);
void nsc_segments_free(struct nsc_segments *s);

/* Should the segment being written (cur_bytes long) be closed before a
 * chunk of about `next` bytes is written? */
int nsc_segments_due(const struct nsc_segments *s, uint64_t cur_bytes, uint64_t next);

/* The segment being written (path, bytes) is closed: it joins the old ones. */
void nsc_segments_closed(struct nsc_segments *s, const char *path, uint64_t bytes);

/* Deletes the oldest segments while the old ones, the current one
 * (cur_bytes) and `margin` (blocks still to come after this check) exceed
 * the cap. Returns the number deleted now. */
unsigned nsc_segments_prune(struct nsc_segments *s, uint64_t cur_bytes, uint64_t margin);

#endif /* NSC_SEGMENTS_H */
