// SPDX-License-Identifier: Apache-2.0
/*
 * watchdog.h - the hang watchdog (both modes; NCCLSCOPE_HANG_SECONDS, 0 = off).
 *
 * A thread of its own scans the per-operation state (op_state.h) every
 * 100 ms. A communicator is stalled when it has operations in flight and
 * none of its operations completed for NCCLSCOPE_HANG_SECONDS (counted from
 * its last completion, or from the start of its oldest operation in flight
 * when that is later). The first scan that finds a communicator stalled
 * builds a HANG block (docs/format.md) holding every communicator with
 * operations in flight, logs once through NCCL's logger and, in flight
 * mode, asks for a dump. It fires for that communicator again only after
 * one of its operations completed and it stalled again.
 *
 * Who calls what:
 *   - nsc_watchdog_start/_stop: the session (its mutex), start after the
 *     engine, stop before it (the last HANG block still reaches the file);
 *   - nsc_watchdog_take_block: the engine's compressor whose turn it is to
 *     write (an engine hook, engine.h), after a chunk (streaming: the block
 *     not yet written) and in a flight dump (the latest block);
 *   - nsc_watchdog_take_dump_request: the engine's drainer 0 (a hook:
 *     flight triggers).
 * Never on NCCL's threads.
 */
#ifndef NSC_WATCHDOG_H
#define NSC_WATCHDOG_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Returns 0 (also when off), -1 when the thread or the slab could not be
 * made (the plugin runs without a watchdog; logged). */
int nsc_watchdog_start(const struct nsc_config *cfg);
void nsc_watchdog_stop(void);
/* The session's end, after the engine stopped: frees the blocks kept. */
void nsc_watchdog_release(void);

/* The HANG block due, as malloc'd bytes the caller writes and frees (*len
 * its size), or NULL: in streaming mode (dump = 0) one not written yet
 * (the watchdog's first, then the suspect level's); in a flight dump a
 * copy of the latest, the watchdog's (dump = 1) or the suspect level's
 * (dump = 2). */
unsigned char *nsc_watchdog_take_block(int dump, size_t *len);
/* The suspect level (suspect.h) hands over a HANG block it built (malloc'd;
 * taken, freed here or by the writer): it is written like the watchdog's,
 * in its own slots, so that neither replaces the other. */
void nsc_watchdog_post_suspect(unsigned char *block, size_t len);
/* 1 once after the watchdog fired in flight mode. */
int nsc_watchdog_take_dump_request(void);
/* Times the watchdog fired since the process started (tests, metrics). */
uint64_t nsc_watchdog_fired(void);

#endif /* NSC_WATCHDOG_H */
