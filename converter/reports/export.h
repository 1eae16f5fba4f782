// SPDX-License-Identifier: Apache-2.0
/*
 * export.h - `ncclscope export`: a job's tables (ops_table.h) as CSV files
 * with a header that DuckDB, ClickHouse and Spark read without help:
 *   DIR/ops/<host>/rank-<R>.csv, DIR/kernel_channels/..., DIR/proxy_steps/...
 *     one file per trace file (a process: one host, one rank; R is its rank
 *     in its largest communicator, pid-<pid>.csv when that is not known or
 *     taken);
 *   DIR/comms.csv, DIR/drops.csv, DIR/errors.csv: one file each for the job.
 * The schema is docs/analysis.md (and ops_table.h's column lists).
 */
#ifndef NSC_EXPORT_H
#define NSC_EXPORT_H

/* files: the job's trace files (directories already expanded), out: DIR,
 * mode and max_unc (ns) as clock_align.h's. Returns 0, 2 (damaged input:
 * the intact part is exported), 3 (unreadable input or a failed write). */
int nsc_export(const char *const *files, int nfiles, const char *out, int mode, double max_unc);

#endif /* NSC_EXPORT_H */
