// SPDX-License-Identifier: Apache-2.0
/*
 * out_file.h - every file the command writes goes through a temporary file
 * in the destination's directory, renamed over the destination once it is
 * complete and removed when anything failed: an interrupted or failed run
 * leaves no half-written output, and an existing file is replaced only by a
 * complete one. An output that is one of the command's inputs (the same
 * inode, through any name or link) is refused before anything is written.
 *
 * Standard output ("-"), outputs that are not regular files (/dev/null, a
 * FIFO, a terminal) and paths under /dev/ and /proc/ (/dev/stdout) are
 * written in place: they cannot, or must not, be renamed over.
 */
#ifndef NSC_OUT_FILE_H
#define NSC_OUT_FILE_H

#include <stddef.h>

struct nsc_out {
    int fd;       /* where to write; the caller's stream owns it (fdopen/gzdopen) */
    char *path;   /* the destination (a symlink's target) */
    char *tmp;    /* the temporary file; NULL when written in place */
};

/* Checks path against the inputs and opens where to write. Returns 0, or
 * -1 with a message in err ("<path>: ..."), having created nothing. */
int nsc_out_open(struct nsc_out *o, const char *path, const char *const *inputs, int ninputs,
                 char *err, size_t errlen);

/* After the caller closed its stream: ok != 0 renames the temporary file
 * over the destination, ok == 0 removes it. Returns 0, or -1 with a message
 * in err when the rename failed (the temporary file is removed then too). */
int nsc_out_finish(struct nsc_out *o, int ok, char *err, size_t errlen);

#endif /* NSC_OUT_FILE_H */
