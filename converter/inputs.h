// SPDX-License-Identifier: Apache-2.0
/*
 * inputs.h - a job's trace files from the command line's inputs, the same
 * for every command that takes several: a directory gives its *.nsc files
 * (sorted by name), a file is taken as named, and a file named twice (a
 * directory and its own files, overlapping globs, a link) is read once.
 *
 * A directory's *.nsc entry that is not a regular file (a dangling link, a
 * FIFO, a socket, a subdirectory named x.nsc) is nothing the user named and
 * nothing a trace could be: skipped with a note, the exit status unchanged
 * (docs/converter.md, "Outputs and exit codes"). The same named on the
 * command line is refused (exit 3): a FIFO or a device could block or never
 * end. A regular file that cannot be read is the reader's error, wherever
 * it was found.
 */
#ifndef NSC_INPUTS_H
#define NSC_INPUTS_H

/* in[0..n) -> *files[0..*nfiles) (free with nsc_inputs_free). Messages on
 * stderr start "ncclscope CMD: ". Returns 0; 1 (no trace file at all: a
 * usage error) or 3 (an input that cannot be read or is not a trace),
 * *files NULL then. */
int nsc_inputs_expand(const char *cmd, char *const *in, int n, char ***files, int *nfiles);

void nsc_inputs_free(char **files, int n);

/* path is a regular file that does not start with the trace file magic:
 * prints "ncclscope CMD: not an ncclscope trace: PATH" and returns 3; else
 * (a trace, or a file the reader will report on: unreadable, another
 * format version) 0. */
int nsc_inputs_check_trace(const char *cmd, const char *path);

/* Drops the later names of a file named twice (the same device and inode),
 * freeing them, and keeps the order of the rest. Returns how many names
 * were dropped. */
int nsc_inputs_dedupe(char **files, int *n);

#endif /* NSC_INPUTS_H */
