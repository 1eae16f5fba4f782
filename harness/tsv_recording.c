/* tsv_recording.c - NCCL callback recordings (one line per call) to scripts. */
#include "tsv_recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"

#define MAX_FIELDS 40

struct kv {
    const char *k, *v;
};

static const char *get(const struct kv *kv, int n, const char *key) {
    for (int i = 0; i < n; i++)
        if (strcmp(kv[i].k, key) == 0)
            return kv[i].v;
    return NULL;
}

static uint64_t u64(const struct kv *kv, int n, const char *key) {
    const char *v = get(kv, n, key);
    if (!v || strcmp(v, "(nil)") == 0)
        return 0;
    return strtoull(v, NULL, 0);
}

static long long i64(const struct kv *kv, int n, const char *key) {
    const char *v = get(kv, n, key);
    return v ? strtoll(v, NULL, 0) : 0;
}

static const char *sv(struct nsc_script *s, const struct kv *kv, int n, const char *key) {
    const char *v = get(kv, n, key);
    return v && strcmp(v, "(null)") != 0 ? nsc_script_intern(s, v) : NULL;
}

static int type_from_name(const char *name) {
    for (unsigned i = 0; i < NSC_ET_COUNT; i++)
        if (strcmp(nsc_etype_name(i), name) == 0)
            return (int)i;
    return -1;
}

static void fill(struct nsc_script *s, struct nsc_call *c, int et, const struct kv *kv, int n) {
    nsc_abi_descr_v7 *d = &c->d;
    switch (et) {
    case NSC_ET_GROUP_API:
        d->groupApi.graphCaptured = u64(kv, n, "graph") != 0;
        d->groupApi.groupDepth = (int)i64(kv, n, "depth");
        break;
    case NSC_ET_COLL_API:
        d->collApi.func = sv(s, kv, n, "func");
        d->collApi.count = u64(kv, n, "count");
        d->collApi.datatype = sv(s, kv, n, "dtype");
        d->collApi.root = (int)i64(kv, n, "root");
        d->collApi.stream = (void *)(uintptr_t)u64(kv, n, "stream");
        d->collApi.graphCaptured = u64(kv, n, "graph") != 0;
        d->collApi.userTag = u64(kv, n, "userTag");
        break;
    case NSC_ET_P2P_API:
        d->p2pApi.func = sv(s, kv, n, "func");
        d->p2pApi.count = u64(kv, n, "count");
        d->p2pApi.datatype = sv(s, kv, n, "dtype");
        d->p2pApi.stream = (void *)(uintptr_t)u64(kv, n, "stream");
        d->p2pApi.graphCaptured = u64(kv, n, "graph") != 0;
        d->p2pApi.userTag = u64(kv, n, "userTag");
        break;
    case NSC_ET_KERNEL_LAUNCH:
        d->kernelLaunch.stream = (void *)(uintptr_t)u64(kv, n, "stream");
        break;
    case NSC_ET_COLL:
        d->coll.seqNumber = u64(kv, n, "seq");
        d->coll.func = sv(s, kv, n, "func");
        d->coll.count = u64(kv, n, "count");
        d->coll.root = (int)i64(kv, n, "root");
        d->coll.datatype = sv(s, kv, n, "dtype");
        d->coll.nChannels = (uint8_t)u64(kv, n, "nCh");
        d->coll.nWarps = (uint8_t)u64(kv, n, "nWarps");
        d->coll.algo = sv(s, kv, n, "algo");
        d->coll.proto = sv(s, kv, n, "proto");
        d->coll.kernelVariant = sv(s, kv, n, "kernelVariant");
        d->coll.isSymColl = u64(kv, n, "isSymColl") != 0;
        d->coll.userTag = u64(kv, n, "userTag");
        c->parent_group = u64(kv, n, "parentGroup");
        break;
    case NSC_ET_P2P:
        d->p2p.func = sv(s, kv, n, "func");
        d->p2p.count = u64(kv, n, "count");
        d->p2p.datatype = sv(s, kv, n, "dtype");
        d->p2p.peer = (int)i64(kv, n, "peer");
        d->p2p.nChannels = (uint8_t)u64(kv, n, "nCh");
        d->p2p.userTag = u64(kv, n, "userTag");
        c->parent_group = u64(kv, n, "parentGroup");
        break;
    case NSC_ET_PROXY_OP:
        d->proxyOp.pid = (pid_t)i64(kv, n, "pid");
        d->proxyOp.channelId = (uint8_t)u64(kv, n, "ch");
        d->proxyOp.peer = (int)i64(kv, n, "peer");
        d->proxyOp.nSteps = (int)i64(kv, n, "nSteps");
        d->proxyOp.chunkSize = (int)i64(kv, n, "chunk");
        d->proxyOp.isSend = (int)i64(kv, n, "isSend");
        break;
    case NSC_ET_PROXY_STEP:
        d->proxyStep.step = (int)i64(kv, n, "step");
        break;
    case NSC_ET_KERNEL_CH:
        d->kernelCh.channelId = (uint8_t)u64(kv, n, "ch");
        d->kernelCh.pTimer = u64(kv, n, "ptimer");
        break;
    case NSC_ET_CE_COLL:
        d->ceColl.seqNumber = u64(kv, n, "seq");
        d->ceColl.func = sv(s, kv, n, "func");
        d->ceColl.count = u64(kv, n, "count");
        d->ceColl.root = (int)i64(kv, n, "root");
        d->ceColl.datatype = sv(s, kv, n, "dtype");
        d->ceColl.syncStrategy = sv(s, kv, n, "sync");
        d->ceColl.intraBatchSync = u64(kv, n, "intraSync") != 0;
        d->ceColl.batchSize = (uint32_t)u64(kv, n, "batchSize");
        d->ceColl.numBatches = (uint32_t)u64(kv, n, "numBatches");
        d->ceColl.ceSeqNum = (uint32_t)u64(kv, n, "ceSeq");
        d->ceColl.stream = (void *)(uintptr_t)u64(kv, n, "stream");
        d->ceColl.userTag = u64(kv, n, "userTag");
        break;
    case NSC_ET_CE_SYNC:
        d->ceCollSync.isComplete = u64(kv, n, "complete") != 0;
        d->ceCollSync.nRanks = (int)i64(kv, n, "nRanks");
        break;
    case NSC_ET_CE_BATCH:
        d->ceCollBatch.numOps = (int)i64(kv, n, "numOps");
        d->ceCollBatch.totalBytes = u64(kv, n, "totalBytes");
        d->ceCollBatch.useIntraSync = u64(kv, n, "intraSync") != 0;
        break;
    case NSC_ET_KERNEL_PHASE:
        d->kernelPhase.channelId = (uint8_t)u64(kv, n, "ch");
        d->kernelPhase.phaseId = (uint8_t)u64(kv, n, "phaseId");
        d->kernelPhase.phaseName = sv(s, kv, n, "phaseName");
        d->kernelPhase.pTimer = u64(kv, n, "ptimer");
        break;
    default:
        break;
    }
}

static int comm_index(struct nsc_script *s, uint64_t *ctx_ids, uint64_t ctx) {
    for (size_t i = 0; i < s->ncomms; i++)
        if (ctx_ids[i] == ctx)
            return (int)i;
    return -1;
}

int nsc_script_from_tsv(struct nsc_script *s, const char *path, char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    uint64_t ctx_ids[256];
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        char *fld[MAX_FIELDS];
        int nf = 0;
        for (char *p = line, *tok; nf < MAX_FIELDS && (tok = strsep(&p, "\t")) != NULL;)
            fld[nf++] = tok;
        if (nf < 5) {
            snprintf(err, errlen, "%s:%ld: expected seq, tid, t_ns, call and its fields", path,
                     lineno);
            rc = -1;
            break;
        }
        uint32_t tid = (uint32_t)strtoul(fld[1], NULL, 10);
        char op = fld[3][0];
        struct nsc_call *c = nsc_script_add(s);
        if (!c) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        c->thread = nsc_script_thread(s, tid, NULL);
        c->t_ns = strtoull(fld[2], NULL, 10);
        if (op == 'I' && nf >= 11) {
            if (s->ncomms >= 256) {
                snprintf(err, errlen, "%s:%ld: more than 256 contexts", path, lineno);
                rc = -1;
                break;
            }
            struct nsc_script_comm *cm = realloc(s->comms, (s->ncomms + 1) * sizeof(*cm));
            if (!cm) {
                rc = -1;
                break;
            }
            s->comms = cm;
            memset(&cm[s->ncomms], 0, sizeof(cm[0]));
            ctx_ids[s->ncomms] = strtoull(fld[4], NULL, 10);
            cm[s->ncomms].comm_id = strtoull(fld[5], NULL, 10);
            cm[s->ncomms].nnodes = atoi(fld[6]);
            cm[s->ncomms].nranks = atoi(fld[7]);
            cm[s->ncomms].rank = atoi(fld[8]);
            if (strcmp(fld[9], "(null)") != 0)
                snprintf(cm[s->ncomms].name, sizeof(cm[0].name), "%s", fld[9]);
            c->kind = NSC_CALL_INIT;
            c->comm = (uint32_t)s->ncomms++;
        } else if (op == 'S' && nf >= 9) {
            int ci = comm_index(s, ctx_ids, strtoull(fld[4], NULL, 10));
            int et = type_from_name(fld[6]);
            if (ci < 0 || et < 0) {
                snprintf(err, errlen, "%s:%ld: unknown context %s or event type %s", path, lineno,
                         fld[4], fld[6]);
                rc = -1;
                break;
            }
            struct kv kv[MAX_FIELDS];
            int nkv = 0;
            for (int i = 9; i < nf; i++) {
                char *eq = strchr(fld[i], '=');
                if (!eq)
                    continue;
                *eq = '\0';
                kv[nkv].k = fld[i];
                kv[nkv].v = eq + 1;
                nkv++;
            }
            c->kind = NSC_CALL_START;
            c->comm = (uint32_t)ci;
            c->id = strtoull(fld[5], NULL, 10);
            c->parent = strtoull(fld[7], NULL, 10);
            c->d.type = 1ull << et;
            c->d.rank = atoi(fld[8]);
            fill(s, c, et, kv, nkv);
        } else if (op == 'E' && nf >= 5) {
            c->kind = NSC_CALL_STOP;
            c->id = strtoull(fld[4], NULL, 10);
        } else if (op == 'R' && nf >= 7) {
            c->kind = NSC_CALL_STATE;
            c->id = strtoull(fld[4], NULL, 10);
            c->state = atoi(fld[5]);
            char *eq = strchr(fld[6], '=');
            c->arg = eq ? strtoull(eq + 1, NULL, 0) : 0;
        } else if (op == 'F' && nf >= 5) {
            int ci = comm_index(s, ctx_ids, strtoull(fld[4], NULL, 10));
            if (ci < 0) {
                snprintf(err, errlen, "%s:%ld: finalize of unknown context %s", path, lineno,
                         fld[4]);
                rc = -1;
                break;
            }
            c->kind = NSC_CALL_FINALIZE;
            c->comm = (uint32_t)ci;
        } else {
            snprintf(err, errlen, "%s:%ld: unrecognised call '%s'", path, lineno, fld[3]);
            rc = -1;
            break;
        }
    }
    free(line);
    fclose(f);
    if (rc != 0)
        nsc_script_free(s);
    return rc;
}
