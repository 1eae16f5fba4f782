// SPDX-License-Identifier: Apache-2.0
/*
 * events.h - NCCL's events of one file, from their records: a START, the
 * STATE records in between, a STOP, joined by event id.
 *
 * Records of one event may come in any order across chunks (another
 * thread's ring was drained later), so a STOP or STATE may wait for its
 * START. An event is complete when it has both; what is still open when the
 * file ends never stopped. What cannot belong to an event is counted, per
 * type: a second START for an id, a STOP whose type differs from the
 * START's, STOP/STATE records whose START never came. Memory follows the
 * events in flight, not the file's length.
 */
#ifndef NSC_EVENTS_H
#define NSC_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "id_map.h"
#include "trace_decode.h"

#define NSC_EVENT_MAX_STATES 32 /* per event; more are counted, not kept */

struct nsc_event_state {
    uint64_t ns;
    uint64_t arg;
    uint32_t state;
};

struct nsc_event {
    uint64_t id;            /* local id in its file */
    struct nsc_rec start;
    struct nsc_rec ext;
    int has_start, has_ext, has_stop;
    uint8_t stop_etype;     /* the STOP's type: a STOP pairs with a START of its type only */
    uint32_t start_thread, stop_thread;
    uint64_t start_ns, stop_ns; /* on the merged timeline */
    struct nsc_event_state *states;
    uint32_t nstates, states_dropped;
    /* The consumer's (timeline/): the track it placed the event on and its
     * neighbours there, in start order. Untouched here. */
    void *track;
    struct nsc_event *prev, *next;
};

/* Events in flight of one file: id -> struct nsc_event * (util/id_map.h;
 * the events themselves stay put, the timeline links them). */
struct nsc_events {
    struct nsc_id_map map;
    struct nsc_event **drain;     /* at the file's end: the open events, by id */
    size_t ndrain, idrain;
    struct nsc_event *spare; /* finished events kept for reuse (with their states array) */
    size_t nspare;
    uint64_t orphan_records;      /* records that belong to no event */
    uint64_t orphans_by_type[16]; /* STOP/STATE records whose START never came, by type */
};

/* Returns 0, or -1 when memory is short. */
int nsc_events_init(struct nsc_events *m);
void nsc_events_free(struct nsc_events *m);

struct nsc_event *nsc_events_find(const struct nsc_events *m, uint64_t id);
/* A START: the event it starts (the caller places it, and completes it at
 * once when e->has_stop: its STOP came first), or NULL (a duplicate id,
 * counted; an unknown type; out of memory). */
struct nsc_event *nsc_events_start(struct nsc_events *m, uint32_t thread, const struct nsc_rec *r,
                                   const struct nsc_rec *ext, uint64_t ns);
/* A STOP: the event it completes, or NULL (its START is still to come, or
 * the STOP is not this id's: counted). */
struct nsc_event *nsc_events_stop(struct nsc_events *m, uint32_t thread, const struct nsc_rec *r,
                                  uint64_t ns);
void nsc_events_state(struct nsc_events *m, const struct nsc_rec *r, uint64_t ns);
/* Forgets a complete (or abandoned) event. */
void nsc_events_remove(struct nsc_events *m, struct nsc_event *e);
/* At the file's end: an event still open (started, never stopped), lowest
 * id first, or NULL when none is left; records that never had a START are
 * counted as orphans and forgotten at the first call. The caller removes
 * what it gets, and feeds no more records. */
struct nsc_event *nsc_events_next_open(struct nsc_events *m);

/* The GPU end of a KernelCh (its KernelChStop pTimer) or KernelPhase (its
 * KernelPhaseStop), 0 when not recorded. */
uint64_t nsc_event_gpu_end(const struct nsc_event *e);

#endif /* NSC_EVENTS_H */
