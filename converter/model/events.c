/* events.c - pairing records into events (events.h). */
#include "events.h"

#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "nccl_abi.h"

void nsc_events_init(struct nsc_events *m) { memset(m, 0, sizeof(*m)); }

static size_t hidx(uint64_t id, size_t cap) {
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

struct nsc_event *nsc_events_find(const struct nsc_events *m, uint64_t id) {
    if (!m->cap)
        return NULL;
    for (size_t i = hidx(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i])
            return NULL;
        if (m->slots[i]->id == id)
            return m->slots[i];
    }
}

static int map_grow(struct nsc_events *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct nsc_event **s = calloc(cap, sizeof(*s));
    if (!s)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i]) {
            size_t j = hidx(m->slots[i]->id, cap);
            while (s[j])
                j = (j + 1) & (cap - 1);
            s[j] = m->slots[i];
        }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

static struct nsc_event *get_or_add(struct nsc_events *m, uint64_t id) {
    struct nsc_event *e = nsc_events_find(m, id);
    if (e)
        return e;
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0)
        return NULL;
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
        if (!e)
            return NULL;
    }
    e->id = id;
    size_t i = hidx(id, m->cap);
    while (m->slots[i])
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = e;
    m->n++;
    return e;
}

void nsc_events_remove(struct nsc_events *m, struct nsc_event *e) {
    size_t i = hidx(e->id, m->cap);
    while (m->slots[i] != e)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = NULL;
    m->n--;
    /* re-insert the rest of the cluster (linear probing deletion) */
    for (size_t j = (i + 1) & (m->cap - 1); m->slots[j]; j = (j + 1) & (m->cap - 1)) {
        struct nsc_event *x = m->slots[j];
        m->slots[j] = NULL;
        size_t k = hidx(x->id, m->cap);
        while (m->slots[k])
            k = (k + 1) & (m->cap - 1);
        m->slots[k] = x;
    }
    if (m->nspare < 4096) {
        e->next = m->spare;
        m->spare = e;
        m->nspare++;
        return;
    }
    free(e->states);
    free(e);
}

void nsc_events_free(struct nsc_events *m) {
    for (struct nsc_event *e = m->spare, *n; e; e = n) {
        n = e->next;
        free(e->states);
        free(e);
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i]) {
            free(m->slots[i]->states);
            free(m->slots[i]);
        }
    free(m->slots);
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

struct nsc_event *nsc_events_next_open(struct nsc_events *m) {
    for (size_t k = 0; k < m->cap; k++) {
        struct nsc_event *e = m->slots[k];
        if (!e)
            continue;
        if (e->has_start)
            return e;
        m->orphan_records++;
        m->orphans_by_type[e->start.h.etype & 15]++;
        nsc_events_remove(m, e);
        k = (size_t)-1; /* the table was rearranged: rescan */
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
