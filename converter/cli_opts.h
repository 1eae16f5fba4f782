// SPDX-License-Identifier: Apache-2.0
/*
 * cli_opts.h - every command's options, parsed by getopt_long from a table
 * the command declares: `--opt=value`, `--opt value`, `-o value`, `-ovalue`,
 * options and inputs in any order, `--` ends the options (a file named like
 * an option comes after it). getopt_long takes an unambiguous prefix of a
 * long name (`--max-unc`), as GNU tools do.
 *
 * Values are parsed strictly: a number is all digits of one number, finite
 * and in range, or a usage error naming the option and the value (atof/atoi
 * took "abc" as 0 and "-3" as a value); an option that takes a value and
 * comes last says so. Every usage error is one line on stderr, and the
 * command exits 1 before reading or writing anything.
 *
 * Adding an option to a command is one line in its table, e.g.
 *     NSC_OPT_INT("skip-first", 0, struct stats_args, skip_first, 0, INT_MAX,
 *                 "a number of operations (0 or more)"),
 * plus the field it fills and its line in the command's --help text.
 */
#ifndef NSC_CLI_OPTS_H
#define NSC_CLI_OPTS_H

#include <stddef.h>

struct nsc_opt;

/* Parses v for option o into the command's arguments (args + o->off).
 * cmd and the option's name are for the message. Returns 0, or -1 after
 * one line on stderr. */
typedef int (*nsc_opt_fn)(const struct nsc_opt *o, const char *cmd, const char *v, void *args);

struct nsc_opt {
    const char *name;  /* long name without "--", or NULL */
    int letter;        /* short option letter, or 0 */
    int has_value;     /* 1: takes a value */
    nsc_opt_fn parse;  /* stores the option (v: NULL for an option without value) */
    size_t off;        /* the field it fills, in the command's argument struct */
    double lo, hi;     /* numbers: the accepted range */
    const char *what;  /* numbers: what is expected, for the message */
};

/* The value parsers of the table's rows (each stores at args + o->off). */
int nsc_opt_true(const struct nsc_opt *o, const char *cmd, const char *v, void *args);  /* int = 1 */
int nsc_opt_false(const struct nsc_opt *o, const char *cmd, const char *v, void *args); /* int = 0 */
int nsc_opt_str(const struct nsc_opt *o, const char *cmd, const char *v, void *args);   /* const char * */
int nsc_opt_int(const struct nsc_opt *o, const char *cmd, const char *v, void *args);   /* int, whole */
int nsc_opt_num(const struct nsc_opt *o, const char *cmd, const char *v, void *args);   /* double */

#define NSC_OPT_FLAG(name, letter, type, field) \
    {name, letter, 0, nsc_opt_true, offsetof(type, field), 0, 0, NULL}
#define NSC_OPT_UNSET(name, letter, type, field) \
    {name, letter, 0, nsc_opt_false, offsetof(type, field), 0, 0, NULL}
#define NSC_OPT_STR(name, letter, type, field) \
    {name, letter, 1, nsc_opt_str, offsetof(type, field), 0, 0, NULL}
#define NSC_OPT_INT(name, letter, type, field, lo, hi, what) \
    {name, letter, 1, nsc_opt_int, offsetof(type, field), lo, hi, what}
#define NSC_OPT_NUM(name, letter, type, field, lo, hi, what) \
    {name, letter, 1, nsc_opt_num, offsetof(type, field), lo, hi, what}
/* A value with its own syntax: fn parses it (nsc_opt_fn). */
#define NSC_OPT_FN(name, letter, type, field, fn) \
    {name, letter, 1, fn, offsetof(type, field), 0, 0, NULL}

/* The option as messages name it: "--name", or "-c" when it has no long
 * name (into buf). */
const char *nsc_opt_label(const struct nsc_opt *o, char *buf, size_t n);

/* Parses argv[1..argc) (argv[0]: the command's name) against the table
 * opts[0..nopts): each option's parse() fills args; the other arguments,
 * in their order, go to *inputs[0..*ninputs) (pointers into argv, in an
 * array to free). Returns 0, or 1 after a usage error on stderr
 * ("ncclscope CMD: ...", *inputs NULL then). */
int nsc_opts_parse(const char *cmd, int argc, char **argv, const struct nsc_opt *opts, int nopts,
                   void *args, char ***inputs, int *ninputs);
#define NSC_NOPTS(table) ((int)(sizeof(table) / sizeof((table)[0])))

/* `-h` or `--help` among the arguments, before a `--`: the command prints
 * its usage before anything else is read, so that no other error wins. */
int nsc_opts_want_help(int argc, char **argv);

/* v as a finite number in [lo, hi] (what: "a number of microseconds > 0"
 * for the message). Returns 0, or -1 after the message. */
int nsc_opt_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   const char *what, double *out);

/* v as a whole number in [lo, hi] (decimal). Returns 0, or -1 after the
 * message. */
int nsc_opt_long(const char *cmd, const char *opt, const char *v, long lo, long hi,
                 const char *what, long *out);

#endif /* NSC_CLI_OPTS_H */
