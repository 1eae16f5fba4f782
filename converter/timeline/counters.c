// SPDX-License-Identifier: Apache-2.0
/* counters.c - NCCL operations and bytes in flight per rank, as counter
 * tracks of the rank's process. */
#include "timeline_int.h"

static void counter(struct nsc_timeline *t, uint32_t serial, uint64_t ts, uint64_t ops,
                    uint64_t bytes) {
    struct nsc_tev e = {.k = NSC_TEV_COUNTER, .name = "NCCL operations in flight",
                        .ckey = "operations", .pid = tl_out_pid(t->f.index, serial), .ts = ts,
                        .cval = (int64_t)ops};
    tl_out(t, &e);
    e.name = "NCCL bytes in flight";
    e.ckey = "bytes";
    e.cval = (int64_t)bytes;
    tl_out(t, &e);
}

static void heap_pop(struct rank_view *v) {
    v->bytes_in_flight -= v->heap[0].bytes;
    v->heap[0] = v->heap[--v->nheap];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < v->nheap && v->heap[l].end < v->heap[m].end)
            m = l;
        if (r < v->nheap && v->heap[r].end < v->heap[m].end)
            m = r;
        if (m == i)
            break;
        __typeof__(v->heap[0]) x = v->heap[i];
        v->heap[i] = v->heap[m];
        v->heap[m] = x;
        i = m;
    }
}

/* Operations are reported close to their start order (completion order per
 * stream); the counters step at each start and each end seen so far. An
 * operation reported later than one that started after it shows in the
 * counter from its report on (documented approximation). */
void tl_inflight_add(struct nsc_timeline *t, uint32_t serial, struct rank_view *v, uint64_t start,
                     uint64_t end, uint64_t bytes) {
    while (v->nheap && v->heap[0].end <= start) {
        uint64_t ts = v->heap[0].end;
        heap_pop(v);
        counter(t, serial, ts, v->nheap, v->bytes_in_flight);
    }
    if (v->nheap == INFLIGHT_HEAP) {
        uint64_t ts = v->heap[0].end;
        heap_pop(v);
        counter(t, serial, ts, v->nheap, v->bytes_in_flight);
    }
    uint32_t i = v->nheap++;
    v->heap[i].end = end;
    v->heap[i].bytes = bytes;
    while (i && v->heap[(i - 1) / 2].end > v->heap[i].end) {
        __typeof__(v->heap[0]) x = v->heap[i];
        v->heap[i] = v->heap[(i - 1) / 2];
        v->heap[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
    v->bytes_in_flight += bytes;
    counter(t, serial, start, v->nheap, v->bytes_in_flight);
}

void tl_inflight_drain(struct nsc_timeline *t) {
    struct tl_file *f = &t->f;
    for (uint32_t s = 0; s < f->nviews; s++)
        while (f->views[s] && f->views[s]->nheap) {
            struct rank_view *v = f->views[s];
            uint64_t ts = v->heap[0].end;
            heap_pop(v);
            counter(t, s, ts, v->nheap, v->bytes_in_flight);
        }
}
