// SPDX-License-Identifier: Apache-2.0
/*
 * cli_window.h - the options that leave part of a job out of stats and
 * report: `--time FROM:TO` (seconds from the job's start, convert's syntax)
 * and `--skip-first N` (each rank's first N operations of every comm:
 * NCCL's connection set-up, which otherwise is the p99/max and the worst
 * straggler).
 */
#ifndef NSC_CLI_WINDOW_H
#define NSC_CLI_WINDOW_H

#include "cli_opts.h"

struct nsc_window_args {
    double t_from, t_to; /* t_to 0: no window */
    int skip_first;
};

/* --time's value into the struct nsc_window_args at args + o->off. */
int nsc_opt_window(const struct nsc_opt *o, const char *cmd, const char *v, void *args);

#define NSC_OPTS_WINDOW(type, field)                                                     \
    NSC_OPT_FN("time", 0, type, field, nsc_opt_window),                                  \
        NSC_OPT_INT("skip-first", 0, type, field.skip_first, 0, 2147483647,              \
                    "a number of operations (0 or more)")

#endif /* NSC_CLI_WINDOW_H */
