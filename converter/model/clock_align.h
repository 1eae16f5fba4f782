// SPDX-License-Identifier: Apache-2.0
/*
 * clock_align.h - one timeline for the files of a job.
 *
 * Files of one host share CLOCK_MONOTONIC, which every record time already
 * is (through the file's clock anchors): they need no shift. Other hosts are
 * first placed with CLOCK_REALTIME from their anchors (as good as NTP, often
 * off by 0.1-10 ms), then refined with the collectives both hosts ran: every
 * rank of a collective completes it within a few microseconds of the others
 * (nobody finishes an all_reduce before the last rank's data arrived), so
 * the median, over shared (commHash, seqNumber), of the difference between a
 * rank's completion on the reference host and on host H is H's residual
 * offset. The spread of those differences (median absolute deviation) is
 * reported as the uncertainty. Completion needs KernelCh or ProxyOp events;
 * without any shared completion a host keeps its realtime placement and says
 * so. A host whose shared collectives disagree by more than the limit, or a
 * file without a session block, cannot be aligned: the caller refuses.
 */
#ifndef NSC_CLOCK_ALIGN_H
#define NSC_CLOCK_ALIGN_H

#include <stdint.h>
#include <stdio.h>

enum nsc_align_method { NSC_ALIGN_SAME_HOST, NSC_ALIGN_REALTIME, NSC_ALIGN_COLLECTIVES };

struct nsc_align_host {
    char name[64];
    enum nsc_align_method method;
    int64_t realtime_shift_ns; /* from anchors alone */
    int64_t refine_ns;         /* what the collectives added */
    double uncertainty_ns;     /* MAD of the per-collective differences */
    uint64_t shared;           /* collectives used */
};

struct nsc_align {
    int nfiles;
    int64_t *shift_ns;         /* per file: add to its monotonic ns */
    int *host_of;              /* per file: index into hosts */
    struct nsc_align_host *hosts;
    int nhosts;
    unsigned char *no_session; /* per file: it has no session block (left unaligned) */
};

/* mode: 0 = automatic (refine where possible), 1 = realtime only.
 * max_uncertainty_ns: refuse a host whose collectives disagree by more.
 * Returns 0, or -1 with a message in err (the caller must not merge). */
int nsc_align_files(const char *const *files, int nfiles, int mode, double max_uncertainty_ns,
                    struct nsc_align *al, char *err, size_t errlen);
void nsc_align_print(const struct nsc_align *al, FILE *f);
/* The files left unaligned for want of a session block, one line each. */
void nsc_align_print_unaligned(const struct nsc_align *al, const char *const *files, FILE *f);
void nsc_align_free(struct nsc_align *al);

#endif /* NSC_CLOCK_ALIGN_H */
