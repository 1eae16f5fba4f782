// SPDX-License-Identifier: Apache-2.0
/*
 * cli_align.h - the options every multi-file command shares (clock
 * alignment of files from several hosts, -j, -v) as rows of its option
 * table (cli_opts.h), and the alignment as those commands report it.
 */
#ifndef NSC_CLI_ALIGN_H
#define NSC_CLI_ALIGN_H

#include "cli_opts.h"
#include "clock_align.h"

struct nsc_align_args {
    int mode;          /* --align: 0 auto, 1 realtime */
    double max_unc_us; /* --max-uncertainty-us */
    int verbose;       /* -v: per-file and per-host diagnostics */
    int jobs;          /* -j N: files read at once (0: one per processor) */
};

#define NSC_ALIGN_ARGS_DEFAULT {0, 1000.0, 0, 0}

/* --align auto|realtime into an int (0, 1). */
int nsc_opt_align(const struct nsc_opt *o, const char *cmd, const char *v, void *args);
/* -j N (1-1024) into an int; it becomes the default of every parallel
 * pass (parallel.h): the output is the same whatever N. */
int nsc_opt_jobs(const struct nsc_opt *o, const char *cmd, const char *v, void *args);

/* The rows, for a command whose argument struct `type` holds a struct
 * nsc_align_args `m`. */
#define NSC_OPTS_ALIGN(type, m)                                                         \
    NSC_OPT_FN("align", 0, type, m.mode, nsc_opt_align),                                \
    NSC_OPT_NUM("max-uncertainty-us", 0, type, m.max_unc_us, 1e-9, 1e12,                \
                "a number of microseconds > 0")
#define NSC_OPTS_JOBS(type, field) NSC_OPT_FN(NULL, 'j', type, field, nsc_opt_jobs)
#define NSC_OPTS_VERBOSE(type, field) NSC_OPT_FLAG("verbose", 'v', type, field)

/* Aligns the files' clocks; prints the per-host result on stderr with -v,
 * else one line when there are several hosts. Returns 0, or -1 after the
 * message (al freed). */
int nsc_cli_align(const char *cmd, char **files, int nfiles, const struct nsc_align_args *a,
                  struct nsc_align *al);

#endif /* NSC_CLI_ALIGN_H */
