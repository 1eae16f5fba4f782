// SPDX-License-Identifier: Apache-2.0
/*
 * control.h - run-time control: what ncclscope records now, the event mask
 * NCCL re-reads, and the commands that change them (the exported C API of
 * include/ncclscope.h and the control files read by the ops thread).
 *
 * Who calls what:
 *   - nsc_ctl_recording(): every startEvent (hot path: one relaxed load);
 *   - nsc_ctl_session_open/close(), nsc_ctl_comm_open/close(): init and
 *     finalize, under the session mutex;
 *   - the exported ncclscope_control_*() functions: any thread, any time;
 *   - nsc_ctl_poll(): the ops thread (plugin/ops.h), a few times a second.
 * Everything but nsc_ctl_recording() takes the control mutex, which is
 * never held across I/O or a call into NCCL or a chained plugin's callbacks
 * other than reading its mask cell, and is taken after (inside) the session
 * mutex, never the other way round.
 *
 * The mask NCCL gets. NCCL hands init a pointer to the int it re-reads
 * before producing events (one global in NCCL; we keep each comm's). We
 * write there the event types we record ((recording ? mask : 0)) or'ed with
 * those a chained plugin asked for, limited to the API version
 * (nsc_mask_for_api): stop() lowers it, so NCCL stops producing what nobody
 * takes, and the hot path's check covers the calls already under way. The
 * int is touched after init only when the mask changes (a command, a
 * chained plugin's new mask): NCCL's is a global; a host that hands init a
 * temporary (some test drivers) must not use run-time control.
 */
#ifndef NSC_CONTROL_H
#define NSC_CONTROL_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm_table.h"
#include "hot_line.h"

/* The NCCL type bits recorded now: the session's mask, or 0 while stopped.
 * RELAXED: a start that reads the old value a moment after stop() is
 * recorded as if it came just before it; nothing else is published through
 * this word. */
#define nsc_ctl_record_mask (nsc_hot.record_mask) /* on the hot line (hot_line.h) */

/* ncclscope_bench_passthrough's handle (control.c). */
extern char nsc_passthrough_token __attribute__((visibility("hidden")));
/* ncclscope_bench_passthrough(2): one timestamp and one line per call into
 * a private ring (control.c), the floor plugin's work. */
void nsc_bench_floor(uint64_t kind, uint64_t what) __attribute__((visibility("hidden")));

static inline uint32_t nsc_ctl_recording(void) {
    return atomic_load_explicit(&nsc_ctl_record_mask, memory_order_relaxed);
}

/* Session start: the mask to record (NCCLSCOPE_EVENTS, unless set_mask was
 * called earlier in the process, which wins) limited to api_version; the
 * state of stop/start carries over. Returns the mask (the SESSION block's). */
uint32_t nsc_ctl_session_open(uint32_t cfg_mask, int api_version, const char *dir,
                              const char *stem);
void nsc_ctl_session_close(void);

/* init/finalize: remembers where NCCL re-reads the mask and writes it. */
void nsc_ctl_comm_open(const struct nsc_comm *c, int *nccl_mask);
void nsc_ctl_comm_close(const struct nsc_comm *c);

/* Ops thread: applies commands appended to the control files
 * (<dir>/control, <dir>/<stem>.control) and re-reads chained plugins'
 * masks. Never blocks on anything but the file system. */
void nsc_ctl_poll(void);

#endif /* NSC_CONTROL_H */
