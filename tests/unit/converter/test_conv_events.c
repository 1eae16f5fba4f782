// SPDX-License-Identifier: Apache-2.0
/* test_conv_events.c - pairing records into events (converter/model/events.h):
 * START then STOP, STOP before START, STATEs before their START, a second
 * START for an id, a STOP of another type, what is open at the end (in id
 * order, orphans counted), the states cap, and the GPU end of KernelCh and
 * KernelPhase. */
#include <string.h>

#include "check.h"
#include "events.h"
#include "event_types.h"
#include "nccl_abi.h"

static struct nsc_rec rec(uint8_t kind, uint8_t etype, uint64_t id) {
    struct nsc_rec r;
    memset(&r, 0, sizeof(r));
    r.h.kind = kind;
    r.h.etype = etype;
    r.h.id = id;
    return r;
}

static void start_then_stop(void) {
    struct nsc_events m;
    CHECK(nsc_events_init(&m) == 0);
    struct nsc_rec s = rec(NSC_REC_START, NSC_ET_COLL, 7);
    struct nsc_event *e = nsc_events_start(&m, 1, &s, NULL, 100);
    CHECK(e && e->has_start && !e->has_stop && e->start_ns == 100 && e->start_thread == 1);
    CHECK(nsc_events_find(&m, 7) == e);
    struct nsc_rec t = rec(NSC_REC_STOP, NSC_ET_COLL, 7);
    struct nsc_event *d = nsc_events_stop(&m, 2, &t, 250);
    CHECK(d == e && d->stop_ns == 250 && d->stop_thread == 2);
    nsc_events_remove(&m, d);
    CHECK(nsc_events_find(&m, 7) == NULL);
    CHECK(nsc_events_next_open(&m) == NULL);
    CHECK(m.orphan_records == 0);
    nsc_events_free(&m);
}

/* Another thread's ring drained first: the STOP waits for its START. */
static void stop_first(void) {
    struct nsc_events m;
    nsc_events_init(&m);
    struct nsc_rec st = rec(NSC_REC_STATE, NSC_ET_PROXY_OP, 3);
    st.h.aux = 5;
    st.u.state.arg = 9;
    nsc_events_state(&m, &st, 50);
    struct nsc_rec t = rec(NSC_REC_STOP, NSC_ET_PROXY_OP, 3);
    CHECK(nsc_events_stop(&m, 0, &t, 90) == NULL);
    struct nsc_rec s = rec(NSC_REC_START, NSC_ET_PROXY_OP, 3);
    struct nsc_event *e = nsc_events_start(&m, 0, &s, NULL, 40);
    CHECK(e && e->has_stop && e->stop_ns == 90); /* complete at once */
    CHECK(e->nstates == 1 && e->states[0].state == 5 && e->states[0].arg == 9 &&
          e->states[0].ns == 50);
    nsc_events_remove(&m, e);
    CHECK(m.orphan_records == 0);
    nsc_events_free(&m);
}

static void mismatches(void) {
    struct nsc_events m;
    nsc_events_init(&m);
    struct nsc_rec s = rec(NSC_REC_START, NSC_ET_COLL, 1);
    CHECK(nsc_events_start(&m, 0, &s, NULL, 10) != NULL);
    CHECK(nsc_events_start(&m, 0, &s, NULL, 11) == NULL); /* a second START */
    CHECK(m.orphan_records == 1);
    struct nsc_rec t = rec(NSC_REC_STOP, NSC_ET_P2P, 1); /* same id, another type */
    CHECK(nsc_events_stop(&m, 0, &t, 20) == NULL);
    CHECK(m.orphan_records == 2 && m.orphans_by_type[NSC_ET_P2P] == 1);
    CHECK(!nsc_events_find(&m, 1)->has_stop);
    /* a STOP that came first with another type than the START */
    struct nsc_rec t2 = rec(NSC_REC_STOP, NSC_ET_KERNEL_CH, 2);
    nsc_events_stop(&m, 0, &t2, 30);
    struct nsc_rec s2 = rec(NSC_REC_START, NSC_ET_PROXY_OP, 2);
    struct nsc_event *e = nsc_events_start(&m, 0, &s2, NULL, 25);
    CHECK(e && !e->has_stop && m.orphans_by_type[NSC_ET_KERNEL_CH] == 1);
    struct nsc_rec bad = rec(NSC_REC_START, NSC_ET_COUNT, 3);
    CHECK(nsc_events_start(&m, 0, &bad, NULL, 1) == NULL); /* unknown type */
    nsc_events_free(&m);
}

/* At the end: open events by id, STOP-only ids counted as orphans. */
static void at_end(void) {
    struct nsc_events m;
    nsc_events_init(&m);
    uint64_t ids[] = {900, 5, 77, 1ull << 40, 0};
    for (unsigned i = 0; i < 5; i++) {
        struct nsc_rec s = rec(NSC_REC_START, NSC_ET_GROUP, ids[i]);
        nsc_events_start(&m, 0, &s, NULL, i);
    }
    struct nsc_rec t = rec(NSC_REC_STOP, NSC_ET_COLL, 33); /* never started */
    nsc_events_stop(&m, 0, &t, 1);
    uint64_t want[] = {0, 5, 77, 900, 1ull << 40}, prev = 0;
    unsigned n = 0;
    for (struct nsc_event *e; (e = nsc_events_next_open(&m)); n++) {
        CHECK(n < 5 && e->id == want[n]);
        CHECK(n == 0 || e->id > prev);
        prev = e->id;
        nsc_events_remove(&m, e);
    }
    CHECK(n == 5);
    CHECK(m.orphan_records == 1 && m.orphans_by_type[NSC_ET_COLL] == 1);
    nsc_events_free(&m);
}

static void states_and_gpu_end(void) {
    struct nsc_events m;
    nsc_events_init(&m);
    struct nsc_rec s = rec(NSC_REC_START, NSC_ET_KERNEL_CH, 4);
    struct nsc_event *e = nsc_events_start(&m, 0, &s, NULL, 1);
    for (unsigned i = 0; i < NSC_EVENT_MAX_STATES + 3; i++) {
        struct nsc_rec st = rec(NSC_REC_STATE, NSC_ET_KERNEL_CH, 4);
        st.h.aux = i == 0 ? NSC_ABI_KERNEL_CH_STOP : 1;
        st.u.state.arg = 5000 + i;
        nsc_events_state(&m, &st, 2 + i);
    }
    CHECK(e->nstates == NSC_EVENT_MAX_STATES && e->states_dropped == 3);
    CHECK(nsc_event_gpu_end(e) == 5000);
    struct nsc_rec p = rec(NSC_REC_START, NSC_ET_KERNEL_PHASE, 8);
    struct nsc_event *ph = nsc_events_start(&m, 0, &p, NULL, 1);
    struct nsc_rec st = rec(NSC_REC_STATE, NSC_ET_KERNEL_PHASE, 8);
    st.h.aux = NSC_ABI_KERNEL_CH_STOP; /* not a phase's end */
    st.u.state.arg = 1;
    nsc_events_state(&m, &st, 3);
    CHECK(nsc_event_gpu_end(ph) == 0);
    st.h.aux = NSC_ABI_KERNEL_PHASE_STOP;
    st.u.state.arg = 777;
    nsc_events_state(&m, &st, 4);
    CHECK(nsc_event_gpu_end(ph) == 777);
    nsc_events_free(&m); /* frees the open ones too (ASan) */
}

/* Many events in flight and finished: ids reused after removal pair again. */
static void churn(void) {
    struct nsc_events m;
    nsc_events_init(&m);
    unsigned failed = 0;
    for (uint64_t round = 0; round < 3; round++) {
        for (uint64_t id = 0; id < 20000; id++) {
            struct nsc_rec s = rec(NSC_REC_START, NSC_ET_PROXY_STEP, id);
            if (!nsc_events_start(&m, 0, &s, NULL, id))
                failed++;
        }
        unsigned done = 0;
        for (uint64_t id = 0; id < 20000; id++) {
            struct nsc_rec t = rec(NSC_REC_STOP, NSC_ET_PROXY_STEP, id);
            struct nsc_event *e = nsc_events_stop(&m, 0, &t, id + 1);
            if (e && e->start_ns == id) {
                done++;
                nsc_events_remove(&m, e);
            }
        }
        CHECK(done == 20000);
        CHECK(nsc_events_next_open(&m) == NULL);
        nsc_events_free(&m);
        nsc_events_init(&m);
    }
    CHECK(failed == 0);
    nsc_events_free(&m);
}

int main(void) {
    start_then_stop();
    stop_first();
    mismatches();
    at_end();
    states_and_gpu_end();
    churn();
    return check_summary();
}
