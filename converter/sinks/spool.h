// SPDX-License-Identifier: Apache-2.0
/*
 * spool.h - a file's events kept aside (a temporary file, not memory) to
 * be written later, in file order, by the one real sink: what lets
 * `convert -j N` lay out N files at once and still write the bytes a
 * sequential run writes.
 *
 * A spool holds events (struct nsc_tev with its typed arguments; for
 * JSON, already encoded: JSON events depend on nothing written before) and
 * collective chain points: where a file's collective was drawn, whose
 * arrow from the rank drawn before depends on the files before it, so the
 * timeline resolves it when the spool is replayed.
 */
#ifndef NSC_SPOOL_H
#define NSC_SPOOL_H

#include <stdint.h>
#include <stdio.h>

#include "sink.h"

struct nsc_chain_point {
    uint64_t key;      /* the collective (comm, function, seq) */
    uint64_t flow_id;
    uint64_t pid, tid, ts;
    const char *name;  /* the arrow's name */
};

/* Writing: an event, a chain point. Return 0, or -1 when the spool cannot
 * be written (the caller fails the run). */
int nsc_spool_event(FILE *f, const struct nsc_tev *e);
int nsc_spool_chain(FILE *f, const struct nsc_chain_point *c);
/* A thread that wrote spools is done with them: frees its encoding buffer. */
void nsc_spool_thread_done(void);
/* Events already encoded (JSON: each begins with ",\n"). */
int nsc_spool_raw(FILE *f, const void *p, size_t n);

/* Reading back, from the start: each item in order. */
struct nsc_spool_item {
    int is_chain;
    const char *raw;             /* encoded events (is_chain == 0, raw != NULL) */
    size_t raw_len;
    struct nsc_tev ev;           /* is_chain == 0; args in `args` */
    struct nsc_chain_point chain;
    struct nsc_args args;
    char *strs;                  /* the item's strings */
    size_t strs_cap;
};
int nsc_spool_item_init(struct nsc_spool_item *it);
void nsc_spool_item_free(struct nsc_spool_item *it);
/* Returns 1 with the next item, 0 at the end, -1 when the spool is damaged
 * or memory is short. Pointers in `it` are valid until the next call. */
int nsc_spool_next(FILE *f, struct nsc_spool_item *it);

#endif /* NSC_SPOOL_H */
