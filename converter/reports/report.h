/*
 * report.h - `ncclscope report`: one self-contained HTML file (inline CSS
 * and SVG, no scripts, nothing fetched) for a look without Perfetto: the
 * job's files and ranks, a per-rank timeline of operations (enqueue to
 * completion), the stats tables, a latency-by-size chart and the
 * straggler table.
 */
#ifndef NSC_REPORT_H
#define NSC_REPORT_H

#include <stdint.h>

/* Returns 0, 2 when input was damaged (the rest is still reported), 3 when
 * the output cannot be written. */
int nsc_report(const char *const *files, int nfiles, const int64_t *shift_ns, const char *out_path,
               const char *alignment_text);

#endif /* NSC_REPORT_H */
