// SPDX-License-Identifier: Apache-2.0
/*
 * nccl_v1_names.h - API v1 passes func, datatype, algo and proto as enum
 * values (ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*); later
 * versions pass their names. One table serves both directions: the plugin
 * turns v1 values into names, the test host turns names into v1 values.
 */
#ifndef NSC_NCCL_V1_NAMES_H
#define NSC_NCCL_V1_NAMES_H

#include <stdint.h>

enum nsc_v1_table { NSC_V1_FUNC, NSC_V1_DTYPE, NSC_V1_ALGO, NSC_V1_PROTO };

/* Name of value v, or "?" when out of range. */
const char *nsc_v1_name(enum nsc_v1_table t, unsigned v);

/* Value of name s, or dflt when s is NULL or unknown (NCCL's v1 adapter
 * also falls back to a default). */
uint8_t nsc_v1_value(enum nsc_v1_table t, const char *s, uint8_t dflt);

#endif /* NSC_NCCL_V1_NAMES_H */
