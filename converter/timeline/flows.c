// SPDX-License-Identifier: Apache-2.0
/* flows.c - flow arrows: parent -> child inside a file, and one chain per
 * collective across the ranks, in the order the files are read. */
#include "timeline_int.h"

#include "hash.h"
#include "id_map.h"
#include "spool.h"

static void flow_point(struct nsc_timeline *t, int out, uint64_t id, const char *name,
                       uint64_t pid, uint64_t tid, uint64_t ts) {
    struct nsc_tev e = {.k = out ? NSC_TEV_FLOW_OUT : NSC_TEV_FLOW_IN, .id = id, .name = name,
                        .pid = pid, .tid = tid, .ts = ts};
    tl_out(t, &e);
}

/* An arrow from (pid, tid, ts) to the slice starting at (pid2, tid2, ts2). */
void tl_flow(struct nsc_timeline *t, uint64_t id, const char *name, const struct placed *from,
             uint64_t pid2, uint64_t tid2, uint64_t ts2) {
    flow_point(t, 1, id, name, from->pid, from->tid, from->ts);
    flow_point(t, 0, id, name, pid2, tid2, ts2);
    t->tot.flows++;
}

/* A direct-mapped cache: an event written long ago may be forgotten (its
 * children then get no arrow), which keeps memory fixed. */
struct placed *tl_recent_slot(struct nsc_timeline *t, uint64_t local_id) {
    return &t->recent[(local_id * 0x9e3779b97f4a7c15ull) >> 48];
}

/* Collective key: NCCL numbers collectives per (communicator, function). */
static uint64_t coll_key(const struct nsc_op_done *op) {
    uint64_t h = nsc_fnv1a_str(op->comm_id * 0x9e3779b97f4a7c15ull ^ (op->seq + 1), op->func);
    return h ? h : 1;
}

/* The arrow to this rank's drawing of a collective from the rank drawn
 * before it (an earlier file), and this drawing remembered. */
void tl_chain_point(struct nsc_timeline *t, const struct nsc_chain_point *c) {
    struct placed *p = nsc_id_map_find(&t->chain, c->key);
    if (p) {
        tl_flow(t, c->flow_id, c->name, p, c->pid, c->tid, c->ts);
    } else if (nsc_id_map_count(&t->chain) >= CHAIN_MAX ||
               !(p = nsc_id_map_insert(&t->chain, c->key, NULL))) {
        t->tot.chains_not_linked++;
        return;
    }
    *p = (struct placed){c->key, c->pid, c->tid, c->ts};
}

void tl_chain(struct nsc_timeline *t, const struct nsc_op_done *op, uint64_t pid, uint32_t tid,
              uint64_t ts) {
    struct nsc_chain_point c = {coll_key(op),
                                tl_out_id(t, t->f.index, op->id) | (1ull << 62) /* apart from parent arrows */,
                                pid, tid, ts, op->func ? op->func : "collective"};
    if (nsc_sink_spool(t->sink)) { /* depends on the files before: resolved at the replay */
        if (nsc_sink_spool_chain(t->sink, &c) != 0)
            t->spool_failed = 1;
        return;
    }
    tl_chain_point(t, &c);
}

int nsc_timeline_replay(struct nsc_timeline *t, FILE *spool) {
    struct nsc_spool_item it;
    if (nsc_spool_item_init(&it) != 0)
        return -1;
    int rc;
    while ((rc = nsc_spool_next(spool, &it)) == 1) {
        if (it.is_chain)
            tl_chain_point(t, &it.chain);
        else if (it.raw)
            nsc_sink_raw(t->sink, it.raw, it.raw_len);
        else
            tl_out(t, &it.ev);
    }
    nsc_spool_item_free(&it);
    return rc;
}

int nsc_timeline_spool_failed(const struct nsc_timeline *t) { return t->spool_failed; }

void nsc_timeline_add_totals(struct nsc_timeline *t, const struct nsc_timeline_totals *o) {
    t->tot.events += o->events;
    t->tot.unfinished += o->unfinished;
    t->tot.filtered += o->filtered;
    t->tot.flows += o->flows;
    t->tot.chains_not_linked += o->chains_not_linked;
    t->tot.ranks_matched += o->ranks_matched;
    t->tot.comm_matched += o->comm_matched;
}
