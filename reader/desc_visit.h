// SPDX-License-Identifier: Apache-2.0
/*
 * desc_visit.h - a START record's NCCL descriptor fields, typed, in the
 * order tools show them: what nccl/event_schema.def declares, read back
 * from the record and its EXT. For the converter's arguments, the reader
 * library and anyone who wants a trace's fields without a switch per
 * event type.
 */
#ifndef NSC_DESC_VISIT_H
#define NSC_DESC_VISIT_H

#include <stdint.h>

#include "trace_format.h"

enum nsc_desc_kind {
    NSC_DESC_U64 = 0,      /* v.u */
    NSC_DESC_I64 = 1,      /* v.i */
    NSC_DESC_STR_ID = 2,   /* v.u: an id of the file's string table (0 = NULL) */
    NSC_DESC_PTR = 3,      /* v.u: a pointer's value (tools show it in hex) */
    NSC_DESC_EVENT_ID = 4, /* v.u: another event's id in the same file */
    NSC_DESC_TEXT = 5,     /* v.text: a constant text (a NetPlugin's "ib"/"socket") */
    NSC_DESC_PY_STACK = 6, /* v.u: string id of the Python caller's stack (plugin/api/python_api.c) */
};

struct nsc_desc_field {
    const char *name; /* static */
    enum nsc_desc_kind kind;
    union {
        uint64_t u;
        int64_t i;
        const char *text;
    } v;
};

typedef void (*nsc_desc_fn)(void *ud, const struct nsc_desc_field *f);

/* Calls fn for each descriptor field of START record r (ext: its EXT, or
 * NULL when it has none), skipping fields the schema shows only when set
 * and that are 0. Returns how many fields were visited; 0 for a record that
 * is not a START or has an unknown type. */
unsigned nsc_desc_visit(const struct nsc_rec *r, const union nsc_ext *ext, nsc_desc_fn fn,
                        void *ud);

#endif /* NSC_DESC_VISIT_H */
