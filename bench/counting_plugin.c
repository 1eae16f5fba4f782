// SPDX-License-Identifier: Apache-2.0
/*
 * counting_plugin.c - the reference "counting" profiler plugin: it asks NCCL
 * for the same events ncclscope would (NCCLSCOPE_EVENTS, same syntax,
 * default: every type), hands back a non-NULL handle for each, and counts
 * what NCCL offers: startEvent per event type, stopEvent per type,
 * recordEventState per type and state. It is what "offered" means in the
 * GPU tables (docs/gpu-check.md) and in the harness (ncclscope-bench): a
 * plugin that cannot lose anything, against which ncclscope's "kept" is
 * compared.
 *
 * Output: at the last finalize (every init matched), and again from a
 * destructor when finalize never came or events arrived after it, one JSON
 * file per process, $NCCLSCOPE_COUNT_DIR/<host>-<pid>.counts.json (default:
 * the current directory), written to a temporary name and renamed so a
 * reader never sees half a file. Counts are cumulative for the process.
 *
 * Who calls what: NCCL calls init/finalize from the threads creating and
 * destroying communicators, the event callbacks from application, proxy and
 * network threads concurrently. Each thread counts into its own block
 * (claimed once, on its first callback, from a static array: no lock, no
 * allocation, no syscall per call); the writer of the file sums the blocks.
 * Threads beyond the array share one block with atomic adds.
 *
 * Handles: a handle is the address of a static per-type token, so stop and
 * state calls know the event's type without any per-event storage, and a
 * handle stays valid for ever, also as a child's parentObj.
 *
 * Versions: ncclProfiler_v1 .. v7. The descriptor's first field is the
 * event type in every version (uint8_t up to v4, uint64_t from v5;
 * nccl/nccl_abi.h); v5's table layout holds for v6 and NCCL 2.31's v7, so
 * v7 is one more COUNTING_V5 line below.
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_types.h"
#include "nccl_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* Type bits 0..15 (v7's KernelPhase is bit 15) and one bucket for anything
 * else; states 0..31 (v7's KernelPhaseStop is 31) and one for the rest. */
enum { CNT_TYPES = 17, CNT_OTHER_TYPE = 16, CNT_STATES = 33, CNT_OTHER_STATE = 32 };
enum { CNT_BLOCKS = 256 };

struct cnt_block {
    alignas(64) _Atomic uint64_t start[CNT_TYPES];
    _Atomic uint64_t stop[CNT_TYPES];
    _Atomic uint64_t state[CNT_TYPES][CNT_STATES];
};

/* Zeroed BSS: pages are touched only by the threads that claim a block. */
static struct cnt_block blocks[CNT_BLOCKS];
static struct cnt_block shared_block; /* threads beyond CNT_BLOCKS: atomic adds */
static _Atomic unsigned nblocks;      /* blocks claimed, may exceed CNT_BLOCKS */
static _Atomic uint64_t foreign_handles; /* stop/state with a handle we never returned */

static __thread struct cnt_block *tls_block __attribute__((tls_model("initial-exec")));

static char type_token[CNT_TYPES]; /* handles: &type_token[type index] */
static char context_token;

/* Process-wide state, changed only by init/finalize/the destructor. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int live_contexts, api_version;
static _Atomic uint64_t inits, finalizes;
static _Atomic uint32_t mask_seen;
static uint64_t written_total; /* under write_lock: sum of all counts at the last write */
static int written;            /* under write_lock */

/* The calling thread's block. Claiming is a relaxed fetch_add: the index is
 * all a thread needs, the counters it then writes are atomics the reader
 * loads on its own. */
static struct cnt_block *my_block(void) {
    struct cnt_block *b = tls_block;
    if (__builtin_expect(b != NULL, 1))
        return b;
    unsigned i = atomic_fetch_add_explicit(&nblocks, 1, memory_order_relaxed);
    b = i < CNT_BLOCKS ? &blocks[i] : &shared_block;
    tls_block = b;
    return b;
}

/* One more on a counter. An owned block has one writer, so a relaxed load
 * and store (plain moves on x86, no locked instruction) is enough and the
 * summing reader still sees a whole value; the shared block needs the add.
 * Relaxed throughout: a count orders nothing else. The reader sees every
 * increment that happened before its read (NCCL's own teardown orders the
 * callbacks before finalize); increments racing with it land in the next
 * write. */
static inline void bump(struct cnt_block *b, _Atomic uint64_t *c) {
    if (__builtin_expect(b != &shared_block, 1))
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static inline unsigned type_index(uint64_t type) {
    int i = nsc_etype_from_bit(type);
    if (i >= 0)
        return (unsigned)i;
    if (type && !(type & (type - 1)) && __builtin_ctzll(type) < CNT_OTHER_TYPE)
        return (unsigned)__builtin_ctzll(type); /* a bit event_types.h does not name yet */
    return CNT_OTHER_TYPE;
}

/* The type index behind a handle, or -1 for a handle that is not ours. */
static inline int handle_type(const void *handle) {
    uintptr_t off = (uintptr_t)handle - (uintptr_t)type_token;
    return off < CNT_TYPES ? (int)off : -1;
}

/* ---- callbacks ---- */

static inline nsc_abi_result start_typed(void **handle, uint64_t type) {
    unsigned t = type_index(type);
    struct cnt_block *b = my_block();
    bump(b, &b->start[t]);
    *handle = &type_token[t];
    return NSC_ABI_SUCCESS;
}

/* v1..v4: the type is the descriptor's first byte. */
static nsc_abi_result start_u8(void *ctx, void **handle, void *descr) {
    (void)ctx;
    return start_typed(handle, *(const uint8_t *)descr);
}

/* v5 on: the type is the descriptor's first 64-bit word. */
static nsc_abi_result start_u64(void *ctx, void **handle, void *descr) {
    (void)ctx;
    uint64_t type;
    memcpy(&type, descr, sizeof(type));
    return start_typed(handle, type);
}

static nsc_abi_result stop_event(void *handle) {
    int t = handle_type(handle);
    if (t < 0) {
        atomic_fetch_add_explicit(&foreign_handles, 1, memory_order_relaxed);
        return NSC_ABI_SUCCESS;
    }
    struct cnt_block *b = my_block();
    bump(b, &b->stop[t]);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result record_state(void *handle, int state, void *args) {
    (void)args;
    int t = handle_type(handle);
    if (t < 0) {
        atomic_fetch_add_explicit(&foreign_handles, 1, memory_order_relaxed);
        return NSC_ABI_SUCCESS;
    }
    unsigned s = state >= 0 && state < CNT_OTHER_STATE ? (unsigned)state : CNT_OTHER_STATE;
    struct cnt_block *b = my_block();
    bump(b, &b->state[t][s]);
    return NSC_ABI_SUCCESS;
}

/* ---- output ---- */

struct totals {
    uint64_t start[CNT_TYPES], stop[CNT_TYPES], state[CNT_TYPES][CNT_STATES];
    uint64_t nstart, nstop, nstate;
};

static void add_block(struct totals *t, struct cnt_block *b) {
    for (int i = 0; i < CNT_TYPES; i++) {
        t->start[i] += atomic_load_explicit(&b->start[i], memory_order_relaxed);
        t->stop[i] += atomic_load_explicit(&b->stop[i], memory_order_relaxed);
        for (int s = 0; s < CNT_STATES; s++)
            t->state[i][s] += atomic_load_explicit(&b->state[i][s], memory_order_relaxed);
    }
}

static void sum_blocks(struct totals *t) {
    memset(t, 0, sizeof(*t));
    unsigned n = atomic_load_explicit(&nblocks, memory_order_relaxed);
    for (unsigned i = 0; i < n && i < CNT_BLOCKS; i++)
        add_block(t, &blocks[i]);
    add_block(t, &shared_block);
    for (int i = 0; i < CNT_TYPES; i++) {
        t->nstart += t->start[i];
        t->nstop += t->stop[i];
        for (int s = 0; s < CNT_STATES; s++)
            t->nstate += t->state[i][s];
    }
}

static void type_name(unsigned i, char *buf, size_t len) {
    const char *n = i < CNT_OTHER_TYPE ? nsc_etype_name(i) : NULL;
    if (n)
        snprintf(buf, len, "%s", n);
    else if (i < CNT_OTHER_TYPE)
        snprintf(buf, len, "type%u", i); /* the NCCL bit number */
    else
        snprintf(buf, len, "Other");
}

static void state_name(unsigned s, char *buf, size_t len) {
    const char *n = s < CNT_OTHER_STATE ? nsc_state_name(s) : NULL;
    if (n)
        snprintf(buf, len, "%s", n);
    else if (s < CNT_OTHER_STATE)
        snprintf(buf, len, "state%u", s);
    else
        snprintf(buf, len, "Other");
}

/* {"Name": n, ...} of the non-zero entries. */
static void put_counts(FILE *f, const uint64_t *v) {
    char name[32];
    int first = 1;
    fputc('{', f);
    for (unsigned i = 0; i < CNT_TYPES; i++)
        if (v[i]) {
            type_name(i, name, sizeof(name));
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", name, (unsigned long long)v[i]);
            first = 0;
        }
    fputc('}', f);
}

static int mkdir_p(const char *dir) {
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* Writes the counts file; `why` is "finalize" or "exit". Called under
 * write_lock. A failure is silent: a plugin never prints into the job, and
 * the missing file is what the reader notices. */
static void write_counts(const char *why, const struct totals *t) {
    const char *dir = getenv("NCCLSCOPE_COUNT_DIR");
    if (!dir || !*dir)
        dir = ".";
    char host[256] = "unknown";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "unknown");
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/%s-%d.counts.json", dir, host, (int)getpid());
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (mkdir_p(dir) != 0)
        return;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    unsigned nthreads = atomic_load_explicit(&nblocks, memory_order_relaxed);
    fprintf(f,
            "{\"plugin\": \"counting\", \"api_version\": %d, \"host\": \"%s\", \"pid\": %d,\n"
            " \"written_at\": \"%s\", \"inits\": %llu, \"finalizes\": %llu, \"threads\": %u,\n"
            " \"mask\": %u, \"null_handles\": 0, \"foreign_handles\": %llu,\n"
            " \"totals\": {\"start\": %llu, \"stop\": %llu, \"state\": %llu},\n"
            " \"start\": ",
            atomic_load_explicit(&api_version, memory_order_relaxed), host, (int)getpid(), why,
            (unsigned long long)atomic_load_explicit(&inits, memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&finalizes, memory_order_relaxed), nthreads,
            (unsigned)atomic_load_explicit(&mask_seen, memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&foreign_handles, memory_order_relaxed),
            (unsigned long long)t->nstart, (unsigned long long)t->nstop,
            (unsigned long long)t->nstate);
    put_counts(f, t->start);
    fputs(",\n \"stop\": ", f);
    put_counts(f, t->stop);
    fputs(",\n \"state\": {", f);
    int first_type = 1;
    char tn[32], sn[48];
    for (unsigned i = 0; i < CNT_TYPES; i++) {
        int first = 1;
        for (unsigned s = 0; s < CNT_STATES; s++) {
            if (!t->state[i][s])
                continue;
            if (first) {
                type_name(i, tn, sizeof(tn));
                fprintf(f, "%s\"%s\": {", first_type ? "" : ", ", tn);
                first_type = 0;
            }
            state_name(s, sn, sizeof(sn));
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", sn, (unsigned long long)t->state[i][s]);
            first = 0;
        }
        if (!first)
            fputc('}', f);
    }
    fputs("}}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0)
        unlink(tmp);
}

/* Sums and writes unless nothing changed since the last write. */
static void write_if_changed(const char *why) {
    struct totals t; /* 4.8 KB: finalize and exit only */
    pthread_mutex_lock(&write_lock);
    sum_blocks(&t);
    uint64_t all = t.nstart + t.nstop + t.nstate + atomic_load_explicit(&inits, memory_order_relaxed) +
                   atomic_load_explicit(&finalizes, memory_order_relaxed);
    if (!written || all != written_total) {
        write_counts(why, &t);
        written = 1;
        written_total = all;
    }
    pthread_mutex_unlock(&write_lock);
}

/* At exit or dlclose: the counts of a process that never finalized (or
 * kept calling after its last finalize). Nothing is written by a process
 * that never initialized a communicator. */
__attribute__((destructor)) static void counting_exit(void) {
    if (atomic_load_explicit(&inits, memory_order_relaxed) == 0)
        return;
    write_if_changed(atomic_load_explicit(&live_contexts, memory_order_relaxed) == 0 ? "finalize"
                                                                                     : "exit");
}

/* ---- init, finalize and the exported tables ---- */

static int mask_from_env(void) {
    uint32_t m = NSC_MASK_ALL;
    const char *s = getenv("NCCLSCOPE_EVENTS");
    char err[128];
    if (s && *s && nsc_mask_parse(s, &m, err, sizeof(err)) != 0)
        m = NSC_MASK_ALL;
    return (int)m;
}

static nsc_abi_result init_any(int version, void **ctx, int *mask) {
    *ctx = &context_token;
    *mask = (int)nsc_mask_for_api((uint32_t)mask_from_env(), version); /* what this version defines */
    atomic_store_explicit(&api_version, version, memory_order_relaxed);
    atomic_fetch_or_explicit(&mask_seen, (uint32_t)*mask, memory_order_relaxed);
    atomic_fetch_add_explicit(&inits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_contexts, 1, memory_order_relaxed);
    return NSC_ABI_SUCCESS;
}

static nsc_abi_result finalize(void *ctx) {
    (void)ctx;
    atomic_fetch_add_explicit(&finalizes, 1, memory_order_relaxed);
    /* The decrement that reaches zero is the last finalize; its thread
     * writes. acq_rel: it follows the other finalizers' work. */
    if (atomic_fetch_sub_explicit(&live_contexts, 1, memory_order_acq_rel) == 1)
        write_if_changed("finalize");
    return NSC_ABI_SUCCESS;
}

#define COUNTING_V1(N)                                                                         \
    static nsc_abi_result init_v##N(void **ctx, int *mask) { return init_any(N, ctx, mask); }  \
    EXPORT const nsc_abi_profiler_v1 ncclProfiler_v##N = {"counting", init_v##N, start_u8,     \
                                                          stop_event, record_state, finalize}

#define COUNTING_V4(N)                                                                         \
    static nsc_abi_result init_v##N(void **ctx, int *mask, const char *name, uint64_t hash,    \
                                    int nnodes, int nranks, int rank, nsc_abi_logger logfn) {  \
        (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)logfn;           \
        return init_any(N, ctx, mask);                                                         \
    }                                                                                          \
    EXPORT const nsc_abi_profiler_v4 ncclProfiler_v##N = {"counting", init_v##N, start_u8,     \
                                                          stop_event, record_state, finalize}

#define COUNTING_V5(N)                                                                         \
    static nsc_abi_result init_v##N(void **ctx, uint64_t id, int *mask, const char *name,      \
                                    int nnodes, int nranks, int rank, nsc_abi_logger logfn) {  \
        (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)logfn;             \
        return init_any(N, ctx, mask);                                                         \
    }                                                                                          \
    EXPORT const nsc_abi_profiler_v5 ncclProfiler_v##N = {"counting", init_v##N, start_u64,    \
                                                          stop_event, record_state, finalize}

COUNTING_V1(1);
COUNTING_V1(2);
COUNTING_V1(3);
COUNTING_V4(4);
COUNTING_V5(5);
COUNTING_V5(6);
COUNTING_V5(7);
