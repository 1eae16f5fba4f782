// SPDX-License-Identifier: Apache-2.0
/*
 * suspect.h - the hang suspect level (NCCLSCOPE_SUSPECT_SECONDS, default
 * 15, 0 = off): a collective this process's rank entered that another
 * rank of its communicator had not entered SUSPECT_SECONDS later, while the
 * comm completed nothing that long. Cross-rank facts come from the other
 * processes' progress files (progress_file.h) in NCCLSCOPE_DIR, which on a
 * job of several nodes is a shared file system; completion is not needed
 * (a sampled KernelCh is the only completion on one node), only entry.
 * When it fires it writes a HANG block with the suspects
 * (docs/format.md), one log line per suspect and, with metrics on, the
 * ncclscope_hang_suspect gauge. Once per stall: a rank fires again only for
 * another collective.
 *
 * A thread of its own ("ncclscope-susp") does all of it every second:
 * writes this process's progress file, and while some rank has a
 * collective entered SUSPECT_SECONDS ago on a comm that completed nothing
 * since, reads the others' (at most NSC_SUSPECT_PEERS files). Its
 * file-system calls are the writer process's (engine.h, its own channel;
 * without a writer, this thread's), so a directory that stalls (NFS)
 * delays only the suspects: never NCCL's threads, the drainers or the
 * watchdog, nor (with a writer) the process's exit.
 *
 * Who calls what:
 *   - nsc_suspect_start/_stop_request/_stop: the session (its mutex),
 *     start after the engine, the stop request before the engine's stop
 *     (a block built still reaches the file), the stop after it; the
 *     thread removes its progress file as it ends;
 *   - nsc_suspect_metrics: the metrics thread (live_metrics.h's extra
 *     series), under this module's mutex for a copy.
 */
#ifndef NSC_SUSPECT_H
#define NSC_SUSPECT_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"

#define NSC_SUSPECT_PEERS 256 /* progress files of other processes read per pass */

/* stem: the trace file's <host>-<pid>. Returns 0 (also when off), -1 when
 * the thread could not start (logged; the plugin runs without suspects). */
int nsc_suspect_start(const struct nsc_config *cfg, const char *stem);
/* The stop in two steps, so that its wait for a thread in a stalled file
 * system runs beside the engine's (NCCLSCOPE_EXIT_WAIT_MS once, not
 * twice): the request (no wait), then the stop, which waits until
 * NCCLSCOPE_EXIT_WAIT_MS after the request and then leaves the thread
 * behind (logged). A stop without a request makes its own. */
void nsc_suspect_stop_request(void);
void nsc_suspect_stop(void);
/* The suspects now and the counters, as Prometheus text (metrics thread). */
void nsc_suspect_metrics(FILE *f, int pid);
/* Suspects logged since the process started (tests). */
uint64_t nsc_suspect_fired(void);

#endif /* NSC_SUSPECT_H */
