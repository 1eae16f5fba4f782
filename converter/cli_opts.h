// SPDX-License-Identifier: Apache-2.0
/*
 * cli_opts.h - option values parsed strictly for every command: a number is
 * all digits of one number, finite and in range, or a usage error naming the
 * option and the value (atof/atoi took "abc" as 0 and "-3" as a value); an
 * option that takes a value and comes last says so (it was reported as an
 * unknown option).
 */
#ifndef NSC_CLI_OPTS_H
#define NSC_CLI_OPTS_H

/* argv[i] is one of `valued` (NULL-terminated) and has no value after it:
 * prints "ncclscope CMD: OPT needs a value" and returns 1; else 0. */
int nsc_opt_missing(const char *cmd, int argc, char **argv, int i, const char *const *valued);

/* v as a finite number in [lo, hi] (what: "a number of microseconds > 0"
 * for the message). Returns 0, or -1 after the message. */
int nsc_opt_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   const char *what, double *out);

/* v as a whole number in [lo, hi] (decimal). Returns 0, or -1 after the
 * message. */
int nsc_opt_long(const char *cmd, const char *opt, const char *v, long lo, long hi,
                 const char *what, long *out);

#endif /* NSC_CLI_OPTS_H */
