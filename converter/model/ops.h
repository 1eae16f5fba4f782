// SPDX-License-Identifier: Apache-2.0
/*
 * ops.h - a file's NCCL operations, from the model alone (no output
 * format): the one wiring of a decoder to the operation tracker
 * (coll_track.h) that the commands share, and a small C API that yields one
 * row per operation and rank, for tools that bind the model (the Python
 * package's dataframes).
 */
#ifndef NSC_OPS_H
#define NSC_OPS_H

#include <stdint.h>

#include "coll_track.h"
#include "trace_decode.h"

/* What a pass over one file calls; every hook may be NULL. */
struct nsc_ops_hooks {
    /* The SESSION block was read (always first): before the first record. */
    void (*session)(void *ud, const struct nsc_decoder *d);
    /* Every record, before the tracker sees it. */
    void (*record)(void *ud, const struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r);
    /* An operation complete (or in flight at the end: op->at_end). */
    nsc_op_done_fn op;
    /* Damage, or a file that cannot be opened: the message. */
    void (*error)(void *ud, const char *msg);
    /* A HANG block's payload (block_payload.h decodes it). */
    void (*hang)(void *ud, const struct nsc_decoder *d, const void *data, size_t len);
    /* The file was read; the decoder is still open (losses, stats). */
    void (*done)(void *ud, const struct nsc_decoder *d);
};

/* Reads path once, its records through the tracker; times are moved by
 * shift_ns onto the merged timeline. Returns 0 (intact), 2 (damaged: what
 * is intact was read), 3 (cannot be opened) or -1 (out of memory). */
int nsc_ops_pass(const char *path, int64_t shift_ns, const struct nsc_ops_hooks *h, void *ud);

/* One operation of one rank. Times are ns on the merged timeline (the
 * host clock of the file, moved by shift_ns); GPU times are the KernelCh
 * %globaltimer interval mapped to that clock (gpu_clock.h). */
struct nsc_op_row {
    uint64_t comm_id;          /* commHash */
    const char *comm_name;     /* "" when not named */
    int rank, nranks;
    const char *op;            /* "AllReduce", "Send", ...; "?" unknown */
    uint64_t seq;              /* Coll seqNumber (p2p: 0) */
    int is_p2p, peer;
    uint64_t enqueue_ns;       /* Coll/P2p START */
    uint64_t end_ns;           /* completion on the host (last child's stop, else the STOP; 0) */
    uint64_t gpu_start_ns, gpu_end_ns; /* 0: no KernelCh, or no GPU clock mapping */
    uint64_t gpu_ns;           /* GPU time (one GPU clock, no mapping needed); 0 none */
    uint64_t queue_ns;         /* enqueue to GPU start (0 when unmapped or negative) */
    uint64_t count, bytes;     /* bytes as nccl-tests counts them */
    const char *dtype, *algo, *proto; /* NULL: not recorded */
    int channels;
    const char *py_caller;     /* "file:line function" of the API call's Python stack; NULL */
    int at_end;                /* still in flight when the file ended */
    int sampled;               /* KernelCh was asked for it (else no GPU time: coll_track.h) */
    int inferred;              /* not sampled; completed as a later op of its comm did */
};

/* Strings in a row are valid during the call only. Return nonzero to stop. */
typedef int (*nsc_op_row_fn)(void *ud, const struct nsc_op_row *row);

/* Every operation of one file, in completion order. Reads the file twice
 * when it has KernelCh (the GPU clock first). Returns as nsc_ops_pass; err
 * gets the first message (may be NULL). */
int nsc_ops_rows(const char *path, int64_t shift_ns, nsc_op_row_fn fn, void *ud, char *err,
                 size_t errlen);

/* nccl-tests' size of an operation: the whole buffer for AllGather and
 * ReduceScatter (count x nranks), else count x datatype size. */
uint64_t nsc_op_bytes(const struct nsc_op_done *op);

#endif /* NSC_OPS_H */
