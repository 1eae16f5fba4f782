// SPDX-License-Identifier: Apache-2.0
/* test_conv_sampled.c - KernelCh sampled (format 4, NSC_RF_SAMPLED): the
 * per-operation rule of the operation tracker (coll_track.h) and of hang
 * (hang_model.h, reports/hang.c). An operation that was not sampled has no
 * GPU time and no completion of its own: it completes when a later one of
 * its comm does (inferred), else its completion is unknown, never stuck by
 * itself; in a killed job it may be stuck before a stuck sampled one, and
 * hang names it as the root where a rank never entered it. */
#include "check.h"
#include "conv_trace.h"
#include "hang.h"
#include "hang_model.h"
#include "ops.h"

/* string ids 2.. */
static const char *const strs[] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE", "AllGather",
                                   "Broadcast", NULL};
enum { S_ALLREDUCE = 2, S_ALLGATHER = 6, S_BROADCAST = 7 };
#define MASK_GPU ((1u << NSC_ET_COLL) | (1u << NSC_ET_KERNEL_CH))

/* A collective of comm `serial`: sampled or not, enqueued (START, STOP);
 * with `ran` its one channel's KernelCh (GPU gs..gs+50). */
static void coll(struct ct_trace *t, uint32_t serial, uint64_t id, uint64_t ns, uint32_t func,
                 uint64_t seq, int sampled, int ran) {
    struct nsc_rec *r = ct_coll(t, 0, id, ns, seq, 256, 1);
    r->h.aux = serial;
    r->u.start.d.coll.func = func;
    if (!sampled)
        r->h.flags &= (uint16_t)~NSC_RF_SAMPLED;
    ct_rec(t, 0, NSC_REC_STOP, NSC_ET_COLL, id, ns + 5)->h.aux = serial;
    if (ran)
        ct_kernel_ch(t, 1, id + 1000000, id, 0, ns + 10, ns - 900, ns - 850, ns + 60);
}

struct got {
    struct nsc_op_done op[16];
    unsigned n;
};

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct got *g = ud;
    if (g->n < 16) {
        g->op[g->n] = *op;
        g->op[g->n].func = g->op[g->n].dtype = g->op[g->n].algo = g->op[g->n].proto = NULL;
        g->op[g->n].open = NULL;
        g->n++;
    }
}

/* The tracker: 20 and 30 (not sampled) complete when 40 does, reported
 * before it; 50 (not sampled, after the last completion) is in flight at
 * the end with its completion unknown, not stuck; the sampled 60, whose
 * kernel never ran in this cleanly closed file, is not stuck either (its
 * last KernelCh may come after finalize) and makes nothing "maybe". */
static void tracker(void) {
    struct ct_trace t;
    ct_begin(&t, MASK_GPU, "h", 1, 0, strs, 0xabc, 0, 2);
    coll(&t, 1, 10, 2000, S_ALLREDUCE, 0, 1, 1);
    coll(&t, 1, 20, 3000, S_ALLREDUCE, 1, 0, 0);
    coll(&t, 1, 30, 4000, S_ALLREDUCE, 2, 0, 0);
    coll(&t, 1, 40, 5000, S_ALLREDUCE, 3, 1, 1);
    coll(&t, 1, 50, 6000, S_ALLREDUCE, 4, 0, 0);
    coll(&t, 1, 60, 7000, S_ALLREDUCE, 5, 1, 0);
    ct_finish(&t);
    char path[64];
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    struct got g;
    memset(&g, 0, sizeof(g));
    struct nsc_ops_hooks h = {.op = on_op};
    CHECK(nsc_ops_pass(path, 0, &h, &g) == 0);
    CHECK(g.n == 6);
    uint64_t order[] = {10, 20, 30, 40, 50, 60};
    for (unsigned i = 0; i < 6 && i < g.n; i++)
        CHECK(g.op[i].id == order[i] && g.op[i].kernel == 1);
    const struct nsc_op_done *o = g.op;
    CHECK(o[0].sampled && !o[0].inferred && o[0].gpu_end == 1150 && !o[0].at_end);
    CHECK(!o[1].sampled && o[1].inferred && !o[1].at_end && o[1].gpu_start == 0 &&
          !nsc_op_completion_unknown(&o[1]));
    CHECK(!o[2].sampled && o[2].inferred && !o[2].at_end);
    CHECK(o[3].sampled && o[3].kernel_channels_done == 1 && !o[3].at_end);
    CHECK(!o[4].sampled && !o[4].inferred && o[4].at_end && nsc_op_completion_unknown(&o[4]) &&
          !nsc_op_stuck(&o[4]) && !o[4].maybe_stuck);
    CHECK(o[5].sampled && o[5].at_end && !nsc_op_stuck(&o[5]));
    /* the rows API: no GPU time where not sampled, the flag with it */
    unlink(path);
    free(t.b.p);

    /* Format 3 has no flag: every operation expects KernelCh (the mask). */
    ct_begin(&t, MASK_GPU, "h", 1, 0, strs, 0xabc, 0, 2);
    coll(&t, 1, 10, 2000, S_ALLREDUCE, 0, 0, 1);
    coll(&t, 1, 20, 3000, S_ALLREDUCE, 1, 0, 1);
    ct_finish(&t);
    /* the file header's and the SESSION block's version (both read) */
    uint32_t v3 = 3;
    memcpy(t.b.p + 8, &v3, 4);
    struct nsc_block_header bh;
    memcpy(&bh, t.b.p + 16, sizeof(bh));
    struct nsc_session s;
    memcpy(&s, t.b.p + 16 + sizeof(bh), sizeof(s));
    s.format_version = 3;
    memcpy(t.b.p + 16 + sizeof(bh), &s, sizeof(s));
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    memset(&g, 0, sizeof(g));
    CHECK(nsc_ops_pass(path, 0, &h, &g) == 0);
    CHECK(g.n == 2 && g.op[0].sampled && g.op[1].sampled && !g.op[0].inferred &&
          g.op[0].kernel_channels_done == 1 && g.op[1].gpu_end != 0);
    unlink(path);
    free(t.b.p);
}

/* A trace cut without its END block (a killed job). */
static void cut(struct ct_trace *t) {
    ct_finish(t);
    t->b.len -= sizeof(struct nsc_block_header); /* the END block (empty) */
}

/* A second comm (serial 2) in the trace. */
static void comm2(struct ct_trace *t, uint64_t comm_id, int rank, int nranks) {
    struct nsc_comm_info c;
    memset(&c, 0, sizeof(c));
    c.serial = 2;
    c.rank = rank;
    c.nranks = nranks;
    c.nnodes = 1;
    c.comm_id = comm_id;
    ct_block(&t->b, NSC_BLK_COMMS, &c, sizeof(c));
}

/* The user's job with KernelCh sampled: 4 ranks of comm A; rank 2 skips
 * AllReduce 1 and goes on to AllGather 1, the others enqueue AllReduce 1,
 * AllGather 1, then AllReduce 2: only AllReduce 0 and 2 (and AllGather 0
 * on rank 2) were sampled. Ranks 0 and 1 also run comm B's Broadcasts, 1
 * (not sampled) and 2 (sampled) after AllReduce 1. */
static void job(char paths[4][256], const char *dir) {
    for (int r = 0; r < 4; r++) {
        struct ct_trace t;
        ct_begin(&t, MASK_GPU, "h", 100 + (uint32_t)r, 0, strs, 0xaaaa, r, 4);
        if (r < 2)
            comm2(&t, 0xbbbb, r, 2);
        coll(&t, 1, 10, 2000, S_ALLREDUCE, 0, 1, 1);
        if (r < 2)
            coll(&t, 2, 15, 2500, S_BROADCAST, 0, 1, 1);
        coll(&t, 1, 20, 3000, S_ALLGATHER, 0, r == 2, 0);
        if (r != 2) {
            coll(&t, 1, 30, 4000, S_ALLREDUCE, 1, 0, 0);
            coll(&t, 1, 40, 5000, S_ALLGATHER, 1, 0, 0);
            if (r < 2) {
                coll(&t, 2, 45, 5500, S_BROADCAST, 1, 0, 0);
                coll(&t, 2, 46, 5600, S_BROADCAST, 2, 1, 0);
            }
            coll(&t, 1, 50, 6000, S_ALLREDUCE, 2, 1, 0);
        } else {
            coll(&t, 1, 40, 5000, S_ALLGATHER, 1, 0, 0);
        }
        cut(&t);
        if (dir) { /* kept for the Python package's test (tests/python) */
            snprintf(paths[r], 256, "%.200s/rank%d.nsc", dir, r);
            FILE *f = fopen(paths[r], "wb");
            CHECK(f && fwrite(t.b.p, 1, t.b.len, f) == t.b.len);
            if (f)
                fclose(f);
        } else {
            CHECK(ct_write(&t, paths[r], 256) != NULL);
        }
        free(t.b.p);
    }
}

static void hang(void) {
    char paths[4][256];
    job(paths, NULL);
    const char *files[4] = {paths[0], paths[1], paths[2], paths[3]};
    struct nsc_hm_job j;
    FILE *err = tmpfile();
    nsc_hm_read(&j, files, 4, 1, err);
    struct nsc_hm_entry *e = NULL;
    size_t n = 0;
    CHECK(nsc_hm_entries(&j, &e, &n) == 0);
    CHECK(n == 2);
    if (n == 2) {
        /* the root: AllReduce 1, rank 2 never entered it, inferred */
        CHECK(e[0].comm == 0xaaaa && e[0].target && !strcmp(e[0].target->func, "AllReduce") &&
              e[0].target->seq == 1 && e[0].inferred && e[0].cause.behind == -1);
        CHECK(e[0].nmissing == 1 && e[0].missing[0] == 2 && e[0].ndone == 0);
        /* comm B waits behind it on ranks 0 and 1: its stuck sampled Broadcast */
        CHECK(e[1].comm == 0xbbbb && e[1].target && !strcmp(e[1].target->func, "Broadcast") &&
              e[1].target->seq == 2 && !e[1].inferred && e[1].cause.behind == 0 &&
              e[1].cause.nranks == 2);
    }
    CHECK(j.kernel_ops > j.sampled_ops && j.sampled_ops > 0);
    nsc_hm_entries_free(e, n);
    nsc_hm_free(&j);
    /* the output says so */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK(nsc_hang(files, 4, 1, 1, out, err) == 4);
    fclose(out);
    CHECK(buf && strstr(buf, "\"inferred\":true,\"completion\":\"inferred from sampled completion\""));
    CHECK(buf && strstr(buf, "\"kernel_sampled\":{\"sampled\":"));
    CHECK(buf && strstr(buf, "\"maybe_stuck\":true"));
    free(buf);
    out = open_memstream(&buf, &len);
    CHECK(nsc_hang(files, 4, 0, 1, out, err) == 4);
    fclose(out);
    CHECK(buf && strstr(buf, "hang at AllReduce seqNumber 1\n  inferred from sampled completion"));
    CHECK(buf && strstr(buf, "never entered it: rank 2 (last entered seqNumber 0)"));
    CHECK(buf && strstr(buf, "KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): "));
    free(buf);
    fclose(err);
    for (int r = 0; r < 4; r++)
        unlink(paths[r]);
}

/* With a directory: writes the killed job's four files there, no test. */
int main(int argc, char **argv) {
    if (argc == 2) {
        char paths[4][256];
        job(paths, argv[1]);
        return check_summary();
    }
    tracker();
    hang();
    return check_summary();
}
