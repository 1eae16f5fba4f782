// SPDX-License-Identifier: Apache-2.0
/* nccl_v1_names.c - v1 enum values <-> names. */
#include "nccl_v1_names.h"

#include <string.h>

#include "nccl_abi.h"

static const char *const funcs[NSC_ABI_V1_NFUNCS] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send",      "Recv",   "AlltoAll",  "Scatter",       "Gather"};
static const char *const dtypes[NSC_ABI_V1_NDTYPES] = {
    "ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",   "ncclInt64",      "ncclUint64",
    "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
static const char *const algos[NSC_ABI_V1_NALGOS] = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char *const protos[NSC_ABI_V1_NPROTOS] = {"LL", "LL128", "SIMPLE"};

static const struct {
    const char *const *names;
    unsigned n;
} tables[] = {
    [NSC_V1_FUNC] = {funcs, NSC_ABI_V1_NFUNCS},
    [NSC_V1_DTYPE] = {dtypes, NSC_ABI_V1_NDTYPES},
    [NSC_V1_ALGO] = {algos, NSC_ABI_V1_NALGOS},
    [NSC_V1_PROTO] = {protos, NSC_ABI_V1_NPROTOS},
};

const char *nsc_v1_name(enum nsc_v1_table t, unsigned v) {
    return v < tables[t].n ? tables[t].names[v] : "?";
}

uint8_t nsc_v1_value(enum nsc_v1_table t, const char *s, uint8_t dflt) {
    if (s)
        for (unsigned i = 0; i < tables[t].n; i++)
            if (strcmp(s, tables[t].names[i]) == 0)
                return (uint8_t)i;
    return dflt;
}
