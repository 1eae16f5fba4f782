// SPDX-License-Identifier: Apache-2.0
/*
 * timeline_int.h - the timeline's state, shared by its files (timeline.c:
 * tracks, events, operations; flows.c; counters.c; event_args.c).
 */
#ifndef NSC_TIMELINE_INT_H
#define NSC_TIMELINE_INT_H

#include "id_map.h"
#include "spool.h"
#include "timeline.h"

#define INFLIGHT_HEAP 256

struct rank_view {
    uint64_t lane_end[NSC_GPU_LANES];
    uint64_t lanes_named;
    uint64_t channels_named;
    /* operations in flight, for the counters: a min-heap of end times */
    struct { uint64_t end, bytes; } heap[INFLIGHT_HEAP];
    uint32_t nheap;
    uint64_t bytes_in_flight;
};

/* Where an already written slice is, so a flow can start from it. */
struct placed {
    uint64_t key;   /* local id + 1 (events) or collective key; 0 = free */
    uint64_t pid, tid, ts;
};
#define PLACED_CAP (1u << 16)
#define CHAIN_MAX (1u << 19) /* collectives chained at once; more are counted */

/* A KernelPhase's GPU interval, drawn after (and inside) its KernelCh's. */
struct gpu_phase {
    uint64_t id, parent, gs, ge;
    uint32_t serial;
    uint16_t name;
    uint8_t ch, phase;
};
#define GPU_PHASES_MAX 4096 /* waiting at once; NCCL 2.31 stops a KernelCh right after its phases */

struct track {
    uint64_t key;           /* thread index << 32 | comm serial */
    uint32_t tid;
    int named;
    struct nsc_event *head, *tail; /* open events placed on it, in start order */
};

struct tl_ops;

/* The file being laid out. */
struct tl_file {
    int index;
    const char *path;
    const struct nsc_decoder *dec;
    struct nsc_events *open;
    const struct nsc_gpu_clock *gpu; /* per comm serial: GPU clock offset */
    uint32_t ngpu;
    struct nsc_id_map tracks;     /* key -> struct track * (events point at their track) */
    struct rank_view **views;     /* per comm serial, made when first used */
    uint32_t nviews;
    uint32_t *comm_named;         /* per serial: process_name written */
    size_t ncomm_named;
    struct tl_ops *ops;           /* default layout: operations waiting to be drawn (ops_track.c) */
    struct gpu_phase *phases;     /* KernelPhase GPU intervals waiting for their KernelCh's */
    uint32_t nphases, phases_cap;
    struct nsc_timeline_counts n;
};

struct nsc_timeline {
    struct nsc_timeline_opts o;
    struct nsc_sink *sink;
    struct nsc_args args;      /* arguments of the event being written */
    struct placed *recent;     /* recently written events of the current file */
    struct nsc_id_map chain;   /* collective key -> struct placed: its last completion written */
    struct nsc_timeline_totals tot;
    struct tl_file f;
    int have_file;
    int spool_failed;          /* a chain point could not be kept aside (-j) */
};

static inline uint64_t tl_out_id(const struct nsc_timeline *t, int file, uint64_t local) {
    return local * (uint64_t)t->o.nfiles + (uint64_t)file;
}

static inline uint64_t tl_out_pid(int file, uint32_t serial) {
    return (uint64_t)file * 65536 + serial;
}

static inline void tl_out(struct nsc_timeline *t, const struct nsc_tev *e) {
    nsc_sink_event(t->sink, e);
}

/* Starts the arguments of the next event. */
static inline struct nsc_args *tl_args(struct nsc_timeline *t) {
    nsc_args_clear(&t->args);
    return &t->args;
}

/* timeline.c */
void tl_rotate(struct nsc_timeline *t);
void tl_name_process(struct nsc_timeline *t, uint32_t serial);
/* A GPU-side track of comm `serial` named (GPU tracks sort first). */
void tl_name_thread(struct nsc_timeline *t, uint32_t serial, uint32_t tid, const char *name);
struct rank_view *tl_view_of(struct tl_file *f, uint32_t serial);

static inline const struct nsc_gpu_clock *tl_gpu_clock(const struct tl_file *f, uint32_t serial) {
    return serial < f->ngpu && f->gpu[serial].have ? &f->gpu[serial] : NULL;
}

/* ops_track.c: the default layout's operations track */
/* An operation complete (filters passed, counters done): drawn once its
 * channels came. */
void tl_ops_op(struct nsc_timeline *t, const struct nsc_op_done *op);
/* A KernelCh stopped (drawable: it passed the filters). */
void tl_ops_kernel_ch(struct nsc_timeline *t, const struct nsc_event *e, int drawable);
/* The file's operations are all reported: what still waits is drawn. */
void tl_ops_flush(struct nsc_timeline *t);
int tl_ops_init(struct tl_file *f);
void tl_ops_free(struct tl_file *f);

/* flows.c */
void tl_flow(struct nsc_timeline *t, uint64_t id, const char *name, const struct placed *from,
             uint64_t pid2, uint64_t tid2, uint64_t ts2);
struct placed *tl_recent_slot(struct nsc_timeline *t, uint64_t local_id);
/* The chain of one collective across ranks: an arrow from the rank written
 * before to this one. */
void tl_chain(struct nsc_timeline *t, const struct nsc_op_done *op, uint64_t pid, uint32_t tid,
              uint64_t ts);
void tl_chain_point(struct nsc_timeline *t, const struct nsc_chain_point *c);

/* counters.c */
void tl_inflight_add(struct nsc_timeline *t, uint32_t serial, struct rank_view *v, uint64_t start,
                     uint64_t end, uint64_t bytes);
void tl_inflight_drain(struct nsc_timeline *t);

/* event_args.c: an event's descriptor, parent and states as arguments */
void tl_event_args(struct nsc_timeline *t, struct nsc_args *a, const struct nsc_event *e);
void tl_losses_args(struct nsc_args *a, const struct nsc_losses *l, const struct nsc_stats_header *h,
                    uint64_t unnamed);

/* timeline.c: an operation's common arguments (id, seqNumber or peer,
 * algo, proto, nChannels, count, datatype), for both layouts. */
struct nsc_args *tl_op_args(struct nsc_timeline *t, const struct nsc_op_done *op);
const char *tl_op_completion(const struct nsc_op_done *op);

#endif /* NSC_TIMELINE_INT_H */
