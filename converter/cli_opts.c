// SPDX-License-Identifier: Apache-2.0
/* cli_opts.c - option values parsed strictly (cli_opts.h). */
#include "cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsc_opt_missing(const char *cmd, int argc, char **argv, int i, const char *const *valued) {
    if (i + 1 < argc)
        return 0;
    for (; *valued; valued++)
        if (!strcmp(argv[i], *valued)) {
            fprintf(stderr, "ncclscope %s: %s needs a value\n", cmd, argv[i]);
            return 1;
        }
    return 0;
}

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
