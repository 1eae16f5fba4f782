// SPDX-License-Identifier: Apache-2.0
/*
 * live_metrics.h - Prometheus numbers from the records the drainer sees
 * (NCCLSCOPE_METRICS_DIR), written for node-exporter's textfile collector.
 *
 * Who calls what:
 *   - the engine's drainers, through its observer hooks (engine.h, set by
 *     nsc_live_create): nsc_live_pass_begin() and _end() around each pass
 *     over the rings, and each packed record of the types in NSC_LIVE_TYPES
 *     (Coll, P2p, CeColl, KernelCh and ProxyOp) and each comm finalize;
 *   - whoever takes comm descriptions for the file (the drainer at a seal,
 *     or a compressor): nsc_live_comms();
 *   - the metrics thread (services/ops_thread.h): nsc_live_write() every
 *     NCCLSCOPE_METRICS_SECONDS and at the end, nsc_live_remove();
 *   - the session (its mutex): nsc_live_create() before the engine starts,
 *     nsc_live_destroy() after the engine and the metrics thread stopped.
 * The aggregates are under one mutex, which the drainer holds for a pass
 * and the metrics thread for a copy (never across I/O): the callbacks never
 * see any of this. Memory is bounded: operations in flight (NSC_LIVE_OPS),
 * their children (NSC_LIVE_KIDS), series (NSC_LIVE_SERIES); past a bound
 * an operation is counted but not timed, a series not created (counted in
 * ncclscope_metrics_overflow_total).
 *
 * An operation (Coll, P2p, CeColl) is counted at its START; it completes
 * by nccl/op_rules.h, once it and every child it had (ProxyOp, KernelCh)
 * stopped:
 *   - when every KernelCh of its nChannels has stopped, if KernelCh was
 *     recorded when it started and NCCL gives it KernelCh (not a Send/Recv
 *     to its own rank or of zero bytes): its latency is GPU time (last
 *     KernelChStop's %globaltimer − first KernelCh start), timing="gpu";
 *   - otherwise when nothing touched it for 100 ms: its latency runs from
 *     its START to the last of those stops, label timing="host".
 */
#ifndef NSC_LIVE_METRICS_H
#define NSC_LIVE_METRICS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "event_types.h"
#include "trace_format.h"

#define NSC_LIVE_OPS 65536
#define NSC_LIVE_KIDS 65536
#define NSC_LIVE_SERIES 4096

struct nsc_live;
/* The session's, or NULL when metrics are off: the engine's hooks test it. */
extern struct nsc_live *_Atomic nsc_live_on;

int nsc_live_create(const struct nsc_config *cfg, const struct nsc_session *s, char *err,
                    unsigned errlen);
void nsc_live_destroy(void);
/* NCCL's first init joined a session the Python package opened: its API
 * version (which channels KernelCh come on). Under the session mutex. */
void nsc_live_set_api(int api_version);

/* More series at the end of each file, written by fn(f, pid) on the
 * metrics thread (the hang suspect level's, set by the session: services/
 * does not depend on watch/). NULL: none. RELEASE/ACQUIRE. */
void nsc_live_set_extra(void (*fn)(FILE *f, int pid));

/* control.c: the mask being recorded now (0 while stopped). */
void nsc_live_set_mask(uint32_t mask);

void nsc_live_pass_begin(void);
void nsc_live_pass_end(void);
void nsc_live_comms(const struct nsc_comm_info *c, unsigned n);

/* The records the metrics follow. */
#define NSC_LIVE_TYPES                                                                         \
    ((1u << NSC_ET_COLL) | (1u << NSC_ET_P2P) | (1u << NSC_ET_CE_COLL) |                        \
     (1u << NSC_ET_KERNEL_CH) | (1u << NSC_ET_PROXY_OP))

/* Ops thread: writes <dir>/<host>-<pid>.prom (temporary name, rename);
 * `final`: the session's end, everything drained (host-timed operations
 * that stopped complete without waiting for the grace). Returns 0 or -1
 * (logged once per streak). */
int nsc_live_write(int final);
/* Removes the file (the session's end without NCCLSCOPE_METRICS_KEEP). */
void nsc_live_remove(void);

#endif /* NSC_LIVE_METRICS_H */
