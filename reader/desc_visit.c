// SPDX-License-Identifier: Apache-2.0
/* desc_visit.c - nccl/event_schema.def read back from records. */
#include "desc_visit.h"

#include "event_types.h"

/* Whether a row applies to this record, and where its value lives. */
#define HAS_D 1
#define HAS_X (x != NULL)
#define HAS_XC (x != NULL)
#define HAS_NIB (d->net.kind == 1)
#define HAS_NIBX (d->net.kind == 1 && x != NULL)
#define HAS_NSK (d->net.kind == 2)
#define HAS_NRAW (d->net.kind == 0)
#define SRC_D(m) d->m
#define SRC_X(m) x->m
#define SRC_XC(m) x->m
#define SRC_NIB(m) d->m
#define SRC_NIBX(m) x->m
#define SRC_NSK(m) d->m
#define SRC_NRAW(m) d->m

/* The value by kind (LIT's text is the row's ABI column). */
#define VK_U NSC_DESC_U64
#define VK_B NSC_DESC_U64
#define VK_NETU NSC_DESC_U64
#define VK_CETAG NSC_DESC_U64
#define VK_I NSC_DESC_I64
#define VK_NETI NSC_DESC_I64
#define VK_STR NSC_DESC_STR_ID
#define VK_PTR NSC_DESC_PTR
#define VK_NETID NSC_DESC_PTR
#define VK_NETPTR NSC_DESC_PTR
#define VK_PARENT NSC_DESC_EVENT_ID
#define VK_LIT NSC_DESC_TEXT
#define VK_PY NSC_DESC_PY_STACK
#define VAL_U(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_B(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_NETU(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_CETAG(f, src, abi) f.v.u = nsc_ce_coll_user_tag(d, x)
#define VAL_I(f, src, abi) f.v.i = (int64_t)(src)
#define VAL_NETI(f, src, abi) f.v.i = (int64_t)(src)
#define VAL_STR(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_PTR(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_NETID(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_NETPTR(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_PARENT(f, src, abi) f.v.u = (uint64_t)(src)
#define VAL_LIT(f, src, abi) f.v.text = abi
#define VAL_PY(f, src, abi) f.v.u = (uint64_t)(src)
#define SHOW_ALL(f) 1
#define SHOW_NZ(f) ((f).v.u != 0)

unsigned nsc_desc_visit(const struct nsc_rec *r, const union nsc_ext *x, nsc_desc_fn fn,
                        void *ud) {
    if (r->h.kind != NSC_REC_START)
        return 0;
    const union nsc_desc *d = &r->u.start.d;
    unsigned n = 0;
    switch (r->h.etype) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ET_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_FIELD(ET, NAME, KIND, ABI, WHERE, OURS, TSV, VMIN, SHOW)                           \
    if (HAS_##WHERE) {                                                                         \
        struct nsc_desc_field f;                                                               \
        f.name = NAME;                                                                         \
        f.kind = VK_##KIND;                                                                    \
        f.v.u = 0;                                                                             \
        VAL_##KIND(f, SRC_##WHERE(OURS), ABI);                                                 \
        if (SHOW_##SHOW(f)) {                                                                  \
            fn(ud, &f);                                                                        \
            n++;                                                                               \
        }                                                                                      \
    }
#include "event_schema.def"
    default:
        break;
    }
    return n;
}
