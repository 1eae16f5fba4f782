// SPDX-License-Identifier: Apache-2.0
/*
 * hang_model.h - what `ncclscope hang` knows of a job (reports/hang.h
 * prints it): per file, the operations still in flight at its end that
 * never completed (coll_track.h's rule) or that its latest HANG block says
 * were in flight, the seqNumber ranges and point-to-point counts each rank
 * enqueued, the comms' members; then the analysis on it, without printing:
 *   - per stuck communicator, one entry (nsc_hm_entries): the stuck
 *     collective that the stuck ranks enqueued first (not the lowest
 *     seqNumber: NCCL counts seqNumbers per function, so AllReduce 776 and
 *     AllGather 776 of one comm coexist, the AllGather queued behind the
 *     AllReduce on the same stream), who never entered it, who completed
 *     it, who left no trace;
 *   - where nothing is seen stuck and completion was not recorded, the
 *     divergences (nsc_hm_divergences);
 *   - for both, the cause (nsc_hm_causes): a root, or an entry waiting
 *     behind a root that holds the same processes' GPUs and streams (an
 *     operation enqueued on a process after that process enqueued the
 *     root's operation, which never completed). Roots come first.
 * nsc_hm_pick and nsc_hm_causes take plain rows, so that the Python
 * package's hangs() and divergences() (ncclscope._analysis) apply the same
 * rules to its tables.
 */
#ifndef NSC_HANG_MODEL_H
#define NSC_HANG_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coll_track.h"

#define NSC_HM_MAX_RANKS (1 << 20)

#define NSC_HM_VEC(T) struct { T *v; size_t n, cap; }

/* A rank of a communicator, as one file described it; proc: its process
 * (host and pid, nsc_hm_proc_id). */
struct nsc_hm_member {
    uint64_t comm, proc;
    int rank, nranks;
    char name[96];
};

/* When a rank enqueued one seqNumber: the highest few kept (the ordering
 * of divergences looks them up). ns 0: not known. */
#define NSC_HM_RECENT_SEQS 8
struct nsc_hm_enq {
    uint64_t seq, ns;
};

/* Collectives a rank enqueued, per (comm, rank, function). */
struct nsc_hm_seqs {
    uint64_t comm, proc;
    int rank;
    char func[32];
    uint64_t min, max, n;
    int unrecorded; /* a file of this rank records no KernelCh: completion unseen */
    /* With KernelCh sampled: the lowest seqNumber whose completion is not
     * known (not sampled, in flight at the end; the ones after it are not
     * known either: a comm's later completion would have told). */
    uint64_t unknown_min;
    int has_unknown;
    /* The highest seqNumber whose every channel's kernel was seen to stop:
     * the ones before it completed too (a comm's collectives run in order
     * on one stream), whatever their own records lack. */
    uint64_t done_max;
    int has_done;
    struct nsc_hm_enq recent[NSC_HM_RECENT_SEQS]; /* ascending by seq */
    unsigned nrecent;
};

/* Point-to-point operations a rank enqueued, per (comm, rank, function, peer). */
struct nsc_hm_pairs {
    uint64_t comm;
    int rank, peer;
    char func[32];
    uint64_t n;
};

/* The latest start of an operation a rank was seen to finish on the GPU
 * (every channel's KernelCh stopped), per (comm, rank): a Send or Recv left
 * open that stopped before it completed too (op_rules.h,
 * nsc_op_p2p_overtaken). */
struct nsc_hm_launch {
    uint64_t comm;
    int rank;
    uint64_t done_start_ns;
};

/* A ProxyOp of a stuck operation as the watchdog saw it in the process
 * (a HANG block). */
struct nsc_hm_proxy {
    int peer, nsteps;
    unsigned ch, is_send, done;
    uint32_t steps_open;
    int lowest_open;
    uint16_t waiting[5];
};

struct nsc_hm_stuck {
    uint64_t comm, id, proc;
    int rank, is_p2p, peer, nch;
    char func[32];
    uint64_t seq, start_ns; /* start_ns: its enqueue, on its process's clock */
    uint64_t stop_ns;       /* its own stop (the records'), 0: not known */
    uint32_t kch_done, stopped;
    struct nsc_track_child *open;
    uint32_t nopen;
    /* From a HANG block (watchdog = 1): channels by bitmask, ProxyOps with
     * their steps by what they wait for, instead of `open`. */
    int watchdog;
    uint64_t ch_started, ch_done;
    int kernel_tracked;
    struct nsc_hm_proxy *proxies;
    uint32_t nproxies;
    /* Not sampled (KernelCh sampled), so its completion is unknown; a
     * sampled collective of its comm enqueued after it on its rank is stuck:
     * it may be stuck (coll_track.h, maybe_stuck). */
    int maybe;
};

/* What a rank's own suspect level reported (a HANG block with suspects,
 * NCCLSCOPE_SUSPECT_SECONDS): the latest per (comm, rank). */
struct nsc_hm_suspect {
    uint64_t comm, proc;
    int rank, nranks;
    char func[32];
    uint64_t seq;
    uint32_t waited_s, suspect_seconds, nmissing, nknown;
    int missing[8];          /* the lowest of them (nmissing may be more) */
};

struct nsc_hm_job {
    size_t seqs_last, pairs_last; /* the last entries found: ops of one comm come in runs */
    NSC_HM_VEC(struct nsc_hm_member) members;
    NSC_HM_VEC(struct nsc_hm_seqs) seqs;
    NSC_HM_VEC(struct nsc_hm_pairs) pairs;
    NSC_HM_VEC(struct nsc_hm_launch) launches;
    NSC_HM_VEC(struct nsc_hm_stuck) stuck;
    NSC_HM_VEC(struct nsc_hm_suspect) suspects;
    int damaged;
    uint64_t ops;
    uint64_t overtaken; /* left open below a completed seqNumber (a Send or Recv: before a
                         * later launch that completed): not stuck */
    /* From the files' latest HANG blocks: how many had one, and what their
     * watchdogs could not watch (a full slab) or attach (orphans). */
    int hang_files;
    uint64_t unwatched, orphans;
    /* Files whose session records no KernelCh: there an operation without
     * an open ProxyOp counts as completed once enqueued. */
    int unrecorded_files;
    /* Operations of files that record KernelCh, and of them those whose
     * enqueue asked for it (NCCLSCOPE_KERNEL_SAMPLE: a sample) and those not
     * asked whose completion is not known. */
    uint64_t kernel_ops, sampled_ops, unknown_ops;
};

/* Reads the files into *j (zeroed first): jobs at once (<= 0: parallel.h's
 * default), merged in file order so the result does not depend on it; then
 * one stuck entry per (comm, rank, event id) and the collectives left open
 * below a completed one, and the Sends and Recvs left open before a later
 * launch of their comm that completed, set aside (j->overtaken). Messages (damage, files
 * cut short, memory) go to err in file order. */
void nsc_hm_read(struct nsc_hm_job *j, const char *const *files, int nfiles, int jobs, FILE *err);
void nsc_hm_free(struct nsc_hm_job *j);

/* Queries. */
int nsc_hm_entered(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func, uint64_t seq);
long long nsc_hm_last_entered(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func);
uint64_t nsc_hm_pair_count(const struct nsc_hm_job *j, uint64_t comm, int rank, const char *func, int peer);
int nsc_hm_traced(const struct nsc_hm_job *j, uint64_t comm, int rank);

/* Where an entry's ranks wait: a root, or behind another entry (a root). */
struct nsc_hm_cause {
    long behind;       /* -1: a root; else the index of the root in the same list */
    int *ranks, nranks; /* behind: the root's ranks on the processes both hold, ascending */
};

/* One stuck communicator. */
struct nsc_hm_entry {
    uint64_t comm;
    const char *name;
    int nranks;                         /* 0: not recorded (API v1-v3) */
    const struct nsc_hm_stuck *target;  /* the stuck collective; NULL: point-to-point only */
    const struct nsc_hm_stuck *first;   /* point-to-point: the earliest stuck operation */
    int *missing, nmissing;             /* never entered it (p2p: never posted) */
    int *done, ndone;                   /* entered it and completed */
    int *unknown, nunknown;             /* entered it, not sampled: completion not known */
    int *untraced, nuntraced;           /* ranks of the comm without a file */
    struct nsc_hm_cause cause;
    /* KernelCh sampled: the target was not sampled (it may be stuck: a later
     * sampled one of its comm is, and some traced rank never entered it),
     * inferred from sampled completion; nmaybe: the comm's collectives of
     * that kind on the stuck ranks (not sampled, enqueued since the comm's
     * last completed one, before a stuck sampled one). */
    int inferred;
    size_t nmaybe;
};

/* The stuck communicators, roots first, each group in the order of its
 * first stuck operation. 0, or -1 without memory (*out then NULL). */
int nsc_hm_entries(const struct nsc_hm_job *j, struct nsc_hm_entry **out, size_t *n);
void nsc_hm_entries_free(struct nsc_hm_entry *e, size_t n);

/* A divergence: per (comm, collective), the first seqNumber some traced
 * ranks entered and others never did, where every rank that entered it
 * recorded no completion (hang.h). */
struct nsc_hm_div {
    uint64_t comm;
    char name[96];            /* a member's (copied: the members are sorted in a copy) */
    const char *func;         /* the job's seqs entry's: valid while the job is */
    int nranks;
    long long seq;
    int *in, nin;             /* entered it */
    int *out, nout;           /* never did */
    long long *out_last;      /* per out rank: the last seqNumber it entered, -1 none */
    struct nsc_hm_cause cause;
};

/* Roots first, each group by (comm, function). 0, or -1 without memory. */
int nsc_hm_divergences(const struct nsc_hm_job *j, struct nsc_hm_div **out, size_t *n);
void nsc_hm_divergences_free(struct nsc_hm_div *d, size_t n);

/* ---- the rules, on plain rows (also the Python package's) ---- */

/* An id for a process: equal for the files of one process (host and pid). */
uint64_t nsc_hm_proc_id(const char *host, uint32_t pid);

/* A stuck collective of one communicator on one rank: its process, its
 * enqueue (on that process's clock), what it is. */
struct nsc_hm_cand {
    uint64_t proc, enq_ns, seq;
    const char *func;
};

/* Which of a communicator's stuck collectives is the one its ranks hang
 * at: the index of a row of it. A row is held back when its process has a
 * stuck collective of the same comm enqueued before it (it waits on the
 * same stream); the chosen one is held back on the fewest processes, then
 * has the most rows, then the lowest seqNumber, then the first function
 * name. Clocks of different processes are never compared. n > 0. */
size_t nsc_hm_pick(const struct nsc_hm_cand *c, size_t n);

/* An entry's operation on one process. */
struct nsc_hm_inst {
    size_t entry;
    uint64_t proc, enq_ns; /* enq_ns 0: not known (the row does not count) */
};

/* root_of[e] for each of nentries entries: -1 when e is a root, else the
 * root it waits behind. e is behind f when a process holds both and
 * enqueued f's operation first (the earliest such f on the first of e's
 * rows that has one; the chain is followed to its root). Entries waiting
 * on each other in a cycle (two processes that enqueued them in opposite
 * orders) are roots. 0, or -1 without memory. */
int nsc_hm_causes(size_t nentries, const struct nsc_hm_inst *in, size_t ninst, long *root_of);

/* The causes of n entries (their rows in, rank[k]: row k's rank in its
 * entry's comm) and the order that shows roots first, each group in the
 * entries' order: order[k] is the entry shown k-th; causes[] by entry, each
 * `behind` the shown index of its root, `ranks` (to free) the root's ranks
 * on the processes both hold. 0, or -1 without memory. */
int nsc_hm_order(size_t n, const struct nsc_hm_inst *in, const int *rank, size_t ni,
                 struct nsc_hm_cause *causes, size_t *order);

#endif /* NSC_HANG_MODEL_H */
