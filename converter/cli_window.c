// SPDX-License-Identifier: Apache-2.0
/* cli_window.c - --time FROM:TO and its warning (cli_window.h). */
#include "cli_window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsc_opt_window(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    struct nsc_window *w = (struct nsc_window *)((char *)args + o->off);
    const char *colon = strchr(v, ':');
    char *e1 = NULL, *e2 = NULL;
    double from = 0, to = 0;
    if (colon) {
        from = strtod(v, &e1);
        to = strtod(colon + 1, &e2);
    }
    if (!colon || e1 != colon || e1 == v || *e2 || e2 == colon + 1 || !isfinite(from) ||
        !isfinite(to) || to <= from) {
        fprintf(stderr, "ncclscope %s: --time takes FROM:TO in seconds from the job's "
                        "start, TO > FROM, not %s\n", cmd, v);
        return -1;
    }
    w->arg = v;
    w->from = from;
    w->to = to;
    return 0;
}

int nsc_window_warn(const char *cmd, const struct nsc_window *w, double span_s) {
    if (!w->arg)
        return 0;
    if (span_s < 0) {
        fprintf(stderr, "ncclscope %s: warning: --time %s: the inputs hold no timed event\n", cmd,
                w->arg);
        return 1;
    }
    if (w->to > 0 && w->from <= span_s) /* a window that ends at 0 selects nothing (convert.h) */
        return 0;
    fprintf(stderr, "ncclscope %s: warning: --time %s is outside the job (0.000 s to %.3f s)\n", cmd,
            w->arg, span_s);
    return 1;
}
