// SPDX-License-Identifier: Apache-2.0
/* chain.c - forwarding to a chained profiler plugin (see chain.h). */
#include "chain.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "event_types.h"
#include "host.h"
#include "log.h"
#include "recorder.h"
#include "comm_table.h"

#define NCCLSCOPE_NO_LOADER
#include "ncclscope.h"

struct nsc_chain_comm nsc_chain_comms[NSC_MAX_COMMS];

static struct nsc_host host; /* lib, version, table: set once, under the session mutex */
static char loaded_path[1024];
static _Atomic uint32_t any_mask; /* union of every comm's chained mask, ever */

/* ---- the handle table ----
 * slot = id & (TAB_SIZE - 1). Writer (the thread starting the event):
 * CAS the slot's id to id|BUSY, store the handle (RELEASE), store the id
 * (RELEASE). Reader: load the id (ACQUIRE), load the handle (ACQUIRE), load
 * the id again; the handle is the event's when both loads read exactly its
 * id. Pairs: the id's RELEASE/ACQUIRE makes the handle stored before it
 * visible; the handle's RELEASE/ACQUIRE makes a reader that already sees a
 * newer writer's handle also see that writer's BUSY on its second load
 * (the CAS precedes the handle store), and the handle's ACQUIRE keeps that
 * second load after it. A seqlock whose sequence is the id itself: ids are
 * unique, so no ABA. No fences (GCC's TSan does not model them). */
#define TAB_BITS 20
#define TAB_SIZE (1u << TAB_BITS)
#define BUSY (1ull << 63)

struct slot {
    _Atomic uint64_t id;
    _Atomic(void *) handle;
};
static struct slot *tab; /* TAB_SIZE slots, 16 MiB of address space touched as used */

static void tab_put(uint64_t id, void *h) {
    struct slot *s = &tab[id & (TAB_SIZE - 1)];
    uint64_t old = atomic_load_explicit(&s->id, memory_order_relaxed);
    /* A writer of an id 2^20 away is inside this slot right now: give up
     * (the event's lookups will miss and be counted). */
    if ((old & BUSY) || !atomic_compare_exchange_strong_explicit(&s->id, &old, id | BUSY,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed))
        return;
    /* RELEASE: BUSY before the new handle (pairs with tab_get's handle ACQUIRE). */
    atomic_store_explicit(&s->handle, h, memory_order_release);
    /* RELEASE: pairs with tab_get's ACQUIRE load; the handle is visible. */
    atomic_store_explicit(&s->id, id, memory_order_release);
}

static int tab_get(uint64_t id, void **h) {
    struct slot *s = &tab[id & (TAB_SIZE - 1)];
    if (atomic_load_explicit(&s->id, memory_order_acquire) != id)
        return 0;
    /* ACQUIRE: the re-check below stays after it and sees the BUSY of any
     * writer whose handle it read. */
    void *v = atomic_load_explicit(&s->handle, memory_order_acquire);
    if (atomic_load_explicit(&s->id, memory_order_relaxed) != id)
        return 0;
    *h = v;
    return 1;
}

/* The chained plugin's handle for a handle of ours: the event was started
 * through it; NULL for NULL, for a value we never issued, or when lost
 * (counted). */
static void *translate(const void *ours) {
    uint64_t p = (uint64_t)(uintptr_t)ours;
    if (!p || !nsc_handle_issued(p))
        return NULL;
    void *h;
    if (tab_get(p & NSC_ID_MASK, &h))
        return h;
    nsc_count(&nsc_counters.chain_lost);
    return NULL;
}

/* ---- loading ---- */

int nsc_chain_load(const char *path, int api_version, char *err, size_t errlen) {
    if (host.lib) { /* a later session: the plugin stays as loaded */
        snprintf(err, errlen, "chained %s (ncclProfiler_v%d), loaded by an earlier session%s",
                 loaded_path, host.version,
                 strcmp(path, loaded_path) ? "; NCCLSCOPE_CHAIN changed since: ignored" : "");
        return 0;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(err, errlen, "NCCLSCOPE_CHAIN=%s: cannot load: %s", path, dlerror());
        return -1;
    }
    /* A plugin that is this very library would call itself for ever. */
    if (dlsym(lib, "ncclscope_control_mask") == (void *)&ncclscope_control_mask) {
        dlclose(lib);
        snprintf(err, errlen, "NCCLSCOPE_CHAIN=%s is ncclscope itself", path);
        return -1;
    }
    const void *table = NULL;
    int v = api_version;
    for (; v >= 1 && !table; v--) {
        char sym[32];
        snprintf(sym, sizeof(sym), "ncclProfiler_v%d", v);
        table = dlsym(lib, sym);
    }
    if (!table) {
        dlclose(lib);
        snprintf(err, errlen, "NCCLSCOPE_CHAIN=%s has no ncclProfiler_v1..v%d", path, api_version);
        return -1;
    }
    tab = calloc(TAB_SIZE, sizeof(*tab));
    if (!tab) {
        dlclose(lib);
        snprintf(err, errlen, "NCCLSCOPE_CHAIN: no memory for the handle table");
        return -1;
    }
    host.lib = lib;
    host.version = v + 1;
    host.table = table;
    host.name = *(const char *const *)table;
    snprintf(loaded_path, sizeof(loaded_path), "%s", path);
    atomic_store_explicit(&nsc_chain_on, 1, memory_order_relaxed);
    snprintf(err, errlen, "chained %s (\"%s\", ncclProfiler_v%d)", path,
             host.name ? host.name : "", host.version);
    return 0;
}

void nsc_chain_unload(void) {
    if (!host.lib)
        return;
    atomic_store_explicit(&nsc_chain_on, 0, memory_order_relaxed);
    dlclose(host.lib);
    memset(&host, 0, sizeof(host));
    free(tab);
    tab = NULL;
}

/* ---- contexts ---- */

#define INIT_FAILS_LOGGED 16u

void nsc_chain_comm_open(const struct nsc_comm *c, uint64_t comm_id, const char *name,
                         int nnodes, int nranks, int rank, nsc_abi_logger logfn) {
    if (!nsc_chain_active())
        return;
    struct nsc_chain_comm *cc = &nsc_chain_comms[c - nsc_comms];
    cc->ctx = NULL;
    cc->cell = 0;
    atomic_store_explicit(&cc->mask, 0, memory_order_relaxed);
    void *ctx = NULL;
    nsc_abi_result r;
    if (host.version >= 5)
        r = ((const nsc_abi_profiler_v5 *)host.table)
                ->init(&ctx, comm_id, &cc->cell, name, nnodes, nranks, rank, logfn);
    else if (host.version == 4)
        r = ((const nsc_abi_profiler_v4 *)host.table)
                ->init(&ctx, &cc->cell, name, comm_id, nnodes, nranks, rank, logfn);
    else
        r = ((const nsc_abi_profiler_v1 *)host.table)->init(&ctx, &cc->cell);
    if (r != NSC_ABI_SUCCESS) { /* NCCL would run this comm without it */
        /* Said, or a chained profiler that sees nothing looks like one
         * that was never loaded. One line per comm, the first
         * INIT_FAILS_LOGGED (a job of thousands of comms gets no more). */
        static _Atomic unsigned fails;
        unsigned n = atomic_fetch_add_explicit(&fails, 1, memory_order_relaxed) + 1;
        if (n <= INIT_FAILS_LOGGED)
            nsc_log_warn("ncclscope: chained plugin %s (\"%s\") failed to init comm %016llx "
                         "rank %d: result %d; this comm runs without it%s",
                         loaded_path, host.name ? host.name : "", (unsigned long long)comm_id, rank,
                         (int)r, n == INIT_FAILS_LOGGED ? " (later failures are not logged)" : "");
        return;
    }
    cc->ctx = ctx;
    nsc_chain_refresh_mask((unsigned)(c - nsc_comms));
}

void nsc_chain_comm_close(const struct nsc_comm *c) {
    if (!nsc_chain_active())
        return;
    struct nsc_chain_comm *cc = &nsc_chain_comms[c - nsc_comms];
    atomic_store_explicit(&cc->mask, 0, memory_order_relaxed);
    if (cc->ctx)
        nsc_host_finalize(&host, cc->ctx);
    cc->ctx = NULL;
}

uint32_t nsc_chain_refresh_mask(unsigned slot) {
    struct nsc_chain_comm *cc = &nsc_chain_comms[slot];
    uint32_t m = 0;
    if (cc->ctx) /* the chained plugin may write its cell from any thread */
        m = (uint32_t)__atomic_load_n(&cc->cell, __ATOMIC_RELAXED) & nsc_host_type_mask(&host);
    atomic_store_explicit(&cc->mask, m, memory_order_relaxed);
    atomic_fetch_or_explicit(&any_mask, m, memory_order_relaxed);
    return m;
}

/* ---- events ---- */

void nsc_chain_start(const struct nsc_comm *c, uint64_t handle, const nsc_abi_descr_v7 *d,
                     size_t dsize, int api_version) {
    void *ctx = nsc_chain_comms[c - nsc_comms].ctx;
    if (!ctx)
        return;
    nsc_abi_descr_v7 x;
    if (dsize < sizeof(x))
        memset((char *)&x + dsize, 0, sizeof(x) - dsize);
    memcpy(&x, d, dsize < sizeof(x) ? dsize : sizeof(x));
    /* PXN: the parent is a handle of another process; NCCL passes it as is
     * and the plugin tells by the pid, so do we. */
    if (!(x.type == NSC_ABI_PROXY_OP && x.proxyOp.pid != nsc_session_pid))
        x.parentObj = translate(x.parentObj);
    if (x.type == NSC_ABI_COLL || x.type == NSC_ABI_P2P) {
        /* host.c gives v1-v4 plugins the Group as parent, from parentGroup;
         * a lifted v1-v4 descriptor carries it in parentObj. */
        void **group = x.type == NSC_ABI_COLL ? &x.coll.parentGroup : &x.p2p.parentGroup;
        *group = api_version <= 4 ? x.parentObj : translate(*group);
    }
    void *h = NULL;
    nsc_host_start(&host, ctx, &h, &x);
    tab_put(handle & NSC_ID_MASK, h);
}

/* The chained plugin's handle for a stop or state: 0 when it has none. */
static int lookup(const void *handle, void **h) {
    uint64_t v = (uint64_t)(uintptr_t)handle;
    if (!v || !nsc_handle_issued(v))
        return 0;
    if (tab_get(v & NSC_ID_MASK, h))
        return *h != NULL;
    uint32_t type = 1u << ((v >> NSC_HANDLE_ETYPE_SHIFT) & 0xf);
    if (atomic_load_explicit(&any_mask, memory_order_relaxed) & type)
        nsc_count(&nsc_counters.chain_lost);
    return 0;
}

void nsc_chain_stop(const void *handle) {
    void *h;
    if (lookup(handle, &h))
        nsc_host_stop(&host, h);
}

void nsc_chain_state(const void *handle, int state, uint64_t arg) {
    void *h;
    if (lookup(handle, &h))
        nsc_host_state(&host, h, state, arg);
}
