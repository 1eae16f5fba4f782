// SPDX-License-Identifier: Apache-2.0
/*
 * log.h - messages go through NCCL's logger (NCCL_DEBUG=INFO shows them),
 * or to stderr with NCCLSCOPE_DEBUG=1 when NCCL gave us no logger (API v1-v3).
 * Slow paths only: never called from a callback's fast path.
 */
#ifndef NSC_LOG_H
#define NSC_LOG_H

#include "nccl_abi.h"

void nsc_log_set_logger(nsc_abi_logger fn);
void nsc_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void nsc_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* NSC_LOG_H */
