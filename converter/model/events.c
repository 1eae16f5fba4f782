// SPDX-License-Identifier: Apache-2.0
/* events.c - pairing records into events (events.h). */
#include "events.h"

#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "id_map.h"
#include "nccl_abi.h"

int nsc_events_init(struct nsc_events *m) {
    memset(m, 0, sizeof(*m));
    return nsc_id_map_init(&m->map, 1024, sizeof(struct nsc_event *), NSC_ID_MAP_GROW);
}

struct nsc_event *nsc_events_find(const struct nsc_events *m, uint64_t id) {
    struct nsc_event **v = nsc_id_map_find(&m->map, id);
    return v ? *v : NULL;
}

static struct nsc_event *get_or_add(struct nsc_events *m, uint64_t id) {
    int added;
    struct nsc_event **v = nsc_id_map_insert(&m->map, id, &added);
    if (!v)
        return NULL;
    if (!added)
        return *v;
    struct nsc_event *e;
    if (m->spare) {
        /* reuse a finished event and its states array: no malloc per event */
        e = m->spare;
        m->spare = e->next;
        m->nspare--;
        struct nsc_event_state *st = e->states;
        memset(e, 0, sizeof(*e));
        e->states = st;
    } else {
        e = calloc(1, sizeof(*e));
        if (!e) {
            nsc_id_map_remove(&m->map, id);
            return NULL;
        }
    }
    e->id = id;
    *v = e;
    return e;
}

static void recycle(struct nsc_events *m, struct nsc_event *e) {
    if (m->nspare < 4096) {
        e->next = m->spare;
        m->spare = e;
        m->nspare++;
        return;
    }
    free(e->states);
    free(e);
}

void nsc_events_remove(struct nsc_events *m, struct nsc_event *e) {
    nsc_id_map_remove(&m->map, e->id);
    recycle(m, e);
}

void nsc_events_free(struct nsc_events *m) {
    for (struct nsc_event *e = m->spare, *n; e; e = n) {
        n = e->next;
        free(e->states);
        free(e);
    }
    struct nsc_id_map_iter it;
    uint64_t k;
    void *v;
    for (nsc_id_map_iter_init(&m->map, &it); nsc_id_map_next(&m->map, &it, &k, &v);) {
        struct nsc_event *e = *(struct nsc_event **)v;
        free(e->states);
        free(e);
    }
    nsc_id_map_destroy(&m->map);
    free(m->drain);
    memset(m, 0, sizeof(*m));
}

struct nsc_event *nsc_events_start(struct nsc_events *m, uint32_t thread, const struct nsc_rec *r,
                                   const struct nsc_rec *ext, uint64_t ns) {
    if (r->h.etype >= NSC_ET_COUNT)
        return NULL;
    struct nsc_event *e = get_or_add(m, r->h.id);
    if (!e)
        return NULL;
    if (e->has_start) { /* duplicate id: cannot happen in an intact file */
        m->orphan_records++;
        return NULL;
    }
    e->start = *r;
    e->has_start = 1;
    if (ext) {
        e->ext = *ext;
        e->has_ext = 1;
    }
    e->start_thread = thread;
    e->start_ns = ns;
    if (e->has_stop && e->stop_etype != r->h.etype) {
        /* The STOP that came first has the id but not the type: not
         * this event's (damage, or ids reused across types). */
        m->orphan_records++;
        m->orphans_by_type[e->stop_etype & 15]++;
        e->has_stop = 0;
    }
    return e;
}

struct nsc_event *nsc_events_stop(struct nsc_events *m, uint32_t thread, const struct nsc_rec *r,
                                  uint64_t ns) {
    struct nsc_event *e = get_or_add(m, r->h.id);
    if (!e)
        return NULL;
    if (e->has_start && e->start.h.etype != r->h.etype) {
        /* Same id, another type: not this event's STOP. Counted, not joined. */
        m->orphan_records++;
        m->orphans_by_type[r->h.etype & 15]++;
        return NULL;
    }
    if (e->has_stop && !e->has_start)
        m->orphans_by_type[r->h.etype & 15]++; /* a second STOP for an id never started */
    e->has_stop = 1;
    e->stop_etype = r->h.etype;
    e->stop_ns = ns;
    e->stop_thread = thread;
    if (!e->has_start) {
        e->start.h.etype = r->h.etype; /* remembered for the orphan count */
        /* the START is in a later chunk (another thread's ring was drained
         * later) or was dropped; it waits here */
        return NULL;
    }
    return e;
}

void nsc_events_state(struct nsc_events *m, const struct nsc_rec *r, uint64_t ns) {
    struct nsc_event *e = get_or_add(m, r->h.id);
    if (!e)
        return;
    if (e->nstates >= NSC_EVENT_MAX_STATES) {
        e->states_dropped++;
        return;
    }
    if (!e->states) {
        e->states = malloc(NSC_EVENT_MAX_STATES * sizeof(*e->states));
        if (!e->states)
            return;
    }
    e->states[e->nstates].ns = ns;
    e->states[e->nstates].arg = r->u.state.arg;
    e->states[e->nstates].state = r->h.aux;
    e->nstates++;
}

static int cmp_id(const void *x, const void *y) {
    uint64_t a = (*(struct nsc_event *const *)x)->id, b = (*(struct nsc_event *const *)y)->id;
    return a < b ? -1 : a > b;
}

/* At the first call, the open events in id order (their order in the
 * output, whatever the map's layout); records without a START are counted
 * and forgotten then. */
struct nsc_event *nsc_events_next_open(struct nsc_events *m) {
    if (!m->drain) {
        m->drain = malloc((nsc_id_map_count(&m->map) + 1) * sizeof(*m->drain));
        if (!m->drain)
            return NULL;
        struct nsc_id_map_iter it;
        uint64_t k;
        void *v;
        for (nsc_id_map_iter_init(&m->map, &it); nsc_id_map_next(&m->map, &it, &k, &v);) {
            struct nsc_event *e = *(struct nsc_event **)v;
            if (e->has_start) {
                m->drain[m->ndrain++] = e;
                continue;
            }
            m->orphan_records++;
            m->orphans_by_type[e->start.h.etype & 15]++;
            nsc_id_map_iter_remove(&m->map, &it);
            recycle(m, e);
        }
        qsort(m->drain, m->ndrain, sizeof(*m->drain), cmp_id);
    }
    while (m->idrain < m->ndrain) {
        struct nsc_event *e = m->drain[m->idrain++];
        if (nsc_events_find(m, e->id) == e)
            return e;
    }
    return NULL;
}

uint64_t nsc_event_gpu_end(const struct nsc_event *e) {
    unsigned want = e->start.h.etype == NSC_ET_KERNEL_PHASE ? NSC_ABI_KERNEL_PHASE_STOP
                                                            : NSC_ABI_KERNEL_CH_STOP;
    uint64_t ge = 0;
    for (uint32_t i = 0; i < e->nstates; i++)
        if (e->states[i].state == want)
            ge = e->states[i].arg;
    return ge;
}
