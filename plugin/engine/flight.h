// SPDX-License-Identifier: Apache-2.0
/*
 * flight.h - the flight recorder's window (NCCLSCOPE_MODE=flight): the
 * newest compressed chunks, kept in memory instead of written, until a
 * trigger dumps them as a normal trace file (plugin/flusher.c).
 *
 * Contract: only the compressor whose turn it is to write calls these (the
 * flusher's write order makes that one thread at a time), so the window
 * needs no lock; the one exception is a crash: the fatal-signal handler
 * freezes the window (nsc_flight_freeze) and walks it with nsc_flight_each
 * while other threads run on (flight.c says how that stays safe). Memory: at most the budget given at creation
 * (NCCLSCOPE_FLIGHT_MB); the oldest chunks go first.
 */
#ifndef NSC_FLIGHT_H
#define NSC_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct nsc_flight;

/* NULL when out of memory. */
struct nsc_flight *nsc_flight_create(uint64_t budget_bytes);
void nsc_flight_destroy(struct nsc_flight *w);

/* Keeps a chunk: its anchor and its PACKED block payload (stored bytes,
 * zstd frame when flags says so), dropping the oldest chunks to stay in
 * budget. Returns 0, -1 when it could not be kept (counted), or -2 while
 * the window is frozen (not counted: a crash dump in progress takes the
 * chunk from the caller's job instead). */
int nsc_flight_keep(struct nsc_flight *w, const struct nsc_anchor *a, const void *payload,
                    size_t stored, size_t raw_len, uint16_t flags, uint64_t records);

/* Calls fn for every kept chunk, oldest first. `block` has room for a block
 * header before the payload (nsc_writer_prepared's layout). Stops at the
 * first non-zero return and returns it. */
typedef int (*nsc_flight_fn)(void *ud, const struct nsc_anchor *a, unsigned char *block,
                             uint16_t flags, size_t stored, size_t raw_len);
int nsc_flight_each(struct nsc_flight *w, nsc_flight_fn fn, void *ud);

/* Crash: from now on the window takes and frees nothing (async-signal-safe:
 * one atomic store). */
void nsc_flight_freeze(struct nsc_flight *w);
/* A dump from SIGTERM whose application handler lets the process live on:
 * the window takes chunks again (async-signal-safe: one atomic store). */
void nsc_flight_thaw(struct nsc_flight *w);

/* Records in the window now, and records that left it (oldest dropped or
 * not kept) since creation. */
uint64_t nsc_flight_records(const struct nsc_flight *w);
uint64_t nsc_flight_dropped(const struct nsc_flight *w);

#endif /* NSC_FLIGHT_H */
