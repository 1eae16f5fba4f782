// SPDX-License-Identifier: Apache-2.0
/*
 * report.h - `ncclscope report`: one self-contained HTML file (inline CSS
 * and SVG, nothing fetched; a small inline script only zooms) for a look
 * without Perfetto, drawn from the numbers of `ncclscope stats`
 * (nsc_stats_collect): operations by GPU time then queue time, latency by
 * size, GPU time per rank binned over the job, a window of single
 * operations, who made whom wait (stragglers by GPU start), stragglers by
 * enqueue, and the files.
 */
#ifndef NSC_REPORT_H
#define NSC_REPORT_H

#include <stdint.h>

/* What the report leaves out (stats.h's filters) and how it reads. */
struct nsc_report_window {
    uint64_t skip_first;  /* each rank's first N operations of every comm */
    int window;           /* 1: only what overlaps [t_from, t_to] */
    double t_from, t_to;  /* seconds from the job's start */
    int jobs;             /* files read at once (0: one per processor) */
};

/* Returns 0, 2 when input was damaged (the rest is still reported), 3 when
 * the output cannot be written. w may be NULL (nothing left out). */
int nsc_report(const char *const *files, int nfiles, const int64_t *shift_ns, const char *out_path,
               const char *alignment_text, const struct nsc_report_window *w);

#endif /* NSC_REPORT_H */
