// SPDX-License-Identifier: Apache-2.0
/*
 * callers.c - caller mode: which Python code called into torch.distributed
 * (or another target), as a stack id the plugin copies into the next
 * GroupApi/CollApi/P2pApi START of this thread.
 *
 * At a call into a target with no target call open on the thread, the
 * frames outward from the calling one are walked, library frames (the
 * standard library, site-packages: torch's own wrappers) skipped, and the
 * first `depth` others make the stack: "file:line function" per frame,
 * innermost first, one per line, at most 255 bytes (the string table's
 * limit: outer frames are left off). A table keyed by the frames' (code,
 * instruction offset) pairs gives the id of a stack seen before, so the
 * common case costs the walk and a lookup, not a string. Nested target calls (torch's
 * wrappers calling each other) only count depth.
 */
#include "native.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 8
#define WALK_MAX 64   /* frames looked at, at most */
#define STAB 4096     /* stacks remembered; at half full the table starts over */

/* A frame by its code and instruction offset: cheap to read (a line number
 * is a walk through the code's line table, long for a big module body);
 * lines are looked up only to write a new stack's text. */
struct frame_key {
    PyCodeObject *co; /* a reference held by the table (or by the walk) */
    int lasti;
};

struct stack_entry {
    uint64_t hash;    /* 0: free */
    int n;
    struct frame_key k[MAX_DEPTH];
    uint32_t id;
};

static struct stack_entry stab[STAB];
static unsigned sn;

static _Thread_local int depth;     /* target calls open on this thread */
static _Thread_local uint32_t seen_gen;

void nsp_callers_clear(void) {
    for (unsigned i = 0; i < STAB; i++)
        if (stab[i].hash) {
            for (int j = 0; j < stab[i].n; j++)
                Py_DECREF(stab[i].k[j].co);
            memset(&stab[i], 0, sizeof(stab[i]));
        }
    sn = 0;
}

static const char *utf8(PyObject *s) {
    const char *u = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    if (!u)
        PyErr_Clear();
    return u ? u : "?";
}

/* Collects up to max frames outward from f; skip_library leaves library
 * code out. Returns how many; each k[i].co is a new reference. */
static int collect(PyFrameObject *f, int max, int skip_library, struct frame_key *k) {
    int n = 0, walked = 0;
    Py_XINCREF(f);
    while (f && n < max && walked++ < WALK_MAX) {
        PyCodeObject *co = PyFrame_GetCode(f);
        if (!skip_library || !nsp_code_is_library(co)) {
            k[n].co = co;
            k[n].lasti = PyFrame_GetLasti(f);
            n++;
        } else {
            Py_DECREF(co);
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    return n;
}

static uint64_t hash_of(const struct frame_key *k, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(uintptr_t)k[i].co) * 0x100000001b3ull;
        h = (h ^ (uint64_t)(uint32_t)k[i].lasti) * 0x100000001b3ull;
    }
    return h ? h : 1;
}

/* "file:line function" lines, innermost first, within the 255 bytes a
 * string keeps; a path below the working directory is written relative. */
static void stack_text(const struct frame_key *k, int n, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *file = utf8(k[i].co->co_filename);
        if (nsp_cfg.cwd && strncmp(file, nsp_cfg.cwd, nsp_cfg.cwd_len) == 0 &&
            file[nsp_cfg.cwd_len] == '/')
            file += nsp_cfg.cwd_len + 1;
        char line[1024];
        int lineno = k[i].lasti >= 0 ? PyCode_Addr2Line(k[i].co, k[i].lasti) : k[i].co->co_firstlineno;
        int m = snprintf(line, sizeof(line), "%s%s:%d %s", i ? "\n" : "", file, lineno,
                         utf8(k[i].co->co_qualname));
        if (m < 0)
            return;
        size_t ml = (size_t)m < sizeof(line) ? (size_t)m : sizeof(line) - 1;
        if (len + ml > 255 || len + ml >= cap) {
            if (i == 0 && cap > 255) { /* the caller alone is too long: keep its end */
                memcpy(out, line + ml - 255, 255);
                out[255] = '\0';
            }
            return;
        }
        memcpy(out + len, line, ml + 1);
        len += ml;
    }
}

static uint32_t stack_id(PyFrameObject *frame) {
    struct frame_key k[MAX_DEPTH];
    int max = nsp_cfg.depth < 1 ? 1 : nsp_cfg.depth > MAX_DEPTH ? MAX_DEPTH : nsp_cfg.depth;
    int n = collect(frame, max, 1, k);
    if (n == 0) /* only library code calls it: the innermost frames then */
        n = collect(frame, max, 0, k);
    if (n == 0)
        return 0;
    uint64_t h = hash_of(k, n);
    unsigned i = (unsigned)(h >> 20) & (STAB - 1);
    for (; stab[i].hash; i = (i + 1) & (STAB - 1)) {
        if (stab[i].hash != h || stab[i].n != n)
            continue;
        int same = 1;
        for (int j = 0; j < n && same; j++)
            same = stab[i].k[j].co == k[j].co && stab[i].k[j].lasti == k[j].lasti;
        if (same) {
            for (int j = 0; j < n; j++)
                Py_DECREF(k[j].co);
            return stab[i].id;
        }
    }
    char text[300];
    stack_text(k, n, text, sizeof(text));
    nsp_busy++;
    uint32_t id = nsp_api->intern(text);
    nsp_busy--;
    nsp_count.stacks++;
    if (sn + 1 > STAB / 2) {
        nsp_callers_clear();
        i = (unsigned)(h >> 20) & (STAB - 1);
    }
    /* the table keeps the references: a code object's address cannot be
     * reused for another while its stack is remembered */
    stab[i].hash = h;
    stab[i].n = n;
    memcpy(stab[i].k, k, sizeof(k[0]) * (size_t)n);
    stab[i].id = id;
    sn++;
    return id;
}

void nsp_caller_enter(PyFrameObject *frame) {
    if (seen_gen != nsp_gen) {
        seen_gen = nsp_gen;
        depth = 0;
    }
    if (depth++ > 0)
        return;
    nsp_count.callers++;
    nsp_api->set_caller(stack_id(frame));
}

void nsp_caller_exit(void) {
    if (seen_gen != nsp_gen) {
        seen_gen = nsp_gen;
        depth = 0;
    }
    if (depth == 0) {
        nsp_count.unmatched++;
        return;
    }
    if (--depth == 0)
        nsp_api->set_caller(0);
}
