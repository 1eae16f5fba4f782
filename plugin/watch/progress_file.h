// SPDX-License-Identifier: Apache-2.0
/*
 * progress_file.h - the progress files of the hang suspect level
 * (suspect.h): <dir>/<host>-<pid>.progress, one per process, the
 * collectives each of its communicators entered. Text, so that a user can
 * read it (docs/format.md, "Progress files"):
 *
 *   ncclscope-progress 1
 *   gen 42                    written this many times (a reader that sees
 *                             it change knows the process is alive)
 *   ok 1                      0: what follows may lag or miss collectives
 *   c 4a4e470003 0 4 1        comm: commHash, rank, nranks, complete (1:
 *                             every collective of it was seen, so a
 *                             function not listed was never entered)
 *   f AllReduce 9             the highest seqNumber of each function entered
 *   end
 *
 * Written and read through the writer process (engine.h, the aux channel)
 * when one runs, so that no thread of the job's process enters the trace
 * directory; these functions are the same operations in this process,
 * without a writer. Written by the suspect thread only: a temporary file of an unpredictable
 * name (mkostemp: O_EXCL) renamed over the file, so a reader sees a whole
 * version and a link planted at either name is never followed. Read with
 * O_NOFOLLOW, a regular file only, at most NSC_PF_MAX bytes.
 */
#ifndef NSC_PROGRESS_FILE_H
#define NSC_PROGRESS_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NSC_PF_MAX (64u << 10) /* bytes of a progress file, written or read */
#define NSC_PF_SUFFIX ".progress"

/* A comm line (func[0] == 0) or one of its function lines. */
struct nsc_pf_entry {
    uint64_t comm_id;
    int32_t rank, nranks;
    int complete;
    char func[32];
    uint64_t seq;
};

struct nsc_pf_head {
    uint64_t gen;
    int ok;
};

/* Writes text[0..len) as dir/name atomically (see the top). Creates dir
 * when it does not exist yet. Returns 0, or -1 with errno set. */
int nsc_pf_write(const char *dir, const char *name, const char *text, size_t len);
/* Reads dir/name into buf (cap bytes at most, NUL-terminated: cap - 1 of
 * text). Returns its length, or -1 with errno set (ELOOP: a link; EFBIG:
 * larger than cap - 1; EINVAL: not a regular file). */
ssize_t nsc_pf_read(const char *dir, const char *name, char *buf, size_t cap);
/* Parses a file read: *h, then each entry to fn in file order. Returns 0,
 * or -1 when it is not a whole progress file (bad header, a malformed
 * line, no end line). */
int nsc_pf_parse(char *text, struct nsc_pf_head *h,
                 void (*fn)(void *ud, const struct nsc_pf_entry *e), void *ud);
/* Whether a directory entry is some process's progress file. */
int nsc_pf_is_name(const char *name);
/* The progress files' names in dir, each NUL-terminated, at most cap bytes
 * of them (the rest counted in *left): what the writer process's LIST
 * gives. Returns the bytes, or -1 with errno. */
long nsc_pf_list(const char *dir, char *buf, size_t cap, uint64_t *left);

#endif /* NSC_PROGRESS_FILE_H */
