// SPDX-License-Identifier: Apache-2.0
/*
 * events.c - functions mode: enters and exits as PY records, paired on a
 * per-thread shadow stack.
 *
 * Each enter pushes (token, location, recorded?); an exit pops the entry
 * whose token matches (the code object, or the C callable's decision
 * record), and writes its record only when the enter was written (a call
 * skipped by the rate limit skips its exit too). An exit without its enter
 * (tracing began inside that call; a backend quirk) is counted and
 * dropped; an exit that matches an entry below the top closes the entries
 * above it first (their exits were missed), so the trace always nests.
 */
#include "native.h"

#include <pthread.h>
#include <stdlib.h>

#define SHADOW_MAX (1u << 16) /* deeper calls are only counted */
#define RESYNC 16             /* entries below the top an exit may close */

struct entry {
    const void *token;
    uint32_t loc;
    uint8_t recorded;
    uint8_t exit_what;
};

struct shadow {
    uint32_t gen, depth, cap, overflow;
    struct entry *e;
};

static _Thread_local struct shadow sh;
static pthread_key_t free_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

_Thread_local int nsp_busy;

static void free_entries(void *p) { free(p); }
static void make_key(void) { pthread_key_create(&free_key, free_entries); }

void nsp_events_reset(void) { /* nsp_gen moved: every stack starts over when next used */ }

static struct shadow *mine(void) {
    if (sh.gen != nsp_gen) {
        sh.gen = nsp_gen;
        sh.depth = sh.overflow = 0;
    }
    return &sh;
}

static int grow(struct shadow *s) {
    uint32_t cap = s->cap ? s->cap * 2 : 256;
    if (cap > SHADOW_MAX)
        return -1;
    struct entry *e = realloc(s->e, cap * sizeof(*e));
    if (!e)
        return -1;
    if (!s->e) { /* the thread's first: freed when it exits */
        pthread_once(&key_once, make_key);
        pthread_setspecific(free_key, e);
    } else if (e != s->e) {
        pthread_setspecific(free_key, e);
    }
    s->e = e;
    s->cap = cap;
    return 0;
}

void nsp_fn_enter(const void *token, struct nsp_code *c, uint8_t what) {
    struct shadow *s = mine();
    if (s->overflow || (s->depth == s->cap && grow(s) != 0)) {
        s->overflow++;
        return;
    }
    int rec = c->traced && nsp_rate_ok(c);
    s->e[s->depth++] = (struct entry){token, c->loc, (uint8_t)rec,
                                      (uint8_t)(what == NSC_PY_C_CALL ? NSC_PY_C_RETURN
                                                                      : NSC_PY_RETURN)};
    if (rec)
        nsp_record(what, c->loc, 0);
}

int nsp_fn_exit(const void *token, uint8_t what, int by_exception) {
    struct shadow *s = mine();
    if (s->overflow) {
        s->overflow--;
        return 1;
    }
    uint32_t lo = s->depth > RESYNC ? s->depth - RESYNC : 0;
    uint32_t i = s->depth;
    while (i > lo && s->e[i - 1].token != token)
        i--;
    if (i == lo && (i == 0 || s->e[i - 1].token != token)) {
        /* C exits are not counted: sys.monitoring reports the C_RETURN of
         * the very call whose CALL we disabled (code we do not trace) */
        if (what != NSC_PY_C_RETURN)
            nsp_count.unmatched++;
        return 0;
    }
    /* entries above the match lost their exits: close them here */
    while (s->depth > i) {
        struct entry *e = &s->e[--s->depth];
        nsp_count.unmatched++;
        if (e->recorded)
            nsp_record(e->exit_what, e->loc, 0);
    }
    struct entry *e = &s->e[--s->depth];
    if (e->recorded)
        nsp_record(e->exit_what, e->loc, (uint64_t)(by_exception != 0));
    return 1;
}
