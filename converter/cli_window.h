// SPDX-License-Identifier: Apache-2.0
/*
 * cli_window.h - `--time FROM:TO`, a window in seconds from the job's
 * start, for any command that takes it: the option's row (cli_opts.h) and
 * the warning when the window lies outside the job (the output is then
 * empty of events, exit 0, and the user is told the job's range so that
 * the next try can be right).
 */
#ifndef NSC_CLI_WINDOW_H
#define NSC_CLI_WINDOW_H

#include "cli_opts.h"

struct nsc_window {
    const char *arg;  /* as given (NULL: no --time) */
    double from, to;  /* seconds from the job's start, to > from */
};

/* FROM:TO, both finite, TO > FROM (sscanf took "1:2junk", "nan:inf"). */
int nsc_opt_window(const struct nsc_opt *o, const char *cmd, const char *v, void *args);

#define NSC_OPT_WINDOW(type, field) NSC_OPT_FN("time", 0, type, field, nsc_opt_window)

/* The job spans 0 .. span_s seconds from its start (span_s < 0: no time
 * seen at all). A window given that does not meet that range: one
 * warning on stderr naming it and the job's range, and returns 1; else
 * 0. */
int nsc_window_warn(const char *cmd, const struct nsc_window *w, double span_s);

#endif /* NSC_CLI_WINDOW_H */
