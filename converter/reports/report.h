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

/* Returns 0, 2 when input was damaged (the rest is still reported), 3 when
 * the output cannot be written. */
int nsc_report(const char *const *files, int nfiles, const int64_t *shift_ns, const char *out_path,
               const char *alignment_text);

#endif /* NSC_REPORT_H */
