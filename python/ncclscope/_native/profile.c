// SPDX-License-Identifier: Apache-2.0
/*
 * profile.c - backend: a C profile function (what sys.setprofile installs),
 * for Pythons without sys.monitoring (3.11 and older) or on request.
 *
 * Every Python call and every call of a C function reaches it (no per-
 * location switch-off as with sys.monitoring), so even caller mode pays a
 * callback and a lookup per call (docs/python.md has the numbers). It is
 * installed on every existing thread and, through threading.setprofile, on
 * threads started later (their first event installs it for them). A
 * profiler already running on this thread (cProfile, sys.setprofile) makes
 * start fail instead of being replaced.
 */
#include "native.h"

#include <frameobject.h>

static int active;

static int prof(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    (void)obj;
    if (nsp_busy || !frame)
        return 0;
    PyCodeObject *co = PyFrame_GetCode(frame); /* new reference */
    struct nsp_code *c, *k;
    switch (what) {
    case PyTrace_CALL: /* also each resumption of a generator */
        c = nsp_code_of(co, frame);
        if (!c)
            break;
        if (c->traced)
            nsp_fn_enter(co, c, NSC_PY_CALL);
        if (c->target) { /* never a generator (codeinfo.c) */
            PyFrameObject *back = PyFrame_GetBack(frame);
            nsp_caller_enter(back);
            Py_XDECREF(back);
        }
        break;
    case PyTrace_RETURN: /* arg NULL: left by an exception (3.11; 3.12+ passes None) */
        c = nsp_code_of(co, frame);
        if (!c)
            break;
        if (c->traced)
            nsp_fn_exit(co, NSC_PY_RETURN, arg == NULL);
        if (c->target)
            nsp_caller_exit();
        break;
    case PyTrace_C_CALL: /* frame: the caller's; arg: the function */
        k = nsp_callable_of(arg);
        if (!k)
            break;
        if (nsp_cfg.mode == NSP_FUNCTIONS && nsp_cfg.c_calls && k->traced &&
            (c = nsp_code_of(co, frame)) && c->traced)
            nsp_fn_enter(k, k, NSC_PY_C_CALL);
        if (k->target)
            nsp_caller_enter(frame);
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        k = nsp_callable_of(arg);
        if (!k)
            break;
        if (nsp_cfg.mode == NSP_FUNCTIONS && nsp_cfg.c_calls && k->traced)
            nsp_fn_exit(k, NSC_PY_C_RETURN, what == PyTrace_C_EXCEPTION);
        if (k->target)
            nsp_caller_exit();
        break;
    default:
        break;
    }
    Py_DECREF(co);
    return 0;
}

/* threading.setprofile's hook: a new thread's first event installs the C
 * function for that thread. */
PyObject *nsp_profile_thread_hook(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    if (active)
        PyEval_SetProfile(prof, NULL);
    Py_RETURN_NONE;
}

static void set_all(Py_tracefunc fn) {
#if PY_VERSION_HEX >= 0x030C0000
    PyEval_SetProfileAllThreads(fn, NULL);
#else
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t))
        if (_PyEval_SetProfile(t, fn, NULL) < 0)
            PyErr_Clear();
#endif
}

static int threading_hook(PyObject *hook) {
    PyObject *th = PyImport_ImportModule("threading");
    PyObject *r = th ? PyObject_CallMethod(th, "setprofile", "O", hook) : NULL;
    Py_XDECREF(th);
    if (!r) {
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

static PyMethodDef hook_def = {"_thread_hook", nsp_profile_thread_hook, METH_VARARGS, NULL};

int nsp_profile_start(char *err, size_t errlen) {
    PyThreadState *ts = PyThreadState_Get();
    if (ts->c_profilefunc) {
        snprintf(err, errlen, "a profiler is already running (sys.setprofile, cProfile): "
                              "ncclscope's setprofile backend would replace it");
        return -1;
    }
    active = 1;
    set_all(prof);
    PyObject *hook = PyCFunction_New(&hook_def, NULL);
    int rc = hook ? threading_hook(hook) : -1;
    Py_XDECREF(hook);
    if (rc != 0) {
        nsp_profile_stop();
        snprintf(err, errlen, "threading.setprofile failed");
        return -1;
    }
    return 0;
}

void nsp_profile_stop(void) {
    if (!active)
        return;
    active = 0;
    set_all(NULL);
    threading_hook(Py_None);
}
