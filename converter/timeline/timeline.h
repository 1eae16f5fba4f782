// SPDX-License-Identifier: Apache-2.0
/*
 * timeline.h - the model's events and operations laid out for a trace
 * viewer: a process per (file, communicator), a track per recorded thread,
 * slices nested on their thread where they can (async slices where they
 * cannot), GPU tracks (operation lanes, one track per channel, KernelPhases
 * inside their KernelCh), flow arrows (parent -> child; one chain per
 * collective across ranks), counters (operations and bytes in flight; drops)
 * and the typed arguments of each event. Filters (ranks, communicator, time
 * window, event types) apply here. Everything goes to one sink (sink.h).
 *
 * Files come one after the other: nsc_timeline_file_begin, the file's
 * events, operations, Python slices and markers in the order of its
 * records, nsc_timeline_file_end.
 */
#ifndef NSC_TIMELINE_H
#define NSC_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#include "coll_track.h"
#include "events.h"
#include "gpu_clock.h"
#include "python_view.h"
#include "sink.h"
#include "trace_decode.h"

/* GPU-side tracks of a rank (Perfetto thread ids inside the rank's process).
 * The default layout (ops_track.c): the operations at their GPU time, each
 * with channels nested under it, on one track, a few more only where
 * operations overlap on the GPU (NSC_OPS_LANES). --detail: operation lanes
 * (enqueue -> completion; several lanes because operations overlap when the
 * host runs ahead of the GPU) and one track per channel. */
#define NSC_GPU_LANES 64
#define NSC_OPS_LANES 4
#define NSC_TID_GPU_LANE 0x40000000u
#define NSC_TID_GPU_CHANNEL 0x40001000u

struct nsc_timeline_opts {
    const int *ranks;        /* keep these communicator ranks (NULL: all) */
    int nranks;
    const char *comm;        /* commHash hex prefix or communicator name (NULL: all) */
    double t_from, t_to;     /* seconds from t_origin (t_to <= 0: no window) */
    uint32_t event_mask;     /* event types kept (0: all) */
    int flows;
    uint64_t t_origin;       /* the job's start on the merged timeline */
    int nfiles;
    const uint32_t *file_pids;     /* recorded pid per file, for PXN parents */
    const char (*file_hosts)[64];  /* and host */
    int detail;              /* --detail: lanes, per-channel tracks, proxy threads */
};

/* What the timeline drew of one file, for the run's metadata. */
struct nsc_timeline_counts {
    uint64_t ops_drawn, ops_async, gpu_impossible, gpu_before_enqueue;
    uint64_t ops_estimated;  /* default layout: drawn without GPU timers (ops_track.c) */
    uint64_t ops_lanes;      /* default layout: most operation tracks one rank needed */
    uint64_t kernelch_not_drawn; /* default layout: KernelCh of no operation drawn */
};

/* One file's line in the run's metadata (the file itself is closed by then). */
struct nsc_file_meta {
    const char *path;
    struct nsc_session session;
    uint64_t records, dropped;
    struct nsc_losses losses;
    struct nsc_stats_header stats;  /* the decoder's last STATS header */
    uint64_t unnamed_events;
    int ended, replayed, have_py;
    int64_t shift_ns;
    struct nsc_timeline_counts counts;
    uint64_t py_calls, py_skipped, py_unmatched;
    const struct nsc_gpu_clock *gpu;
    uint32_t ngpu;
    const struct nsc_thread_stats *tstats;
    uint32_t ntstats;
};

struct nsc_timeline;

struct nsc_timeline *nsc_timeline_new(const struct nsc_timeline_opts *o, struct nsc_sink *sink);
void nsc_timeline_free(struct nsc_timeline *t);

/* A file begins: its index, decoder (strings, comms, threads), events in
 * flight and GPU clocks (model). */
int nsc_timeline_file_begin(struct nsc_timeline *t, int index, const char *path,
                            const struct nsc_decoder *d, struct nsc_events *ev,
                            const struct nsc_gpu_clock *gpu, uint32_t ngpu);
/* A comm described: its process is named (again, with its rank). */
void nsc_timeline_comm(struct nsc_timeline *t, uint32_t serial);
/* An event just started (model: nsc_events_start): placed on its thread's
 * track; written at once when its STOP came first. */
void nsc_timeline_started(struct nsc_timeline *t, struct nsc_event *e);
/* An event complete (or, unfinished, open at the file's end, drawn to
 * last_ns): written, then removed from the model. */
void nsc_timeline_event(struct nsc_timeline *t, struct nsc_event *e, int unfinished,
                        uint64_t last_ns);
/* An operation complete (coll_track.h): its GPU lane slice and counters. */
void nsc_timeline_op(struct nsc_timeline *t, const struct nsc_op_done *op);
/* A Python call (python_view.h). */
void nsc_timeline_py_slice(struct nsc_timeline *t, const struct nsc_py_slice *s);
/* An instant (comm init/finalize, a user's mark) on the thread's track. */
void nsc_timeline_marker(struct nsc_timeline *t, uint32_t thread, uint32_t serial, uint64_t ts,
                         const char *name);
/* Operations done: counters drained to zero; flows of this file forgotten. */
void nsc_timeline_ops_done(struct nsc_timeline *t);
/* What was drawn of the file so far. */
void nsc_timeline_file_counts(const struct nsc_timeline *t, struct nsc_timeline_counts *out);
/* The open events are written: KernelPhases still waiting for a KernelCh
 * that never came are drawn now. */
void nsc_timeline_gpu_flush(struct nsc_timeline *t);
/* The file ends: its drops summary (counters and an instant at last_ns)
 * and the counts of what was drawn. */
void nsc_timeline_file_end(struct nsc_timeline *t, uint64_t last_ns,
                           struct nsc_timeline_counts *out);

/* Totals so far. */
struct nsc_timeline_totals {
    uint64_t events, unfinished, filtered, flows, chains_not_linked;
    uint64_t ranks_matched, comm_matched; /* events whose comm --ranks / --comm matched */
};
void nsc_timeline_totals(const struct nsc_timeline *t, struct nsc_timeline_totals *out);

/* -j: a file laid out by its own timeline into a spool (sink.h,
 * nsc_sink_open_spool), written here in file order: its events, and the
 * collective chains resolved against the files before it. Returns 0, or -1
 * when the spool cannot be read. Then its totals are added. */
int nsc_timeline_replay(struct nsc_timeline *t, FILE *spool);
void nsc_timeline_add_totals(struct nsc_timeline *t, const struct nsc_timeline_totals *o);
/* A chain point could not be written to the spool. */
int nsc_timeline_spool_failed(const struct nsc_timeline *t);

/* The run's metadata as typed arguments (files, totals, losses). */
struct nsc_run_meta {
    const struct nsc_file_meta *files;
    int nfiles;
    uint64_t unfinished, parts, filtered, flows, chains_not_linked;
    const uint64_t *orphans_by_type; /* [16] */
    uint64_t lost, dropped, lost_write, lost_exit, unnamed, orphans, damaged;
    int detail;                      /* the layout drawn: --detail's, or the default */
};
void nsc_timeline_run_meta(struct nsc_args *a, const struct nsc_run_meta *m);

#endif /* NSC_TIMELINE_H */
