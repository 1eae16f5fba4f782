// SPDX-License-Identifier: Apache-2.0
/*
 * result.h - one result enum for the readers and the CLI, with one string
 * table (result.c), so every error message names its kind the same way.
 */
#ifndef NSC_RESULT_H
#define NSC_RESULT_H

enum nsc_result {
    NSC_OK = 0,
    NSC_E_IO = 1,              /* open/read failed */
    NSC_E_NOT_TRACE = 2,       /* no ncclscope file magic */
    NSC_E_VERSION = 3,         /* a format version this reader does not know */
    NSC_E_TRUNCATED = 4,       /* the file ends inside a block */
    NSC_E_BAD_BLOCK = 5,       /* block header damaged (magic, check, sizes) */
    NSC_E_DECOMPRESS = 6,      /* zstd frame damaged or checksum mismatch */
    NSC_E_BAD_PAYLOAD = 7,     /* payload inconsistent with its block type */
    NSC_E_SEQUENCE = 8,        /* blocks missing between two intact ones */
    NSC_E_USAGE = 9,           /* bad command line */
    NSC_E_NOMEM = 10,
    NSC_E_PLUGIN = 11,         /* a plugin could not be loaded */
    NSC_E_CHECKSUM = 12,       /* a raw payload that does not match its checksum (NSC_BLK_F_SUM) */
    NSC_E_COUNT = 13
};

const char *nsc_result_str(enum nsc_result r);

/* "ENOSPC", "EIO", ... for the errno values a write can fail with (a trace
 * records its writer's errno), or NULL. */
const char *nsc_errno_name(int e);

#endif /* NSC_RESULT_H */
