// SPDX-License-Identifier: Apache-2.0
/* event_types.c - names of event types and states; mask parsing. */
#include "event_types.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const type_names[NSC_ET_COUNT] = {
    "Group",     "Coll",      "P2p",      "ProxyOp",      "ProxyStep",
    "ProxyCtrl", "KernelCh",  "NetPlugin", "GroupApi",    "CollApi",
    "P2pApi",    "KernelLaunch", "CeColl", "CeSync",      "CeBatch",
    "KernelPhase",
};

static const char *const state_names[] = {
    [0] = "ProxyOpSendPosted",
    [1] = "ProxyOpSendRemFifoWait",
    [2] = "ProxyOpSendTransmitted",
    [3] = "ProxyOpSendDone",
    [4] = "ProxyOpRecvPosted",
    [5] = "ProxyOpRecvReceived",
    [6] = "ProxyOpRecvTransmitted",
    [7] = "ProxyOpRecvDone",
    [8] = "ProxyStepSendGPUWait",
    [9] = "ProxyStepSendWait",
    [10] = "ProxyStepRecvWait",
    [11] = "ProxyStepRecvFlushWait",
    [12] = "ProxyStepRecvGPUWait",
    [13] = "ProxyCtrlIdle",
    [14] = "ProxyCtrlActive",
    [15] = "ProxyCtrlSleep",
    [16] = "ProxyCtrlWakeup",
    [17] = "ProxyCtrlAppend",
    [18] = "ProxyCtrlAppendEnd",
    [19] = "ProxyOpInProgress",
    [20] = "ProxyStepSendPeerWait",
    [21] = "NetPluginUpdate",
    [22] = "KernelChStop",
    [23] = "GroupStartApiStop",
    [24] = "GroupEndApiStart",
    [25] = "CeCollStart",
    [26] = "CeCollComplete",
    [27] = "CeSyncStart",
    [28] = "CeSyncComplete",
    [29] = "CeBatchStart",
    [30] = "CeBatchComplete",
    [31] = "KernelPhaseStop",
};

const char *nsc_etype_name(unsigned etype) {
    return etype < NSC_ET_COUNT ? type_names[etype] : NULL;
}

const char *nsc_state_name(unsigned state) {
    return state < sizeof(state_names) / sizeof(state_names[0]) ? state_names[state] : NULL;
}

/* event_schema.def declares every event type exactly once: a missing one
 * fails the count, a repeated one the enum (its name twice). */
enum {
#define NSC_EVENT(ET, VMIN, EXT) schema_row_##ET,
#include "event_schema.def"
    schema_rows
};
_Static_assert((int)schema_rows == (int)NSC_ET_COUNT, "event_schema.def: one NSC_EVENT per event type");

uint32_t nsc_types_in_api(int api_version) {
    if (api_version < 1)
        api_version = 1;
    uint32_t m = 0;
#define NSC_EVENT(ET, VMIN, EXT)                                                               \
    if (api_version >= (VMIN))                                                                 \
        m |= 1u << NSC_ET_##ET;
#include "event_schema.def"
    return m;
}

uint32_t nsc_mask_for_api(uint32_t mask, int api_version) {
    mask &= nsc_types_in_api(api_version);
    if (mask & (1u << NSC_ET_KERNEL_PHASE))
        mask |= 1u << NSC_ET_KERNEL_CH;
    return mask;
}

uint32_t nsc_mask_for_nccl(uint32_t mask, int api_version) {
    mask = nsc_mask_for_api(mask, api_version);
    const uint32_t enable = (1u << NSC_ET_COLL) | (1u << NSC_ET_PROXY_OP) | (1u << NSC_ET_PROXY_STEP);
    if (api_version <= 2 && (mask & (1u << NSC_ET_P2P)) && !(mask & enable))
        mask |= 1u << NSC_ET_COLL;
    return mask;
}

struct group {
    const char *name;
    uint32_t mask;
};

#define B(x) (1u << NSC_ET_##x)
static const struct group groups[] = {
    {"all", NSC_MASK_ALL},
    {"default", NSC_MASK_DEFAULT},
    {"lean", NSC_MASK_LEAN},
    {"api", B(GROUP_API) | B(COLL_API) | B(P2P_API) | B(KERNEL_LAUNCH)},
    {"proxy", B(PROXY_OP) | B(PROXY_STEP) | B(PROXY_CTRL)},
    {"kernel", B(KERNEL_CH) | B(KERNEL_LAUNCH) | B(KERNEL_PHASE)},
    {"ce", B(CE_COLL) | B(CE_SYNC) | B(CE_BATCH)},
    {"net", B(NET_PLUGIN)},
    {"none", 0},
};
#undef B

static int lookup(const char *name, size_t len, uint32_t *mask) {
    for (unsigned i = 0; i < NSC_ET_COUNT; i++)
        if (strlen(type_names[i]) == len && strncasecmp(type_names[i], name, len) == 0) {
            *mask = 1u << i;
            return 0;
        }
    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
        if (strlen(groups[i].name) == len && strncasecmp(groups[i].name, name, len) == 0) {
            *mask = groups[i].mask;
            return 0;
        }
    return -1;
}

int nsc_mask_parse(const char *text, uint32_t *mask, char *err, unsigned errlen) {
    while (isspace((unsigned char)*text))
        text++;
    if (isdigit((unsigned char)*text)) {
        char *end;
        unsigned long v = strtoul(text, &end, 0);
        while (isspace((unsigned char)*end))
            end++;
        if (*end != '\0' || v > NSC_MASK_ALL) {
            snprintf(err, errlen, "'%s' is not a mask of event types (0..0x%x)", text,
                     NSC_MASK_ALL);
            return -1;
        }
        *mask = (uint32_t)v;
        return 0;
    }
    uint32_t m = 0;
    const char *p = text;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        int negate = 0;
        if (*p == '-') {
            negate = 1;
            p++;
        }
        const char *start = p;
        while (*p && *p != ',' && !isspace((unsigned char)*p))
            p++;
        uint32_t bits;
        if (p == start || lookup(start, (size_t)(p - start), &bits) != 0) {
            snprintf(err, errlen,
                     "unknown event name '%.*s' (expected event types such as Coll, ProxyStep, "
                     "or all, default, api, proxy, kernel, ce, net)",
                     (int)(p - start), start);
            return -1;
        }
        m = negate ? (m & ~bits) : (m | bits);
    }
    *mask = m;
    return 0;
}

char *nsc_mask_format(uint32_t mask, char *buf, unsigned buflen) {
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < NSC_ET_COUNT; i++) {
        if (!(mask & (1u << i)))
            continue;
        int n = snprintf(buf + off, buflen - off, "%s%s", off ? "," : "", type_names[i]);
        if (n < 0 || (size_t)n >= buflen - off)
            break;
        off += (size_t)n;
    }
    return buf;
}

/* Bytes per element of an NCCL datatype name (ncclFloat32, ...); 1 for an
 * unknown or NULL name. Shared by the converter's bandwidths and the
 * plugin's live metrics. */
int nsc_dtype_size(const char *t) {
    static const struct { const char *name; int size; } tab[] = {
        {"ncclInt8", 1},    {"ncclChar", 1},     {"ncclUint8", 1},     {"ncclInt32", 4},
        {"ncclInt", 4},     {"ncclUint32", 4},   {"ncclInt64", 8},     {"ncclUint64", 8},
        {"ncclFloat16", 2}, {"ncclHalf", 2},     {"ncclFloat32", 4},   {"ncclFloat", 4},
        {"ncclFloat64", 8}, {"ncclDouble", 8},   {"ncclBfloat16", 2},  {"ncclFloat8e4m3", 1},
        {"ncclFloat8e5m2", 1},
    };
    for (size_t i = 0; t && i < sizeof(tab) / sizeof(tab[0]); i++)
        if (!strcmp(t, tab[i].name))
            return tab[i].size;
    return 1;
}
