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
 * a complete file. Runs under ASan in tests/run.sh like every C test.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "host.h"
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

    /* Read both files back (the NCCL session's, then the package's). */
    char paths[2][4096];
    int n = 0;
    DIR *dir = opendir(argv[2]);
    CHECK(dir != NULL);
    for (struct dirent *e; dir && (e = readdir(dir)) && n < 2;)
        if (strstr(e->d_name, ".nsc"))
            snprintf(paths[n++], sizeof(paths[0]), "%s/%s", argv[2], e->d_name);
    if (dir)
        closedir(dir);
    CHECK(n == 2);
    if (n == 2 && strlen(paths[0]) > strlen(paths[1])) { /* host-pid.nsc before host-pid-1.nsc */
        char t[4096];
        memcpy(t, paths[0], sizeof(t));
        memcpy(paths[0], paths[1], sizeof(t));
        memcpy(paths[1], t, sizeof(t));
    }
    struct seen a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    CHECK(n == 2 && read_trace(paths[0], &a) == 0);
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
    CHECK(n == 2 && read_trace(paths[1], &b) == 0);
    CHECK(b.npy == 2 && b.py[0][0] == NSC_PY_CALL && b.py[1][0] == NSC_PY_RETURN);
    for (int i = 0; i < 4; i++)
        free((void *)a.stack_of[i]);
    free((void *)a.p2p_stack);
    free((void *)a.group_stack);
    nsc_host_unload(&host);
    return check_summary();
}
