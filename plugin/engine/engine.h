// SPDX-License-Identifier: Apache-2.0
/*
 * engine.h - the background threads that empty the rings into the trace
 * (engine/: drainer.c, compressor.c, file_out.c, out_stream.c, out_flight.c,
 * triggers.c, crash_dump.c; engine.c starts and stops them).
 *
 *   rings ──► drainers ──► chunk jobs ──► compressors (1..N) ──► output mode
 *            (pack)        (bounded set)   (zstd, in parallel;   stream: the file, in order
 *                                           one writes at a time) flight: the window in memory
 *
 * - The drainer is the only consumer of every ring (ring.h). It packs what
 *   the rings hold (format/record_pack.h) into the chunk job being filled,
 *   and seals the job when it is full or NCCLSCOPE_FLUSH_MS has passed,
 *   together with what its records refer to: the strings and comm
 *   descriptions registered so far and a clock anchor taken at sealing.
 *   It sleeps only while the rings are nearly empty.
 * - Compressor threads turn sealed jobs into zstd frames, several at once;
 *   under pressure (most jobs waiting) at zstd's fastest level.
 * - The compressor whose turn it is hands each job to the output mode in
 *   sequence order (engine_int.h, struct eng_mode): the stream mode opens
 *   the file and writes the job's blocks, through the writer process
 *   (writer_proc.h; write errors are counted: records lost, errno; writing
 *   resumes when the disk does); the flight mode keeps
 *   the chunk in its window and writes a dump on a trigger.
 * - Jobs are a fixed set sized from the memory budget. When all are taken
 *   (the disk is slow or frozen) the drainer stops draining: the rings'
 *   pages absorb what comes, and when the budget is spent writers drop and
 *   count. No callback ever waits for any of these threads.
 */
#ifndef NSC_ENGINE_H
#define NSC_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "trace_format.h"

/* Starts the threads and the writer process (writer_proc.h: its
 * executable is read from the plugin's directory); the file is opened by a
 * compressor, so this never writes to the disk. session_index numbers the process's sessions (the file
 * name). Returns 0, or -1 with a message in err. Under the session mutex. */
int nsc_engine_start(const struct nsc_config *cfg, const struct nsc_session *session,
                      unsigned session_index, char *err, unsigned errlen);

/* Drains everything, writes the last chunk, STATS and END, joins the
 * threads and closes the file, waiting at most NCCLSCOPE_EXIT_WAIT_MS for
 * the disk. Past that it lets go of the compressor waiting for the writer
 * process (the library stays mapped for threads left behind), counts what
 * could not be written and says so through NCCL's logger. Under the session mutex. Returns 1 when its threads were
 * joined (or none ran), 0 when one was left behind (what the drainer's
 * hooks use must then stay). */
/* Writer processes of ended sessions that have left since: reaped (the
 * session's end, once every channel of ours is closed). */
void nsc_engine_reap_writers(void);
int nsc_engine_stop(void);

/* Flight mode: asks for a dump of the window (done by a compressor within a
 * drain pass or two). Returns 0, or -1 when no flight-mode session runs.
 * Under the session mutex. */
int nsc_engine_request_dump(void);

/* A dump was asked for (the dump signal, the control API, the hang
 * watchdog): wakes the trigger watcher, which wakes drainer 0 at once
 * instead of after its NCCLSCOPE_DRAIN_US sleep. One write(2) to an
 * eventfd: async-signal-safe, any thread, any time (nothing before the
 * first flight session, when there is nobody to wake). */
void nsc_engine_poke(void);

/* NCCL's first init joined a session opened without NCCL (the Python
 * package's, API version 0): the file's SESSION takes NCCL's API version
 * and the event mask for it (rewritten in place before the first chunk
 * with NCCL records; trace_format.h). Under the session mutex. */
void nsc_engine_nccl_joined(uint32_t api_version, uint32_t event_mask);

/* Observers of the engine (live metrics, the hang watchdog), so that the
 * engine depends on neither. One slot: nsc_engine_observe copies the
 * non-NULL members of *h into it (each observer fills its own members) and
 * nsc_engine_unobserve clears the members *h names. Set before the threads
 * that call them start, or at any time for the hang members (their loads
 * are ACQUIRE, pairing with the RELEASE stores here).
 *   drainers:    pass_begin/pass_end around each pass over the rings (one
 *                drainer at a time holds the observer's state between them);
 *                record for each packed record whose type is in record_types
 *                and whose kind is START..STATE, and each comm finalize;
 *   the writing compressor: comms with each batch of comm descriptions
 *                taken from the comm table; hang_take for a HANG block due
 *                (dump: the latest, for a flight dump; else one not written
 *                yet): malloc'd bytes the engine writes and frees, or NULL;
 *   drainer 0 in flight mode: hang_dump, 1 once when the watchdog wants a
 *                flight dump of the job;
 *   drainers:    progress for each Coll START and each comm finalize (the
 *                hang suspect level's, watch/progress.h), from any drainer
 *                at once (it synchronises itself); set and cleared at any
 *                time (ACQUIRE/RELEASE, as the hang members).
 * hang_take(dump): dump 0, a block not written yet (the watchdog's first,
 * then the suspect level's; called until NULL); dump 1 the watchdog's
 * latest, 2 the suspect level's latest (a flight dump writes 2 then 1, so
 * that a reader taking a file's last HANG block takes the watchdog's). */
struct nsc_rec;
struct nsc_comm_info;
struct nsc_engine_hooks {
    uint32_t record_types; /* 1 << NSC_ET_* */
    void (*pass_begin)(void);
    void (*record)(const struct nsc_rec *r);
    void (*pass_end)(void);
    void (*comms)(const struct nsc_comm_info *c, unsigned n);
    unsigned char *(*hang_take)(int dump, size_t *len);
    int (*hang_dump)(void);
    void (*progress)(const struct nsc_rec *r);
};
void nsc_engine_observe(const struct nsc_engine_hooks *h);
void nsc_engine_unobserve(const struct nsc_engine_hooks *h);

/* The writer process's channel for the hang suspect level's progress
 * files (writer_proto.h, fd 7), so that no thread of the job's process
 * makes a file-system call on the trace directory: taken once per session,
 * after nsc_engine_start (the session's mutex), by the thread that alone
 * uses it and closes it (close(2)) when done; -1 when no writer runs (that
 * thread then makes its calls itself). The writer stays while the channel
 * is open. The calls return what the writer's REPLACE, READ, LIST and
 * UNLINK do (-1 with errno: EPIPE when the writer is gone). */
int nsc_engine_aux_take(void);
int nsc_engine_aux_replace(int ch, const char *path, const void *data, size_t n, unsigned mode);
long nsc_engine_aux_read(int ch, const char *path, void *buf, size_t cap);
long nsc_engine_aux_list(int ch, const char *dir, const char *suffix, char *buf, size_t cap,
                         uint64_t *left);
int nsc_engine_aux_unlink(int ch, const char *path);
int nsc_engine_aux_mkdir(int ch, const char *dir);

/* Where the trace goes: DIR/<host>-<pid>*.nsc (the first session's file
 * is <host>-<pid>.nsc; later sessions and segments add to the name). */
const char *nsc_engine_path(void);

#endif /* NSC_ENGINE_H */
