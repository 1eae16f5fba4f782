// SPDX-License-Identifier: Apache-2.0
/*
 * session.h - from the first init to the last finalize: the configuration,
 * the trace file and the flusher thread. All functions here are slow paths
 * serialised by one mutex.
 */
#ifndef NSC_SESSION_H
#define NSC_SESSION_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm_table.h"
#include "nccl_abi.h"

/* nsc_session_pid, our pid for the PXN check: record/comm_table.h. */

/* 1 while a session is open (its flusher running), for records that come
 * from no communicator: the Python package's (python_api.c). Set with
 * RELEASE once the flusher runs, cleared before it stops; a record written
 * just after the clear waits in its ring for the next session. */
extern _Atomic int nsc_session_live;

/* 1 while the ncclscope Python package traces in this process (set through
 * its table, python_api.c): NCCL's first init says on stderr when
 * NCCLSCOPE_PYTHON asks for Python tracing and nothing traces. */
extern _Atomic int nsc_py_tracing;

/* init: opens the session on first use and a comm slot. api_version:
 * NCCL's (1..7), or NSC_SESSION_API_NONE for the Python package's own
 * session (trace_format.h: the file learns NCCL's version at its first
 * init). Returns the comm
 * (*mask: what to record), or NULL: the comm runs without us, and *mask is
 * 0 when nothing records in this process (no session could open, a forked
 * child), untouched when others comms do (more than NSC_MAX_COMMS open). */
struct nsc_comm *nsc_session_comm_open(int api_version, uint64_t comm_id, const char *name,
                                       int nnodes, int nranks, int rank, nsc_abi_logger logfn,
                                       uint32_t *mask);

/* finalize: closes the comm, and the session after the last one. */
void nsc_session_comm_close(struct nsc_comm *c);

/* Flight mode: a dump of the window (control API, control files). Returns
 * 0, or -1 when no flight-mode session runs. */
int nsc_session_request_dump(void);

#endif /* NSC_SESSION_H */
