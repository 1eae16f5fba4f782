// SPDX-License-Identifier: Apache-2.0
/*
 * convert.h - ncclscope traces to Chrome trace JSON (Perfetto loads it).
 *
 * Streaming: each file is read once, block by block; the converter keeps
 * only the events that have started and not yet stopped, so memory follows
 * the number of events in flight, not the trace's length.
 */
#ifndef NSC_CONVERT_H
#define NSC_CONVERT_H

#include <stdint.h>
#include <stdio.h>

enum nsc_out_format { NSC_OUT_JSON = 0, NSC_OUT_PERFETTO = 1 };

struct nsc_convert_opts {
    enum nsc_out_format format; /* JSON, or Perfetto's protobuf (.pftrace) */
    const char *const *files; /* trace files, already expanded from directories */
    int nfiles;
    const char *out_path;    /* "-" = stdout; ".gz" = gzip; parts get -NNN before .json */
    uint64_t split_bytes;    /* start a new file past this many bytes (0 = one file) */
    int quiet;
    /* filters (an event is kept when it passes all of them) */
    const int *ranks;        /* keep these communicator ranks (NULL: all) */
    int nranks;
    const char *comm;        /* commHash hex prefix or communicator name (NULL: all) */
    double t_from, t_to;     /* seconds from the job's start (t_to <= 0: no window) */
    uint32_t event_mask;     /* event types kept (0: all) */
    const int64_t *shift_ns; /* per file, onto the merged timeline (clock_align.h); NULL = 0 */
    int flows;               /* parent -> child and per-collective cross-rank flow arrows */
    int verbose;             /* per-file diagnostics on stderr (GPU clock mapping, lanes) */
    int jobs;                /* files read at once where the output allows (0: default) */
};

struct nsc_convert_result {
    unsigned long long events, unfinished, orphan_records, damaged, parts, filtered;
    unsigned long long drops;      /* records dropped (rings full, threads over the limit) */
    unsigned long long lost;       /* every record lost: drops + write errors + exit */
    unsigned long long lost_write, lost_exit;
    unsigned long long unnamed;    /* events naming a lost string ("?") */
    unsigned long long ranks_matched, comm_matched; /* events --ranks / --comm matched */
    double span_s;                 /* the job: 0 to span_s seconds from its start, the range
                                      t_from/t_to select from (< 0: no timed record) */
};

/* Returns 0 when every file was intact, 2 when damage was found (everything
 * intact was still converted), 3 on an output error (nothing is written
 * then; res->parts is 0 when the output could not even be opened). res is
 * always filled. */
int nsc_convert(const struct nsc_convert_opts *o, struct nsc_convert_result *res);

#endif /* NSC_CONVERT_H */
