// SPDX-License-Identifier: Apache-2.0
/*
 * monitor.c - backend: sys.monitoring (PEP 669, Python 3.12+).
 *
 * Callbacks are C functions registered for one tool id. What is not ours
 * is switched off where it happens: returning sys.monitoring.DISABLE from
 * PY_START/PY_RETURN/CALL turns that event off at that code location, so a
 * function we do not trace, or a call site that never calls a target, costs
 * one callback in the whole run. PY_UNWIND and PY_THROW cannot be disabled
 * per location (CPython's rule); they cost one lookup when not ours.
 *
 *   both modes: PY_START, PY_RETURN, PY_UNWIND  (targets written in Python)
 *               CALL, C_RETURN, C_RAISE         (targets in C: ProcessGroup
 *                                                methods, JAX's jitted callables;
 *                                                C calls in functions mode)
 *   functions:  PY_RESUME, PY_THROW, PY_YIELD   (generators)
 */
#include "native.h"

#if PY_VERSION_HEX >= 0x030C0000

static PyObject *mon;       /* sys.monitoring */
static PyObject *disable;   /* sys.monitoring.DISABLE */
static int tool = -1;

static PyObject *ret_none(void) { Py_RETURN_NONE; }
static PyObject *ret_disable(void) { return Py_NewRef(disable); }

/* The frame running the code an event is about (borrowed). In 3.12+ this
 * may create the frame object: asked only when needed, never per event. */
static PyFrameObject *current_frame(void) { return PyEval_GetFrame(); }

/* One set of callbacks for both modes: a code object or callable may be
 * traced (functions mode records its calls), a target (its calls set the
 * caller: caller mode, and functions mode too, so API events carry
 * py_caller there as well), both or neither; neither is switched off
 * where the event allows it. */

static PyObject *py_enter(PyObject *const *args, Py_ssize_t nargs, int can_disable, int start) {
    if (nargs < 1 || !PyCode_Check(args[0]) || nsp_busy)
        return ret_none();
    PyCodeObject *co = (PyCodeObject *)args[0];
    struct nsp_code *c = nsp_code_of(co, NULL);
    if (!c)
        return ret_none();
    if (!c->traced && !c->target)
        return can_disable ? ret_disable() : ret_none();
    if (c->traced)
        nsp_fn_enter(co, c, NSC_PY_CALL);
    if (c->target && start) {
        PyFrameObject *f = current_frame();
        PyFrameObject *back = f ? PyFrame_GetBack(f) : NULL; /* who called the target */
        nsp_caller_enter(back);
        Py_XDECREF(back);
    }
    return ret_none();
}

static PyObject *py_exit(PyObject *const *args, Py_ssize_t nargs, int can_disable, int exc,
                         int end) {
    if (nargs < 1 || !PyCode_Check(args[0]) || nsp_busy)
        return ret_none();
    PyCodeObject *co = (PyCodeObject *)args[0];
    struct nsp_code *c = nsp_code_of(co, NULL);
    if (!c)
        return ret_none();
    if (!c->traced && !c->target)
        return can_disable ? ret_disable() : ret_none();
    if (c->traced)
        nsp_fn_exit(co, NSC_PY_RETURN, exc);
    if (c->target && end)
        nsp_caller_exit();
    return ret_none();
}

/* targets are never generators: resumes and yields are not their calls */
static PyObject *e_start(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return py_enter(a, n, 1, 1); }
static PyObject *e_resume(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return py_enter(a, n, 1, 0); }
static PyObject *e_throw(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return py_enter(a, n, 0, 0); }
static PyObject *e_return(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return py_exit(a, n, 1, 0, 1); }
static PyObject *e_yield(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return py_exit(a, n, 1, 0, 0); }
static PyObject *e_unwind(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return py_exit(a, n, 0, 1, 1); }

static PyObject *e_call(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs < 3 || !PyCode_Check(args[0]) || nsp_busy)
        return ret_none();
    struct nsp_code *k = nsp_callable_of(args[2]);
    if (!k) /* a Python function: its own PY_START speaks for it */
        return ret_disable();
    int record = 0;
    if (nsp_cfg.mode == NSP_FUNCTIONS && nsp_cfg.c_calls && k->traced) {
        struct nsp_code *site = nsp_code_of((PyCodeObject *)args[0], NULL);
        record = site && site->traced; /* C calls made by code we trace */
    }
    if (!record && !k->target)
        return ret_disable();
    if (record)
        nsp_fn_enter(k, k, NSC_PY_C_CALL);
    if (k->target)
        nsp_caller_enter(current_frame());
    return ret_none();
}

/* C_RETURN / C_RAISE: also reported for the call whose CALL just returned
 * DISABLE; the shadow stack's tokens and the target test keep those out. */
static PyObject *c_exit(PyObject *const *args, Py_ssize_t nargs, int exc) {
    if (nargs < 3 || nsp_busy)
        return ret_none();
    struct nsp_code *k = nsp_callable_of(args[2]);
    if (!k)
        return ret_none();
    if (k->traced && nsp_cfg.mode == NSP_FUNCTIONS && nsp_cfg.c_calls)
        nsp_fn_exit(k, NSC_PY_C_RETURN, exc);
    if (k->target)
        nsp_caller_exit();
    return ret_none();
}
static PyObject *e_c_return(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return c_exit(a, n, 0); }
static PyObject *e_c_raise(PyObject *m, PyObject *const *a, Py_ssize_t n) { (void)m; return c_exit(a, n, 1); }

#define CB(name, fn) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, NULL}
static PyMethodDef cbs[] = {
    CB("e_start", e_start),   CB("e_resume", e_resume), CB("e_throw", e_throw),
    CB("e_return", e_return), CB("e_yield", e_yield),   CB("e_unwind", e_unwind),
    CB("e_call", e_call),     CB("e_c_return", e_c_return), CB("e_c_raise", e_c_raise),
    {NULL, NULL, 0, NULL},
};

static long event(const char *name) {
    PyObject *ev = PyObject_GetAttrString(mon, "events");
    PyObject *v = ev ? PyObject_GetAttrString(ev, name) : NULL;
    long r = v ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    Py_XDECREF(ev);
    return r;
}

static int reg(const char *ev, const char *cb) {
    PyMethodDef *d = cbs;
    while (d->ml_name && strcmp(d->ml_name, cb) != 0)
        d++;
    PyObject *f = PyCFunction_New(d, NULL);
    long e = event(ev);
    PyObject *r = f && e >= 0 ? PyObject_CallMethod(mon, "register_callback", "ilO", tool, e, f) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(r);
    return r ? (int)e : -1;
}

int nsp_monitor_start(char *err, size_t errlen) {
    mon = PySys_GetObject("monitoring"); /* borrowed */
    if (!mon) {
        snprintf(err, errlen, "sys.monitoring is not available");
        return -1;
    }
    Py_INCREF(mon);
    disable = PyObject_GetAttrString(mon, "DISABLE");
    /* Tools 3 and 4 are free by convention (0 debugger, 1 coverage,
     * 2 profiler, 5 optimizer); then any. */
    static const int ids[] = {4, 3, 5, 1, 0, 2};
    for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]) && tool < 0; i++) {
        PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", ids[i], "ncclscope");
        if (r) {
            tool = ids[i];
            Py_DECREF(r);
        } else {
            PyErr_Clear();
        }
    }
    if (tool < 0 || !disable) {
        snprintf(err, errlen, "every sys.monitoring tool id is taken");
        PyErr_Clear();
        Py_CLEAR(mon);
        Py_CLEAR(disable);
        return -1;
    }
    long mask = 0;
    int e;
#define ON(ev, cb)                                                                             \
    do {                                                                                       \
        if ((e = reg(ev, cb)) < 0)                                                             \
            goto fail;                                                                         \
        mask |= e;                                                                             \
    } while (0)
    /* C_RETURN and C_RAISE come with CALL: registered, never in the mask */
#define WITH_CALL(ev, cb)                                                                      \
    do {                                                                                       \
        if (reg(ev, cb) < 0)                                                                   \
            goto fail;                                                                         \
    } while (0)
    ON("PY_START", "e_start");
    ON("PY_RETURN", "e_return");
    ON("PY_UNWIND", "e_unwind");
    ON("CALL", "e_call"); /* targets in C; C calls in functions mode */
    WITH_CALL("C_RETURN", "e_c_return");
    WITH_CALL("C_RAISE", "e_c_raise");
    if (nsp_cfg.mode == NSP_FUNCTIONS) {
        ON("PY_RESUME", "e_resume");
        ON("PY_THROW", "e_throw");
        ON("PY_YIELD", "e_yield");
    }
#undef ON
#undef WITH_CALL
    /* locations a previous run disabled are live again */
    PyObject *r = PyObject_CallMethod(mon, "restart_events", NULL);
    if (!r)
        goto fail;
    Py_DECREF(r);
    r = PyObject_CallMethod(mon, "set_events", "il", tool, mask);
    if (!r)
        goto fail;
    Py_DECREF(r);
    return 0;
fail:;
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *msg = exc ? PyObject_Str(exc) : NULL;
    const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
    snprintf(err, errlen, "sys.monitoring refused the callbacks: %s", m ? m : "?");
    Py_XDECREF(msg);
    Py_XDECREF(exc);
    PyErr_Clear();
    nsp_monitor_stop();
    return -1;
}

void nsp_monitor_stop(void) {
    if (tool < 0)
        return;
    PyObject *r = PyObject_CallMethod(mon, "set_events", "ii", tool, 0);
    Py_XDECREF(r);
    static const char *const evs[] = {"PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN",
                                      "PY_YIELD", "PY_UNWIND", "CALL",     "C_RETURN",
                                      "C_RAISE"};
    for (unsigned i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
        long e = event(evs[i]);
        r = e >= 0 ? PyObject_CallMethod(mon, "register_callback", "ilO", tool, e, Py_None) : NULL;
        Py_XDECREF(r);
    }
    r = PyObject_CallMethod(mon, "free_tool_id", "i", tool);
    Py_XDECREF(r);
    PyErr_Clear();
    tool = -1;
    Py_CLEAR(mon);
    Py_CLEAR(disable);
}

#else /* Python 3.11 and older: no sys.monitoring */

int nsp_monitor_start(char *err, size_t errlen) {
    snprintf(err, errlen, "sys.monitoring needs Python 3.12 or newer (this is %d.%d); "
                          "use backend='setprofile'",
             PY_MAJOR_VERSION, PY_MINOR_VERSION);
    return -1;
}

void nsp_monitor_stop(void) {}

#endif
