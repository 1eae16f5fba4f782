/*
 * flusher.h - the background thread that empties the rings into the trace.
 *
 * It is the only consumer of every ring (ring.h). Every NCCLSCOPE_DRAIN_US
 * it copies what the rings hold into a chunk; a chunk is compressed and
 * written when it is full or NCCLSCOPE_FLUSH_MS has passed since the last
 * write, preceded by the strings and comm descriptions it refers to and a
 * clock anchor. Drop counters go out as a STATS block every flush.
 * Callbacks never wait for it and never wake it.
 */
#ifndef NSC_FLUSHER_H
#define NSC_FLUSHER_H

#include "config.h"
#include "trace_format.h"

/* Opens the trace file, writes the SESSION block and starts the thread.
 * Returns 0, or -1 with a message in err. Called under the session mutex. */
int nsc_flusher_start(const struct nsc_config *cfg, const struct nsc_session *session, char *err,
                      unsigned errlen);

/* Drains everything, writes the last chunk, STATS and END, joins the thread
 * and closes the file. Called under the session mutex. */
void nsc_flusher_stop(void);

/* Path of the current trace file ("" when none). */
const char *nsc_flusher_path(void);

/* Process-wide counters written into STATS. */
void nsc_flusher_count_invalid_context(void);
void nsc_flusher_count_invalid_handle(void);

#endif /* NSC_FLUSHER_H */
