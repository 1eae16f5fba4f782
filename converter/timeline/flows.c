/* flows.c - flow arrows: parent -> child inside a file, and one chain per
 * collective across the ranks, in the order the files are read. */
#include "timeline_int.h"

#include "hash.h"
#include "id_map.h"

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

void tl_chain(struct nsc_timeline *t, const struct nsc_op_done *op, uint64_t pid, uint32_t tid) {
    uint64_t key = coll_key(op);
    struct placed *p = nsc_id_map_find(&t->chain, key);
    if (p) {
        tl_flow(t, tl_out_id(t, t->f.index, op->id) | (1ull << 62) /* apart from parent arrows */,
                op->func ? op->func : "collective", p, pid, tid, op->start_ns);
    } else if (nsc_id_map_count(&t->chain) >= CHAIN_MAX ||
               !(p = nsc_id_map_insert(&t->chain, key, NULL))) {
        t->tot.chains_not_linked++;
        return;
    }
    *p = (struct placed){key, pid, tid, op->start_ns};
}
