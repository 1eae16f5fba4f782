// SPDX-License-Identifier: Apache-2.0
/*
 * trace_reader.h - reads a trace file block by block (docs/format.md).
 *
 * Streaming: memory is one block's stored and raw bytes, whatever the file's
 * length. Damage never stops the reader: nsc_reader_next() reports it (with
 * the file and byte offset) and resynchronises on the next intact block
 * header, so every intact block is still returned. Not thread-safe; one
 * reader per file.
 */
#ifndef NSC_TRACE_READER_H
#define NSC_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "result.h"
#include "trace_format.h"

struct nsc_block {
    uint16_t type;
    uint32_t seq;
    uint64_t offset;     /* of the block header in the file */
    const void *data;    /* raw (decompressed) payload, valid until the next call */
    size_t len;
};

struct nsc_reader {
    FILE *f;
    const char *path;
    uint64_t offset;     /* next byte to read */
    uint64_t size;
    uint32_t version;    /* the file header's format version */
    uint32_t next_seq;
    int errors;          /* damage reports so far */
    void *dctx;          /* ZSTD_DCtx */
    unsigned char *stored, *raw;
    size_t stored_cap, raw_cap;
    char err[512];       /* last error, "<path>: offset N: ..." */
    enum nsc_result last;
};

/* Opens and checks the file header. Returns NSC_OK or an error (message in
 * r->err); on error nothing needs closing. What is not a regular file (a
 * FIFO, a device, a directory) is refused with NSC_E_IO without reading:
 * it could block or never end. */
enum nsc_result nsc_reader_open(struct nsc_reader *r, const char *path);

/* Next intact block: returns 1 with *b filled, 0 at the end of the file, or
 * -1 after damage (r->err, r->last say what and where; call again to go on
 * with the next intact block). */
int nsc_reader_next(struct nsc_reader *r, struct nsc_block *b);

/* Reads from an in-memory buffer instead of a file (fuzzing, tests). */
enum nsc_result nsc_reader_open_memory(struct nsc_reader *r, const void *data, size_t len,
                                       const char *name);

void nsc_reader_close(struct nsc_reader *r);

/* "a regular file", "a FIFO", "a directory", ... for messages. */
const char *nsc_file_kind(mode_t mode);

#endif /* NSC_TRACE_READER_H */
