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

/* argv: what follows `export`. Returns 0, 1 (usage), 2 (damaged input:
 * the intact part is exported), 3 (unreadable input or a failed write). */
int nsc_export_main(int argc, char **argv);

#endif /* NSC_EXPORT_H */
