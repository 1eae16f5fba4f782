// SPDX-License-Identifier: Apache-2.0
/* host.c - an NCCL stand-in for loading and driving profiler plugins. */
#include "host.h"

#include "event_types.h"
#include "nccl_v1_names.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void host_logger(int level, unsigned long flags, const char *file, int line,
                        const char *fmt, ...) {
    (void)flags;
    (void)file;
    (void)line;
    const char *dbg = getenv("NCCLSCOPE_HOST_LOG");
    if (level > NSC_ABI_LOG_WARN && !(dbg && *dbg == '1'))
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[host] ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

int nsc_host_load(struct nsc_host *h, const char *path, int force_version, char *err,
                  size_t errlen) {
    memset(h, 0, sizeof(*h));
    h->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h->lib) {
        snprintf(err, errlen, "cannot load plugin %s: %s", path, dlerror());
        return -1;
    }
    for (int v = 7; v >= 1; v--) {
        if (force_version && v != force_version)
            continue;
        char sym[32];
        snprintf(sym, sizeof(sym), "ncclProfiler_v%d", v);
        const void *t = dlsym(h->lib, sym);
        if (t) {
            h->version = v;
            h->table = t;
            h->name = *(const char *const *)t;
            return 0;
        }
    }
    if (force_version)
        snprintf(err, errlen, "plugin %s has no ncclProfiler_v%d symbol", path, force_version);
    else
        snprintf(err, errlen, "plugin %s has no ncclProfiler_v1..v7 symbol", path);
    dlclose(h->lib);
    h->lib = NULL;
    return -1;
}

void nsc_host_unload(struct nsc_host *h) {
    if (h->lib)
        dlclose(h->lib);
    memset(h, 0, sizeof(*h));
}

uint32_t nsc_host_type_mask(const struct nsc_host *h) { return nsc_types_in_api(h->version); }

/* v1-v3: init does not tell the plugin its comm; NCCL puts the commHash
 * and the comm's name into every Coll and P2p descriptor instead. The host
 * keeps them per context (under a lock: only these versions pay it). */
#define HOST_COMMS 4096
static struct {
    const void *ctx;
    uint64_t id;
    char name[96]; /* a copy: the caller's buffer may be reused (NULL stays NULL) */
    int has_name;
} host_comms[HOST_COMMS];
static pthread_mutex_t host_comms_lock = PTHREAD_MUTEX_INITIALIZER;

static void comm_note(const void *ctx, uint64_t id, const char *name) {
    pthread_mutex_lock(&host_comms_lock);
    for (int i = 0; i < HOST_COMMS; i++)
        if (!host_comms[i].ctx) {
            host_comms[i].ctx = ctx;
            host_comms[i].id = id;
            snprintf(host_comms[i].name, sizeof(host_comms[i].name), "%s", name ? name : "");
            host_comms[i].has_name = name != NULL;
            break;
        }
    pthread_mutex_unlock(&host_comms_lock);
}

static void comm_forget(const void *ctx) {
    pthread_mutex_lock(&host_comms_lock);
    for (int i = 0; i < HOST_COMMS; i++)
        if (host_comms[i].ctx == ctx)
            host_comms[i].ctx = NULL;
    pthread_mutex_unlock(&host_comms_lock);
}

static void comm_find(const void *ctx, uint64_t *id, const char **name) {
    *id = 0;
    *name = NULL;
    pthread_mutex_lock(&host_comms_lock);
    for (int i = 0; i < HOST_COMMS; i++)
        if (host_comms[i].ctx == ctx) {
            *id = host_comms[i].id;
            *name = host_comms[i].has_name ? host_comms[i].name : NULL;
            break;
        }
    pthread_mutex_unlock(&host_comms_lock);
}

int nsc_host_init(struct nsc_host *h, void **ctx, uint64_t comm_id, int *mask, const char *name,
                  int nnodes, int nranks, int rank) {
    *ctx = NULL;
    if (!mask)
        mask = &h->nccl_mask;
    if (h->version <= 3) {
        int rc = ((const nsc_abi_profiler_v1 *)h->table)->init(ctx, mask);
        if (rc == 0 && *ctx)
            comm_note(*ctx, comm_id, name);
        return rc;
    }
    if (h->version >= 5)
        return ((const nsc_abi_profiler_v5 *)h->table)
            ->init(ctx, comm_id, mask, name, nnodes, nranks, rank, host_logger);
    return ((const nsc_abi_profiler_v4 *)h->table) /* v4 */
        ->init(ctx, mask, name, comm_id, nnodes, nranks, rank, host_logger);
}

/* A v1-v3 Coll's or P2p's comm, as NCCL fills it in. */
#define comm_descr(ctx, o)                                                                     \
    do {                                                                                       \
        if ((o)->type == NSC_ABI_COLL)                                                         \
            comm_find(ctx, &(o)->coll.commHash, &(o)->coll.name);                              \
        else if ((o)->type == NSC_ABI_P2P)                                                     \
            comm_find(ctx, &(o)->p2p.commHash, &(o)->p2p.name);                                \
    } while (0)

/* v1..v4 descriptors from a v7 one, member by member as the NSC_LIFT_*
 * rows of nccl/event_schema.def say (the plugin's lift up, reversed). The
 * header by hand: v4 and older take a Coll's/P2p's Group as parent. */
#define DOWN_SAME(dst, src) dst = src
#define DOWN_COPY(dst, src) memcpy(&(dst), &(src), sizeof(dst))
#define DOWN_V1FUNC(dst, src) dst = nsc_v1_value(NSC_V1_FUNC, src, 6)
#define DOWN_V1DTYPE(dst, src) dst = nsc_v1_value(NSC_V1_DTYPE, src, 8)
#define DOWN_V1ALGO(dst, src) dst = nsc_v1_value(NSC_V1_ALGO, src, 6)
#define DOWN_V1PROTO(dst, src) dst = nsc_v1_value(NSC_V1_PROTO, src, 2)
#define LOWER_HEADER(o, d)                                                                     \
    do {                                                                                       \
        memset(&(o), 0, sizeof(o));                                                            \
        (o).type = (uint8_t)(d)->type;                                                         \
        (o).parentObj = (d)->type == NSC_ABI_COLL  ? (d)->coll.parentGroup                     \
                        : (d)->type == NSC_ABI_P2P ? (d)->p2p.parentGroup                      \
                                                   : (d)->parentObj;                           \
        (o).rank = (d)->rank;                                                                  \
    } while (0)

int nsc_host_start(const struct nsc_host *h, void *ctx, void **handle, const nsc_abi_descr_v7 *d) {
    *handle = NULL;
    if (!(d->type & nsc_host_type_mask(h)))
        return 0;
    const nsc_abi_profiler_v5 *t = h->table; /* startEvent sits at the same offset in all */
    switch (h->version) {
    case 7:
    case 6:
    case 5:
        /* NCCL hands its own descriptor over as is; so do we (a copy would
         * add its cost to every benchmarked start). Plugins only read it.
         * v5 and v6 plugins read the same members at the same offsets
         * (nccl_abi.h checks it) and never see the v7 ones; NCCL 2.31's
         * adapters copy those members and drop the rest, which a reader
         * cannot tell apart. */
        t->startEvent(ctx, handle, (void *)(uintptr_t)d);
        return 1;
    case 4: {
        nsc_abi_descr_v4 o;
        LOWER_HEADER(o, d);
        switch ((unsigned)d->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V4(ET, OLD, NEW, CONV) DOWN_##CONV(o.OLD, d->NEW);
#include "event_schema.def"
        default:
            break;
        }
        t->startEvent(ctx, handle, &o);
        return 1;
    }
    case 3: {
        nsc_abi_descr_v3 o;
        LOWER_HEADER(o, d);
        switch ((unsigned)d->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V23(ET, OLD, NEW, CONV) DOWN_##CONV(o.OLD, d->NEW);
#define NSC_LIFT_V3(ET, OLD, NEW, CONV) DOWN_##CONV(o.OLD, d->NEW);
#include "event_schema.def"
        default:
            break;
        }
        comm_descr(ctx, &o);
        t->startEvent(ctx, handle, &o);
        return 1;
    }
    case 2: {
        nsc_abi_descr_v2 o;
        LOWER_HEADER(o, d);
        switch ((unsigned)d->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V23(ET, OLD, NEW, CONV) DOWN_##CONV(o.OLD, d->NEW);
#include "event_schema.def"
        default:
            break;
        }
        comm_descr(ctx, &o);
        t->startEvent(ctx, handle, &o);
        return 1;
    }
    default: {
        nsc_abi_descr_v1 o;
        LOWER_HEADER(o, d);
        switch ((unsigned)d->type) {
#define NSC_EVENT(ET, VMIN, EXT) case NSC_ABI_##ET:
#define NSC_EVENT_END(ET) break;
#define NSC_LIFT_V1(ET, OLD, NEW, CONV) DOWN_##CONV(o.OLD, d->NEW);
#include "event_schema.def"
        default:
            break;
        }
        comm_descr(ctx, &o);
        t->startEvent(ctx, handle, &o);
        return 1;
    }
    }
}

void nsc_host_stop(const struct nsc_host *h, void *handle) {
    if (handle)
        ((const nsc_abi_profiler_v5 *)h->table)->stopEvent(handle);
}

/* States NCCL's adapter for `version` passes on: v5 drops v6's CE states,
 * v6 drops v7's KernelPhaseStop. */
static int state_known(int version, int state) {
    int ctrl = state >= NSC_ABI_PROXY_CTRL_IDLE && state <= NSC_ABI_PROXY_CTRL_APPEND_END;
    int step = state >= NSC_ABI_PROXY_STEP_SEND_GPU_WAIT && state <= NSC_ABI_PROXY_STEP_RECV_GPU_WAIT;
    if (version <= 3)
        return ctrl || step;
    if (version == 4)
        return ctrl || step || state == NSC_ABI_PROXY_OP_IN_PROGRESS_V4 ||
               state == NSC_ABI_PROXY_STEP_SEND_PEER_WAIT_V4 ||
               state == NSC_ABI_NET_PLUGIN_UPDATE || state == NSC_ABI_KERNEL_CH_STOP;
    if (version == 5)
        return state < NSC_ABI_CE_COLL_START;
    if (version == 6)
        return state < NSC_ABI_KERNEL_PHASE_STOP;
    return state < NSC_ABI_STATE_COUNT;
}

int nsc_host_state(const struct nsc_host *h, void *handle, int state, uint64_t arg) {
    if (!handle || !state_known(h->version, state))
        return 0;
    const nsc_abi_profiler_v5 *t = h->table;
    if (h->version <= 3) {
        nsc_abi_state_args_v1 a;
        memset(&a, 0, sizeof(a));
        if (state >= NSC_ABI_PROXY_CTRL_IDLE && state <= NSC_ABI_PROXY_CTRL_APPEND_END)
            a.proxyCtrl.appendedProxyOps = (int)arg;
        t->recordEventState(handle, state, &a);
    } else {
        nsc_abi_state_args_v4 a;
        memset(&a, 0, sizeof(a));
        if (state >= NSC_ABI_PROXY_CTRL_IDLE && state <= NSC_ABI_PROXY_CTRL_APPEND_END)
            a.proxyCtrl.appendedProxyOps = (int)arg;
        else
            a.kernelCh.pTimer = arg;
        t->recordEventState(handle, state, &a);
    }
    return 1;
}

void nsc_host_finalize(const struct nsc_host *h, void *ctx) {
    if (ctx && h->version <= 3)
        comm_forget(ctx);
    if (ctx)
        ((const nsc_abi_profiler_v5 *)h->table)->finalize(ctx);
}
