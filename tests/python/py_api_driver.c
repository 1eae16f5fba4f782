// SPDX-License-Identifier: Apache-2.0
/*
 * py_api_driver.c - the plugin's Python entry points (ncclscope_python.h)
 * through the plugin itself, without Python: what the extension does,
 * called from C, then the trace read back with the decoder.
 *
 *   py_api_driver PLUGIN TRACE_DIR   (NCCLSCOPE_DIR must name TRACE_DIR)
 *
 * Checks: nothing is kept before a session; PY records keep their what,
 * location and argument in order; a CollApi/P2pApi/GroupApi START takes the
 * thread's caller, a thread without one the process's latest (flagged),
 * none after forget_latest; a session of the package's own (no NCCL) gives
 * a complete file whose SESSION says API version 0 (no NCCL); NCCL's init
 * joining the package's session (through API v4 and v6, as NCCL does) makes
 * the file say NCCL's version and the mask for it, whether the file was
 * already written (its SESSION is rewritten in place) or not yet. Runs
 * under ASan in tests/run.sh like every C test.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "host.h"
#include "event_types.h"
#include "ncclscope_python.h"
#include "trace_decode.h"

static struct nsc_host host;
static const struct ncclscope_py_v1 *py;
static void *ctx;

static void coll_api(const char *func) {
    nsc_abi_descr_v7 d;
    void *h;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL_API;
    d.collApi.func = func;
    d.collApi.count = 1024;
    d.collApi.datatype = "ncclFloat32";
    nsc_host_start(&host, ctx, &h, &d);
    nsc_host_stop(&host, h);
}

/* A Coll (under a Group: v4 and older deliver one only there), as NCCL
 * issues it, through `h`. */
static void coll(const struct nsc_host *h, void *c) {
    nsc_abi_descr_v7 d;
    void *g, *k;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_GROUP;
    nsc_host_start(h, c, &g, &d);
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.parentObj = g;
    d.coll.func = "AllReduce";
    d.coll.count = 256;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 1;
    nsc_host_start(h, c, &k, &d);
    nsc_host_stop(h, k);
    nsc_host_stop(h, g);
}

/* <dir>/<host>-<pid>[-N].nsc: the plugin's name for the process's session N. */
static void trace_path(const char *dir, int n, char *out, size_t len) {
    char name[64];
    memset(name, 0, sizeof(name));
    if (gethostname(name, sizeof(name) - 1) != 0)
        snprintf(name, sizeof(name), "unknown");
    if (n == 0)
        snprintf(out, len, "%s/%s-%d.nsc", dir, name, (int)getpid());
    else
        snprintf(out, len, "%s/%s-%d-%d.nsc", dir, name, (int)getpid(), n);
}

static void *other_thread(void *arg) {
    (void)arg;
    coll_api("Broadcast"); /* no caller of its own: the process's latest */
    return NULL;
}

/* What the decoder saw. */
struct seen {
    int py[16][8];          /* [n][0..2] = what, loc, arg of the first PY records */
    int npy;
    int colls, p2ps, groups;
    const char *stack_of[4]; /* py_stack text of the AllReduce, Broadcast, AllGather, ReduceScatter CollApi */
    int process_flag[4];
    const char *p2p_stack, *group_stack;
    int c_call_loc_ok;
    struct nsc_session ses;
};

static char texts[8][256];

static void on_rec(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                   const struct nsc_rec *ext) {
    (void)thread;
    (void)ext;
    struct seen *s = ud;
    if (r->h.kind == NSC_REC_PY && s->npy < 16) {
        s->py[s->npy][0] = r->h.etype;
        const char *t = nsc_decoder_str(d, r->h.aux);
        snprintf(texts[s->npy % 8], sizeof(texts[0]), "%s", t ? t : "");
        s->py[s->npy][1] = (int)r->h.aux;
        s->py[s->npy][2] = (int)r->u.state.arg;
        if (r->h.etype == NSC_PY_C_CALL && t && !strcmp(t, "time.sleep"))
            s->c_call_loc_ok = 1;
        s->npy++;
    }
    if (r->h.kind != NSC_REC_START)
        return;
    const union nsc_desc *x = &r->u.start.d;
    if (r->h.etype == 9 /* CollApi */) {
        /* by function: the other thread's ring may be drained first */
        static const char *const funcs[4] = {"AllReduce", "Broadcast", "AllGather", "ReduceScatter"};
        const char *fn = nsc_decoder_str(d, x->coll_api.func);
        for (int i = 0; i < 4; i++)
            if (fn && !strcmp(fn, funcs[i])) {
                const char *t = nsc_decoder_str(d, x->coll_api.py_stack);
                s->stack_of[i] = t ? strdup(t) : NULL;
                s->process_flag[i] = (r->h.flags & NSC_RF_PY_PROCESS) != 0;
            }
        s->colls++;
    } else if (r->h.etype == 10 /* P2pApi */) {
        const char *t = nsc_decoder_str(d, x->p2p_api.py_stack);
        s->p2p_stack = t ? strdup(t) : NULL;
        s->p2ps++;
    } else if (r->h.etype == 1 /* Coll */) {
        s->colls++;
    } else if (r->h.etype == 8 /* GroupApi */) {
        const char *t = nsc_decoder_str(d, x->group_api.py_stack);
        s->group_stack = t ? strdup(t) : NULL;
        s->groups++;
    }
}

static int read_trace(const char *path, struct seen *s) {
    struct nsc_decoder d;
    if (nsc_decoder_open(&d, path) != NSC_OK) {
        fprintf(stderr, "%s\n", d.rd.err);
        return -1;
    }
    struct nsc_decode_ops ops = {.record = on_rec};
    int bad = nsc_decoder_run(&d, &ops, s);
    int ended = d.ended;
    const struct nsc_session *ses = nsc_decoder_session(&d);
    if (ses)
        s->ses = *ses;
    nsc_decoder_close(&d);
    return bad == 0 && ended ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: py_api_driver PLUGIN TRACE_DIR\n");
        return 2;
    }
    char err[256];
    if (nsc_host_load(&host, argv[1], 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    py = dlsym(host.lib, NCCLSCOPE_PY_SYMBOL);
    CHECK(py != NULL);
    if (!py)
        return check_summary();
    CHECK(py->version == 1 && py->size >= sizeof(*py));
    CHECK(py->session_live() == 0);
    uint32_t f = py->intern("train.py:10 train_step");
    uint32_t c = py->intern("time.sleep");
    uint32_t stack = py->intern("train.py:12 train_step\ntrain.py:40 main");
    CHECK(f >= 2 && c >= 2 && stack >= 2 && f != c && c != stack);
    CHECK(py->intern("train.py:10 train_step") == f); /* interned by content */
    CHECK(py->intern(NULL) == 0);
    CHECK(py->record(NSC_PY_CALL, f, 0) == 0); /* no session: not kept */

    int mask = 0;
    CHECK(nsc_host_init(&host, &ctx, 0x77, &mask, "driver", 1, 1, 0) == 0);
    CHECK(py->session_live() == 1);
    CHECK(py->record(NSC_PY_CALL, f, 0) == 1);
    CHECK(py->set_caller(stack) == 0);
    nsc_abi_descr_v7 d;
    void *g, *p;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_GROUP_API;
    d.groupApi.groupDepth = 1;
    nsc_host_start(&host, ctx, &g, &d);
    coll_api("AllReduce");
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_P2P_API;
    d.p2pApi.func = "Send";
    d.p2pApi.count = 8;
    d.p2pApi.datatype = "ncclInt8";
    nsc_host_start(&host, ctx, &p, &d);
    nsc_host_stop(&host, p);
    nsc_host_stop(&host, g);
    CHECK(py->record(NSC_PY_C_CALL, c, 0) == 1);
    CHECK(py->record(NSC_PY_C_RETURN, c, 1) == 1);
    CHECK(py->set_caller(0) == stack);
    coll_api("ReduceScatter"); /* a Python thread between calls: no caller, not the process's */
    pthread_t th;
    pthread_create(&th, NULL, other_thread, NULL);
    pthread_join(th, NULL);
    py->forget_latest();
    coll_api("AllGather"); /* no caller anywhere */
    CHECK(py->record(NSC_PY_RETURN, f, 0) == 1);
    CHECK(py->record(NSC_PY_SKIPPED, f, 12345) == 1);
    CHECK(py->record(99, f, 0) == 0); /* not a PY event */
    nsc_host_finalize(&host, ctx);
    CHECK(py->session_live() == 0);
    CHECK(py->record(NSC_PY_CALL, f, 0) == 0);

    /* The package's own session: no NCCL. */
    void *s = py->session_open("python");
    CHECK(s != NULL);
    CHECK(py->session_live() == 1);
    CHECK(py->record(NSC_PY_CALL, f, 0) == 1);
    CHECK(py->record(NSC_PY_RETURN, f, 0) == 1);
    py->session_close(s);
    py->session_close(s); /* a second close is ignored */
    CHECK(py->session_live() == 0);

    /* The package's session first, then NCCL's init (API v4) once the
     * file is on disk: its SESSION is rewritten with NCCL's version. */
    char paths[4][4096];
    for (int i = 0; i < 4; i++)
        trace_path(argv[2], i, paths[i], sizeof(paths[i]));
    s = py->session_open("python");
    CHECK(s != NULL);
    CHECK(py->record(NSC_PY_CALL, f, 0) == 1);
    for (int i = 0; i < 1000 && access(paths[2], F_OK) != 0; i++) { /* the first flush: 10 s at most */
        struct timespec ms = {0, 10000000};
        nanosleep(&ms, NULL);
    }
    CHECK(access(paths[2], F_OK) == 0);
    struct nsc_host v4;
    CHECK(nsc_host_load(&v4, argv[1], 4, err, sizeof(err)) == 0 && v4.version == 4);
    void *ctx4 = NULL;
    mask = 0;
    CHECK(nsc_host_init(&v4, &ctx4, 0x44, &mask, "v4", 1, 1, 0) == 0 && ctx4 != NULL);
    CHECK(mask != 0 && ((uint32_t)mask & ~nsc_types_in_api(4)) == 0);
    coll(&v4, ctx4);
    nsc_host_finalize(&v4, ctx4);
    CHECK(py->session_live() == 1); /* the package's comm is still open */
    CHECK(py->record(NSC_PY_RETURN, f, 0) == 1);
    py->session_close(s);
    CHECK(py->session_live() == 0);
    nsc_host_unload(&v4);

    /* NCCL's init (API v6) before the package's session wrote anything. */
    s = py->session_open("python");
    CHECK(s != NULL);
    struct nsc_host v6;
    CHECK(nsc_host_load(&v6, argv[1], 6, err, sizeof(err)) == 0 && v6.version == 6);
    void *ctx6 = NULL;
    CHECK(nsc_host_init(&v6, &ctx6, 0x66, &mask, "v6", 1, 1, 0) == 0 && ctx6 != NULL);
    CHECK(py->record(NSC_PY_CALL, f, 0) == 1);
    coll(&v6, ctx6);
    CHECK(py->record(NSC_PY_RETURN, f, 0) == 1);
    py->session_close(s);
    CHECK(py->session_live() == 1); /* NCCL's comm keeps it open */
    nsc_host_finalize(&v6, ctx6);
    CHECK(py->session_live() == 0);
    nsc_host_unload(&v6);

    /* Read the files back (the NCCL session's, the package's, the two
     * joined ones). */
    struct seen a, b, j4, j6;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&j4, 0, sizeof(j4));
    memset(&j6, 0, sizeof(j6));
    CHECK(read_trace(paths[0], &a) == 0);
    CHECK(a.ses.api_version == 7);
    CHECK(a.npy == 5);
    static const int want[5][3] = {{NSC_PY_CALL, 0, 0}, {NSC_PY_C_CALL, 0, 0},
                                   {NSC_PY_C_RETURN, 0, 1}, {NSC_PY_RETURN, 0, 0},
                                   {NSC_PY_SKIPPED, 0, 12345}};
    for (int i = 0; i < 5 && i < a.npy; i++) {
        CHECK(a.py[i][0] == want[i][0]);
        CHECK(a.py[i][2] == want[i][2]);
        CHECK(a.py[i][1] == (int)(i == 1 || i == 2 ? c : f));
    }
    CHECK(a.c_call_loc_ok);
    CHECK(a.colls == 4 && a.p2ps == 1 && a.groups == 1);
    CHECK(a.stack_of[3] == NULL && !a.process_flag[3]);
    CHECK(a.stack_of[0] && !strcmp(a.stack_of[0], "train.py:12 train_step\ntrain.py:40 main"));
    CHECK(!a.process_flag[0]);
    CHECK(a.stack_of[1] && !strcmp(a.stack_of[1], a.stack_of[0]) && a.process_flag[1]);
    CHECK(a.stack_of[2] == NULL && !a.process_flag[2]);
    CHECK(a.p2p_stack && !strcmp(a.p2p_stack, a.stack_of[0]));
    CHECK(a.group_stack && !strcmp(a.group_stack, a.stack_of[0]));
    CHECK(read_trace(paths[1], &b) == 0);
    CHECK(b.npy == 2 && b.py[0][0] == NSC_PY_CALL && b.py[1][0] == NSC_PY_RETURN);
    CHECK(b.ses.api_version == NSC_SESSION_API_NONE && b.ses.event_mask != 0);
    CHECK(read_trace(paths[2], &j4) == 0);
    CHECK(j4.ses.api_version == 4);
    CHECK(j4.ses.event_mask != 0 && (j4.ses.event_mask & ~nsc_types_in_api(4)) == 0);
    CHECK(j4.npy == 2 && j4.colls == 1);
    CHECK(read_trace(paths[3], &j6) == 0);
    CHECK(j6.ses.api_version == 6);
    CHECK(j6.ses.event_mask != 0 && (j6.ses.event_mask & ~nsc_types_in_api(6)) == 0);
    CHECK(j6.npy == 2 && j6.colls == 1);
    for (int i = 0; i < 4; i++)
        free((void *)a.stack_of[i]);
    free((void *)a.p2p_stack);
    free((void *)a.group_stack);
    nsc_host_unload(&host);
    return check_summary();
}
