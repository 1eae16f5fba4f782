// SPDX-License-Identifier: Apache-2.0
/* cli_window.c - --time FROM:TO for stats and report (cli_window.h). */
#include "cli_window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsc_opt_window(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    struct nsc_window_args *w = (struct nsc_window_args *)((char *)args + o->off);
    /* strict, as convert's: sscanf took "1:2junk", "nan:inf" */
    const char *colon = strchr(v, ':');
    char *e1 = NULL, *e2 = NULL;
    double a = 0, b = 0;
    if (colon) {
        a = strtod(v, &e1);
        b = strtod(colon + 1, &e2);
    }
    if (!colon || e1 != colon || e1 == v || *e2 || e2 == colon + 1 || !isfinite(a) ||
        !isfinite(b) || b <= a || b <= 0) {
        fprintf(stderr, "ncclscope %s: --time takes FROM:TO in seconds from the job's "
                        "start, TO > FROM, not %s\n", cmd, v);
        return -1;
    }
    w->t_from = a;
    w->t_to = b;
    return 0;
}
