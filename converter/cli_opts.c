// SPDX-License-Identifier: Apache-2.0
/* cli_opts.c - options from a command's table through getopt_long, values
 * parsed strictly (cli_opts.h). */
#include "cli_opts.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's value of a row without a short letter: past every char. */
#define LONG_ONLY_BASE 256

int nsc_opt_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   const char *what, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    /* "inf", "nan" and 1e999 parse; none is a size or a time */
    if (end == v || *end || errno == ERANGE || !isfinite(d) || d < lo || d > hi) {
        fprintf(stderr, "ncclscope %s: %s takes %s, not '%s'\n", cmd, opt, what, v);
        return -1;
    }
    *out = d;
    return 0;
}

int nsc_opt_long(const char *cmd, const char *opt, const char *v, long lo, long hi,
                 const char *what, long *out) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || n < lo || n > hi) {
        fprintf(stderr, "ncclscope %s: %s takes %s, not '%s'\n", cmd, opt, what, v);
        return -1;
    }
    *out = n;
    return 0;
}

const char *nsc_opt_label(const struct nsc_opt *o, char *buf, size_t n) {
    if (o->name)
        snprintf(buf, n, "--%s", o->name);
    else
        snprintf(buf, n, "-%c", o->letter);
    return buf;
}

static void *field(const struct nsc_opt *o, void *args) {
    return (char *)args + o->off;
}

int nsc_opt_true(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    (void)cmd, (void)v;
    *(int *)field(o, args) = 1;
    return 0;
}

int nsc_opt_false(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    (void)cmd, (void)v;
    *(int *)field(o, args) = 0;
    return 0;
}

int nsc_opt_str(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    (void)cmd;
    *(const char **)field(o, args) = v;
    return 0;
}

int nsc_opt_int(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    char label[64];
    long n;
    if (nsc_opt_long(cmd, nsc_opt_label(o, label, sizeof(label)), v, (long)o->lo, (long)o->hi,
                     o->what, &n) != 0)
        return -1;
    *(int *)field(o, args) = (int)n;
    return 0;
}

int nsc_opt_num(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    char label[64];
    return nsc_opt_double(cmd, nsc_opt_label(o, label, sizeof(label)), v, o->lo, o->hi, o->what,
                          (double *)field(o, args));
}

int nsc_opts_want_help(int argc, char **argv) {
    for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

static int val_of(const struct nsc_opt *opts, int i) {
    return opts[i].letter ? opts[i].letter : LONG_ONLY_BASE + i;
}

static const struct nsc_opt *row_of(const struct nsc_opt *opts, int nopts, int val) {
    for (int i = 0; i < nopts; i++)
        if (val_of(opts, i) == val)
            return &opts[i];
    return NULL;
}

/* "--t" that getopt_long refused: prefix of several long names, or none. */
static void unknown_long(const char *cmd, const char *arg, const struct nsc_opt *opts, int nopts) {
    if (strncmp(arg, "--", 2)) {
        fprintf(stderr, "ncclscope %s: unknown option %s\n", cmd, arg);
        return;
    }
    size_t len = strcspn(arg + 2, "=");
    char names[512] = "";
    int n = 0;
    for (int i = 0; i < nopts; i++)
        if (opts[i].name && !strncmp(opts[i].name, arg + 2, len) && len < strlen(opts[i].name)) {
            size_t k = strlen(names);
            snprintf(names + k, sizeof(names) - k, "%s--%s", n ? ", " : "", opts[i].name);
            n++;
        }
    if (n > 1)
        fprintf(stderr, "ncclscope %s: option --%.*s is ambiguous (%s)\n", cmd, (int)len, arg + 2,
                names);
    else
        fprintf(stderr, "ncclscope %s: unknown option --%.*s\n", cmd, (int)len, arg + 2);
}

int nsc_opts_parse(const char *cmd, int argc, char **argv, const struct nsc_opt *opts, int nopts,
                   void *args, char ***inputs_out, int *ninputs) {
    *inputs_out = NULL;
    char **inputs = malloc(((size_t)argc + 1) * sizeof(*inputs));
    struct option *lo = calloc((size_t)nopts + 1, sizeof(*lo));
    /* "-": other arguments come back in order as value 1 (whatever
     * POSIXLY_CORRECT says); ":": a missing value is ':' and getopt
     * prints nothing (the messages are ours, naming the command). */
    char *shorts = malloc(3 + 2 * (size_t)nopts + 1);
    if (!lo || !shorts || !inputs) {
        free(inputs);
        free(lo);
        free(shorts);
        fprintf(stderr, "ncclscope %s: out of memory\n", cmd);
        return 1;
    }
    size_t ns = 0, nl = 0;
    shorts[ns++] = '-';
    shorts[ns++] = ':';
    for (int i = 0; i < nopts; i++) {
        if (opts[i].letter) {
            shorts[ns++] = (char)opts[i].letter;
            if (opts[i].has_value)
                shorts[ns++] = ':';
        }
        if (opts[i].name)
            lo[nl++] = (struct option){opts[i].name, opts[i].has_value ? required_argument : no_argument,
                                       NULL, val_of(opts, i)};
    }
    shorts[ns] = '\0';
    *ninputs = 0;
    int bad = 0, c;
    opterr = 0;
    optind = 0; /* glibc: start afresh (another command may have parsed before) */
    while (!bad && (c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        const char *arg = argv[optind - 1]; /* the argument getopt just read */
        char label[64];
        if (c == 1) {
            inputs[(*ninputs)++] = optarg;
        } else if (c == ':') {
            const struct nsc_opt *o = row_of(opts, nopts, optopt);
            if (o && optopt < LONG_ONLY_BASE && strncmp(arg, "--", 2))
                snprintf(label, sizeof(label), "-%c", optopt);
            else if (o)
                nsc_opt_label(o, label, sizeof(label));
            else
                snprintf(label, sizeof(label), "%s", arg);
            fprintf(stderr, "ncclscope %s: %s needs a value\n", cmd, label);
            bad = 1;
        } else if (c == '?') {
            /* optopt: 0 for a long name not in the table (or ambiguous), a
             * row's value for a long option given "=value" it does not
             * take, else the short letter not in the table */
            const struct nsc_opt *o = optopt ? row_of(opts, nopts, optopt) : NULL;
            if (!optopt)
                unknown_long(cmd, arg, opts, nopts);
            else if (o)
                fprintf(stderr, "ncclscope %s: %s takes no value, not '%s'\n", cmd,
                        nsc_opt_label(o, label, sizeof(label)), strchr(arg, '=') ? strchr(arg, '=') + 1 : "");
            else
                fprintf(stderr, "ncclscope %s: unknown option -%c\n", cmd, optopt);
            bad = 1;
        } else {
            const struct nsc_opt *o = row_of(opts, nopts, c);
            if (o->parse(o, cmd, o->has_value ? optarg : NULL, args) != 0)
                bad = 1;
        }
    }
    /* after "--": inputs, whatever they look like */
    for (int i = optind; !bad && i < argc; i++)
        inputs[(*ninputs)++] = argv[i];
    free(lo);
    free(shorts);
    if (bad)
        free(inputs);
    else
        *inputs_out = inputs;
    return bad;
}
