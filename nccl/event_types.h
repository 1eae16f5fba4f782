// SPDX-License-Identifier: Apache-2.0
/*
 * event_types.h - ncclscope's internal event model: the 16 NCCL event types
 * as small dense indices, their names, the names of states, and the parser
 * for NCCLSCOPE_EVENTS masks.
 *
 * A type index is what a trace record stores (4 bits); the NCCL mask bit of
 * type index i is (1 << i), which is how NCCL numbers them too. With v7's
 * KernelPhase the 4 bits are full: a 17th type needs a wider field in the
 * records, the packed encoding and the handles (docs/format.md).
 */
#ifndef NSC_EVENT_TYPES_H
#define NSC_EVENT_TYPES_H

#include <stdint.h>

enum nsc_etype {
    NSC_ET_GROUP = 0,
    NSC_ET_COLL = 1,
    NSC_ET_P2P = 2,
    NSC_ET_PROXY_OP = 3,
    NSC_ET_PROXY_STEP = 4,
    NSC_ET_PROXY_CTRL = 5,
    NSC_ET_KERNEL_CH = 6,
    NSC_ET_NET_PLUGIN = 7,
    NSC_ET_GROUP_API = 8,
    NSC_ET_COLL_API = 9,
    NSC_ET_P2P_API = 10,
    NSC_ET_KERNEL_LAUNCH = 11,
    NSC_ET_CE_COLL = 12,
    NSC_ET_CE_SYNC = 13,
    NSC_ET_CE_BATCH = 14,
    NSC_ET_KERNEL_PHASE = 15,
    NSC_ET_COUNT = 16
};

#define NSC_MASK_ALL ((1u << NSC_ET_COUNT) - 1)

/* The lean mask: every host-side event plus ProxyOp, but not KernelCh or
 * KernelPhase (NCCL itself pays time on every operation to produce GPU
 * timers, and asking for KernelPhase makes NCCL produce KernelCh too),
 * ProxyStep/NetPlugin (tens to hundreds of callbacks per operation on the
 * network path) or ProxyCtrl. */
#define NSC_MASK_LEAN                                                                          \
    ((1u << NSC_ET_GROUP_API) | (1u << NSC_ET_COLL_API) | (1u << NSC_ET_P2P_API) |              \
     (1u << NSC_ET_KERNEL_LAUNCH) | (1u << NSC_ET_GROUP) | (1u << NSC_ET_COLL) |                \
     (1u << NSC_ET_P2P) | (1u << NSC_ET_PROXY_OP) | (1u << NSC_ET_CE_COLL) |                    \
     (1u << NSC_ET_CE_SYNC) | (1u << NSC_ET_CE_BATCH))

/* The default mask, the one we defend for always-on use (docs/config.md):
 * the lean one plus KernelCh, which the plugin asks NCCL for on a sample of
 * the operations only (plugin/record/kernel_sample.h): GPU times and
 * completion, hence hang detection, on one node too. */
#define NSC_MASK_DEFAULT (NSC_MASK_LEAN | (1u << NSC_ET_KERNEL_CH))

/* "Coll", "ProxyStep", ... or NULL for an index out of range. */
const char *nsc_etype_name(unsigned etype);

/* Type index for an NCCL type bit (exactly one bit set), or -1. Inline:
 * every startEvent calls it. */
static inline int nsc_etype_from_bit(uint64_t bit) {
    if (bit == 0 || (bit & (bit - 1)) != 0)
        return -1;
    int i = __builtin_ctzll(bit);
    return i < NSC_ET_COUNT ? i : -1;
}

/* The event types profiler API `api_version` defines, as a mask (the VMIN
 * column of nccl/event_schema.def): 0x3f for v1 and v2, 0xff for v3 and v4,
 * 0xfff for v5, 0x7fff for v6, 0xffff for v7. */
uint32_t nsc_types_in_api(int api_version);

/* The part of `mask` that NCCL delivers through profiler API `api_version`
 * (1..7): the types that version defines, plus KernelCh when KernelPhase is
 * asked for (NCCL 2.31 produces KernelPhase only under a KernelCh and turns
 * KernelCh on itself). What a plugin hands NCCL at init and what a trace
 * should say it asked for. */
uint32_t nsc_mask_for_api(uint32_t mask, int api_version);

/* The Coll/P2p/ProxyOp/ProxyStep/KernelCh/NetPlugin events of a plan come,
 * in v1-v4 (NCCL 2.23-2.27), only under a Group handle (NSC_GROUP_GATES:
 * the types whose presence there makes NCCL start the Group). */
#define NSC_GROUP_GATES                                                                        \
    ((1u << NSC_ET_COLL) | (1u << NSC_ET_P2P) | (1u << NSC_ET_PROXY_OP) |                      \
     (1u << NSC_ET_PROXY_STEP) | (1u << NSC_ET_KERNEL_CH) | (1u << NSC_ET_NET_PLUGIN))

/* What to write into NCCL's mask for `mask` recorded through `api_version`:
 * nsc_mask_for_api, plus what that NCCL needs to deliver it. v1-v2 (NCCL
 * 2.23-2.25) start a plan's P2p events only when Coll, ProxyOp or ProxyStep
 * is in the mask: a mask with P2p and none of these gets Coll too (its
 * starts are then not recorded). */
uint32_t nsc_mask_for_nccl(uint32_t mask, int api_version);

/* "ProxyStepSendWait", "KernelChStop", ... or NULL for an unknown state. */
const char *nsc_state_name(unsigned state);

/* Parses a mask: a number (decimal or 0x hex) or a comma-separated list of
 * names (type names case-insensitively, and the groups all, default, api,
 * proxy, kernel, ce, net), each optionally prefixed with '-' to remove it.
 * Returns 0 and sets *mask, or -1 with a message in err (errlen bytes). */
int nsc_mask_parse(const char *text, uint32_t *mask, char *err, unsigned errlen);

/* Writes the mask as names into buf ("Coll,P2p,..."); returns buf. */
char *nsc_mask_format(uint32_t mask, char *buf, unsigned buflen);

/* Bytes per element of an NCCL datatype name; 1 when unknown. */
int nsc_dtype_size(const char *name);

#endif /* NSC_EVENT_TYPES_H */
