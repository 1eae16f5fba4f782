// SPDX-License-Identifier: Apache-2.0
/*
 * flusher.h - the background threads that empty the rings into the trace.
 *
 *   rings ──► drainer ──► chunk jobs ──► compressors (1..N) ──► I/O thread ──► file
 *            (packs)      (bounded set)   (zstd, in parallel)    (in order)
 *
 * - The drainer is the only consumer of every ring (ring.h). It packs what
 *   the rings hold (format/record_pack.h) into the chunk job being filled,
 *   and seals the job when it is full or NCCLSCOPE_FLUSH_MS has passed,
 *   together with what its records refer to: the strings and comm
 *   descriptions registered so far and a clock anchor taken at sealing.
 *   It sleeps only while the rings are nearly empty.
 * - Compressor threads turn sealed jobs into zstd frames, several at once;
 *   under pressure (most jobs waiting) at zstd's fastest level.
 * - The I/O thread opens the file and writes each job's blocks in sequence
 *   order; write errors are counted (records lost, errno) and writing
 *   resumes when the disk does. It alone waits on the disk.
 * - Jobs are a fixed set sized from the memory budget. When all are taken
 *   (the disk is slow or frozen) the drainer stops draining: the rings'
 *   pages absorb what comes, and when the budget is spent writers drop and
 *   count. No callback ever waits for any of these threads.
 */
#ifndef NSC_FLUSHER_H
#define NSC_FLUSHER_H

#include "config.h"
#include "trace_format.h"

/* Starts the threads; the file is opened by the I/O thread, so this never
 * touches the disk. session_index numbers the process's sessions (the file
 * name). Returns 0, or -1 with a message in err. Under the session mutex. */
int nsc_flusher_start(const struct nsc_config *cfg, const struct nsc_session *session,
                      unsigned session_index, char *err, unsigned errlen);

/* Drains everything, writes the last chunk, STATS and END, joins the
 * threads and closes the file, waiting at most NCCLSCOPE_EXIT_WAIT_MS for
 * the disk. Past that it leaves the I/O thread behind (the library stays
 * mapped for it), counts what could not be written and says so through
 * NCCL's logger. Under the session mutex. Returns 1 when its threads were
 * joined (or none ran), 0 when one was left behind (what the drainer's
 * hooks use must then stay: live_metrics.h). */
int nsc_flusher_stop(void);

/* Flight mode: asks for a dump of the window (done by a compressor within a
 * drain pass or two). Returns 0, or -1 when no flight-mode session runs.
 * Under the session mutex. */
int nsc_flusher_request_dump(void);

/* The hang watchdog's hooks (watchdog.h), so the flusher does not depend
 * on it: emit writes a due HANG block into w (dump: in a flight dump) from
 * the compressor whose turn it is; dump returns 1 once when the watchdog
 * wants a flight dump (drainer 0). Set by the watchdog, any time. */
struct nsc_writer;
typedef void (*nsc_hang_emit_fn)(struct nsc_writer *w, int dump);
typedef int (*nsc_hang_dump_fn)(void);
void nsc_flusher_set_hang_hooks(nsc_hang_emit_fn emit, nsc_hang_dump_fn dump);

/* Where the trace goes: DIR/<host>-<pid>*.nsc (the first session's file
 * is <host>-<pid>.nsc; later sessions and segments add to the name). */
const char *nsc_flusher_path(void);

#endif /* NSC_FLUSHER_H */
