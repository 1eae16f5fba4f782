// SPDX-License-Identifier: Apache-2.0
/*
 * ops_thread.h - the slow, periodic work that must not run on the callback
 * path nor hold up the drainer or the disk writer, on two threads of its own:
 *   - the ops thread, every 100 ms: the control files and chained plugins'
 *     masks (control.h);
 *   - the metrics thread (with NCCLSCOPE_METRICS_DIR), every
 *     NCCLSCOPE_METRICS_SECONDS: the Prometheus text file (live_metrics.h),
 *     written to a fresh temporary name and renamed; at the session's end
 *     the last file (NCCLSCOPE_METRICS_KEEP=1) or its removal.
 * Each file system stalls only its own thread: a frozen metrics directory
 * leaves `mark`, `stop` and `dump` from the control files working. The
 * session's end waits for both at most NCCLSCOPE_EXIT_WAIT_MS and then
 * leaves behind whichever did not answer (the library stays mapped, as for
 * the flusher).
 */
#ifndef NSC_OPS_H
#define NSC_OPS_H

#include "config.h"

/* Session start, under the session mutex. Returns 0 or -1 (the session
 * runs on without control files and metrics; logged). */
int nsc_ops_start(const struct nsc_config *cfg);
/* Session end, under the session mutex, after the flusher stopped.
 * Returns 1 when the thread finished (or never ran), 0 when it was left
 * behind (what it reads must stay). */
int nsc_ops_stop(void);

#endif /* NSC_OPS_H */
