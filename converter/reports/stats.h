// SPDX-License-Identifier: Apache-2.0
/*
 * stats.h - `ncclscope stats`: the tables of model/stats_model.h printed
 * as text or JSON, or the Python call-site table (--by-caller,
 * python_callers.h) from the same pass.
 */
#ifndef NSC_STATS_H
#define NSC_STATS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "stats_model.h"

struct nsc_stats_opts {
    const char *const *files;
    int nfiles;
    const int64_t *shift_ns; /* per file, onto the merged timeline (NULL: 0) */
    int json;                /* 1: JSON */
    int top;                 /* straggler rows to print */
    FILE *out;
    int by_caller;           /* the Python call-site table instead (python_callers.h) */
    const struct nsc_stats_hooks *hooks; /* NULL: none */
    const char *cmd;         /* prefix of the messages on stderr (NULL: "stats") */
    int jobs;                /* files read at once (0: one per processor); same output */
    /* --skip-first: the first N operations of each rank of a comm are left
     * out (connection set-up); 0: none */
    uint64_t skip_first;
    /* --time: only what overlaps [t_from, t_to] seconds from the job's
     * start (the earliest SESSION start), when window is 1 */
    int window;
    double t_from, t_to;
};

/* Returns 0, 2 when some input was damaged (the rest is still counted). */
int nsc_stats(const struct nsc_stats_opts *o);

/* One pass over the files (as nsc_stats; json, out and by_caller are
 * ignored), the wait matrices included: fills *res. Returns 0, 2 (damaged
 * input, the rest counted) or 3 (out of memory, *res empty). Free with
 * nsc_stats_result_free (stats_model.h). */
int nsc_stats_collect(const struct nsc_stats_opts *o, struct nsc_stats_result *res);

/* A size bucket's label ("64B", "1K", "32M", "1G"): the upper bound of
 * bucket b is 2^b bytes, nccl-tests' convention. */
void nsc_stats_size_label(char *buf, size_t n, unsigned bucket);

#endif /* NSC_STATS_H */
