// SPDX-License-Identifier: Apache-2.0
/*
 * intern.h - strings (func, datatype, algo, proto, syncStrategy) become
 * 16-bit ids, so records stay fixed-size and a string is written to the
 * trace once per session, not once per event.
 *
 * Contract:
 *   - nsc_intern() is called by a writer thread with its own cache; the
 *     fast path compares the address with the thread's six most recent
 *     strings (one line), then looks in a direct-mapped cache keyed by the
 *     address (NCCL passes pointers to static tables); it touches no shared
 *     memory;
 *   - a miss takes the table's mutex (slow path, once per distinct pointer
 *     per thread) and looks the string up by content, so two addresses of
 *     equal text share an id;
 *   - the flusher reads entries [0, nsc_intern_count()) without a lock:
 *     entries never change once published (see intern.c for the ordering).
 * Id 0 is NULL. Texts are kept to their first NSC_INTERN_TEXT_LEN bytes.
 *
 * Capacity: every id a record's 16-bit field can carry (65,534 strings
 * besides NULL and "?") and NSC_INTERN_TEXT_MAX bytes of text, whichever
 * comes first; the table's own arrays take 768 KiB of address space,
 * touched only as strings arrive. Past that, new strings map to
 * NSC_INTERN_OVERFLOW ("?"), and every use of such a string by an event is
 * counted (nsc_intern_overflows(): the trace's string_overflow), not only
 * the first.
 *
 * Room for NCCL's names. User text (control marks, Python locations and
 * stacks: nsc_intern_user) may not take the last NSC_INTERN_NCCL_IDS ids
 * nor the last NSC_INTERN_NCCL_TEXT bytes: 70,000 distinct marks once
 * filled the table, and every NCCL name first seen after them (a new
 * function, datatype or algorithm) read "?" for the rest of the process.
 * A user text refused for the reserve reads "?" too and counts once in
 * string_overflow (its caller, not an event field, holds the id).
 */
#ifndef NSC_INTERN_H
#define NSC_INTERN_H

#include <stdint.h>

#define NSC_INTERN_MAX 65536               /* ids: what a uint16_t field holds */
#define NSC_INTERN_TEXT_MAX (4u << 20)     /* bytes of text, NULs included */
#define NSC_INTERN_TEXT_LEN 255            /* longest text kept */
#define NSC_INTERN_OVERFLOW 1 /* id of "?" */
#define NSC_INTERN_NCCL_IDS 8192u          /* ids user text leaves to NCCL's names */
#define NSC_INTERN_NCCL_TEXT (512u << 10)  /* bytes of text, likewise */
#define NSC_INTERN_CACHE 64

#define NSC_INTERN_RECENT 6

/* A pointer and its id side by side: a hit reads one cache line (four
 * entries per line), not one line for the pointer and another for the id. */
struct nsc_intern_entry {
    const char *ptr;
    uint16_t id;
};
/* Two levels. `recent`: the last NSC_INTERN_RECENT strings the thread
 * looked up, on one line, searched first: an operation's strings (func,
 * datatype, algo, proto of a CollApi and its Coll) are found there without
 * touching a line per string. `e`: direct-mapped by address, for the rest. */
struct nsc_intern_cache {
    struct {
        const char *ptr[NSC_INTERN_RECENT];
        uint16_t id[NSC_INTERN_RECENT];
        uint16_t next; /* the entry replaced next (round robin) */
    } __attribute__((aligned(64))) recent;
    struct nsc_intern_entry e[NSC_INTERN_CACHE];
};
_Static_assert(sizeof(((struct nsc_intern_cache *)0)->recent) == 64, "recent strings: one line");

uint16_t nsc_intern_slow(struct nsc_intern_cache *c, const char *s);
/* User text by content (no cache: the caller's buffer may hold another
 * text next time), within the user's part of the table (above). Sets
 * *first (when given) to 1 on the process's first refusal, for its one
 * log line. */
uint16_t nsc_intern_user(const char *s, int *first);
/* User texts refused for NCCL's reserve (also in nsc_intern_overflows). */
uint64_t nsc_intern_user_refused(void);
/* Counts one more use of a string that did not fit (out of line: rare). */
void nsc_intern_count_overflow(void);

static inline unsigned nsc_intern_slot(const char *s) {
    uint64_t x = (uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ull;
    return (unsigned)(x >> 58); /* top 6 bits: 64 slots */
}

static inline uint16_t nsc_intern(struct nsc_intern_cache *c, const char *s) {
    if (!s)
        return 0;
    uint16_t id;
    for (unsigned k = 0; k < NSC_INTERN_RECENT; k++)
        if (c->recent.ptr[k] == s) {
            id = c->recent.id[k];
            goto found;
        }
    unsigned i = nsc_intern_slot(s);
    if (__builtin_expect(c->e[i].ptr == s, 1)) {
        id = c->e[i].id;
        if (__builtin_expect(id == NSC_INTERN_OVERFLOW, 0))
            nsc_intern_count_overflow();
    } else {
        id = nsc_intern_slow(c, s); /* counts an overflow itself */
    }
    unsigned k = c->recent.next;
    c->recent.ptr[k] = s;
    c->recent.id[k] = id;
    c->recent.next = (uint16_t)(k + 1 < NSC_INTERN_RECENT ? k + 1 : 0);
    return id;
found:
    if (__builtin_expect(id == NSC_INTERN_OVERFLOW, 0))
        nsc_intern_count_overflow();
    return id;
}

/* Number of published entries (ids 1..count-1 are valid). */
uint32_t nsc_intern_count(void);
/* Text of a published id (NUL-terminated, at most 255 bytes). */
const char *nsc_intern_text(uint32_t id);
/* Uses of strings that did not fit: one per string field of an event
 * that reads "?" for it. */
uint64_t nsc_intern_overflows(void);
/* Frees the table (library unload only). */
void nsc_intern_free_all(void);

/* fork(): the table's mutex held by the forking thread across it, so a
 * forked child never finds it locked by a thread it does not have
 * (session.c registers these). */
void nsc_intern_atfork_prepare(void);
void nsc_intern_atfork_parent(void);
void nsc_intern_atfork_child(void);

#endif /* NSC_INTERN_H */
