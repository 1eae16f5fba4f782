// SPDX-License-Identifier: Apache-2.0
/* cli_align.c - the shared options of the multi-file commands and their
 * clock alignment summary (cli_align.h). */
#include "cli_align.h"

#include <stdio.h>
#include <string.h>

#include "parallel.h"

int nsc_opt_align(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    int *mode = (int *)((char *)args + o->off);
    if (!strcmp(v, "auto"))
        *mode = 0;
    else if (!strcmp(v, "realtime"))
        *mode = 1;
    else {
        fprintf(stderr, "ncclscope %s: --align takes auto or realtime, not '%s'\n", cmd, v);
        return -1;
    }
    return 0;
}

int nsc_opt_jobs(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    long n;
    if (nsc_opt_long(cmd, "-j", v, 1, 1024, "a number of files at once (1-1024)", &n) != 0)
        return -1;
    *(int *)((char *)args + o->off) = (int)n;
    nsc_jobs_set_default((int)n);
    return 0;
}

int nsc_cli_align(const char *cmd, char **files, int nfiles, const struct nsc_align_args *a,
                  struct nsc_align *al) {
    char err[1024];
    int rc = nsc_align_files((const char *const *)files, nfiles, a->mode, a->max_unc_us * 1e3, al,
                             err, sizeof(err));
    nsc_align_print_unaligned(al, (const char *const *)files, stderr);
    if (rc != 0) {
        fprintf(stderr, "ncclscope %s: %s\n", cmd, err);
        nsc_align_free(al);
        return -1;
    }
    if (a->verbose) {
        nsc_align_print(al, stderr);
    } else if (al->nhosts > 1) {
        /* A host placed by CLOCK_REALTIME alone has no measured uncertainty
         * (its 0 is "not measured", not "exact"): it is said apart, else
         * "uncertainty up to +-0.000 us" claimed a precision nobody had. */
        double worst = 0;
        int realtime_only = 0;
        for (int h = 1; h < al->nhosts; h++) {
            if (al->hosts[h].method != NSC_ALIGN_COLLECTIVES)
                realtime_only++;
            else if (al->hosts[h].uncertainty_ns > worst)
                worst = al->hosts[h].uncertainty_ns;
        }
        int refined = al->nhosts - 1 - realtime_only;
        if (!realtime_only)
            fprintf(stderr, "ncclscope %s: %d hosts aligned, uncertainty up to +-%.3f us (-v: per host)\n",
                    cmd, al->nhosts, worst / 1e3);
        else if (!refined)
            fprintf(stderr, "ncclscope %s: %d hosts placed by their realtime clocks only "
                            "(uncertainty: their NTP accuracy; -v: per host)\n",
                    cmd, al->nhosts);
        else
            fprintf(stderr, "ncclscope %s: %d hosts: %d aligned to the first by shared collectives, "
                            "uncertainty up to +-%.3f us; %d placed by the hosts' realtime clocks only "
                            "(uncertainty: their NTP accuracy; -v: per host)\n",
                    cmd, al->nhosts, refined, worst / 1e3, realtime_only);
    }
    return 0;
}
