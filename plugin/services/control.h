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

/* nsc_ctl_recording(), the mask being recorded: record/hot_line.h. */

/* Session start: the mask to record (NCCLSCOPE_EVENTS, unless set_mask was
 * called earlier in the process, which wins) limited to api_version; the
 * state of stop/start carries over. Returns the mask (the SESSION block's). */
uint32_t nsc_ctl_session_open(uint32_t cfg_mask, int api_version);
void nsc_ctl_session_close(void);

/* init/finalize: remembers where NCCL re-reads the mask and writes it. */
void nsc_ctl_comm_open(struct nsc_comm *c, int *nccl_mask);
void nsc_ctl_comm_close(struct nsc_comm *c);

/* The commands (api/control_api.c, the control files): NCCLSCOPE_OK or
 * another NCCLSCOPE_* status (include/ncclscope.h). */
int nsc_ctl_start(void);
int nsc_ctl_stop(void);
int nsc_ctl_set_mask(uint32_t mask);
int nsc_ctl_set_events(const char *names);
int nsc_ctl_dump(void);
int nsc_ctl_mark(const char *text);
/* A user's text (a mark, a Python location) as a string id, within the
 * user's part of the string table (intern.h); "?" past it, with one log
 * line per process at the first refusal. Not on NCCL's threads. */
uint16_t nsc_ctl_intern_user(const char *text);
const char *nsc_ctl_strerror(int status);
/* The session's dump function (flight mode: 0 when a dump was asked for),
 * which nsc_ctl_dump calls: control depends on no session code. */
void nsc_ctl_set_dump(int (*fn)(void));
/* Writes the comms' masks again when a chained plugin changed its own. */
void nsc_ctl_refresh_chained(void);

/* control_files.c. The session, at its start: where the control files are
 * (<dir>/control, <dir>/<stem>.control); what they hold now is history. */
void nsc_ctl_files_open(const char *dir, const char *stem);
/* Ops thread: applies commands appended to the control files
 * (<dir>/control, <dir>/<stem>.control) and re-reads chained plugins'
 * masks. Never blocks on anything but the file system. */
void nsc_ctl_poll(void);

/* fork() handlers for the control state's mutex (session.c registers them). */
void nsc_ctl_atfork_prepare(void);
void nsc_ctl_atfork_parent(void);
void nsc_ctl_atfork_child(void);

#endif /* NSC_CONTROL_H */
