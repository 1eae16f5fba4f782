// SPDX-License-Identifier: Apache-2.0
/*
 * progress.h - which collectives each communicator of the process has
 * entered: per (comm, collective function) the highest seqNumber enqueued
 * and when, and the last few enqueues, followed from the records (the
 * drainers' progress hook, engine.h) for the hang suspect level
 * (suspect.h), which publishes them and compares them with other ranks'.
 *
 * Why from the records and not from NCCL's threads: nothing is added to
 * the callbacks; the drainer already reads every record. What it knows
 * lags what was enqueued by a drain pass (NCCLSCOPE_DRAIN_US), unless the
 * drainer is blocked (no free job: a frozen disk) or records were dropped:
 * suspect.c then publishes nothing it could be wrong about.
 *
 * Who calls what:
 *   - nsc_prog_record: the drainers (any number at once), for each Coll
 *     START and each comm finalize;
 *   - nsc_prog_snapshot: the suspect thread.
 * One mutex, held for a record's update or the copy of the table: the
 * callbacks never see it. Bounded: NSC_PROG_PAIRS pairs; one that finds
 * the table full is not followed (counted, nsc_prog_unfollowed).
 */
#ifndef NSC_PROGRESS_H
#define NSC_PROGRESS_H

#include <stdint.h>

#include "trace_format.h"

#define NSC_PROG_PAIRS 4096 /* (comm, function) pairs followed at once */
#define NSC_PROG_HIST 8     /* the latest enqueues kept per pair */

struct nsc_prog_pair {
    uint32_t serial;       /* the comm (0: free) */
    uint16_t func;         /* string id of the function */
    uint16_t nhist;        /* entries of hist[] used */
    uint64_t seq, ticks;   /* the highest seqNumber enqueued, and its START's ticks */
    uint64_t first_ticks, first_seq; /* the pair's first record */
    /* the latest enqueues, a ring at hpos: when an older seqNumber was entered */
    uint64_t hseq[NSC_PROG_HIST], hticks[NSC_PROG_HIST];
    uint32_t hpos;
};

/* The drainers' hook (engine.h: progress). */
void nsc_prog_record(const struct nsc_rec *r);
/* Copies up to cap followed pairs into out; returns how many. */
uint32_t nsc_prog_snapshot(struct nsc_prog_pair *out, uint32_t cap);
/* Pairs not followed since the process started: the table was full. */
uint64_t nsc_prog_unfollowed(void);
/* When pair p entered seqNumber seq: its START's ticks, or, when seq is
 * older than the enqueues kept, the oldest kept (seq was entered before
 * it). 0: seq is above the highest entered. */
uint64_t nsc_prog_entered_by(const struct nsc_prog_pair *p, uint64_t seq);

#endif /* NSC_PROGRESS_H */
