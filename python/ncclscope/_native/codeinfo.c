// SPDX-License-Identifier: Apache-2.0
/* codeinfo.c - decisions about code objects and C callables, made once. */
#include "native.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#if PY_VERSION_HEX >= 0x030C0000
#define REQUEST_EXTRA PyUnstable_Eval_RequestCodeExtraIndex
#define GET_EXTRA PyUnstable_Code_GetExtra
#define SET_EXTRA PyUnstable_Code_SetExtra
#else
#define REQUEST_EXTRA _PyEval_RequestCodeExtraIndex
#define GET_EXTRA _PyCode_GetExtra
#define SET_EXTRA _PyCode_SetExtra
#endif

static Py_ssize_t extra_index = -1;
static struct nsp_code *pending; /* rate-limit counts not yet written */

static void unlink_pending(struct nsp_code *c) {
    if (!c->pending)
        return;
    if (c->prev_pending)
        c->prev_pending->next_pending = c->next_pending;
    else
        pending = c->next_pending;
    if (c->next_pending)
        c->next_pending->prev_pending = c->prev_pending;
    c->pending = 0;
    c->next_pending = c->prev_pending = NULL;
}

/* The code object is being freed (with the GIL): its counts go first. */
static void free_code(void *p) {
    struct nsp_code *c = p;
    if (c->pending && nsp_api && c->skipped) {
        nsp_record(NSC_PY_SKIPPED, c->loc, c->skipped);
        unlink_pending(c);
    }
    unlink_pending(c);
    free(c);
}

int nsp_codeinfo_init(void) {
    extra_index = REQUEST_EXTRA(free_code);
    return extra_index < 0 ? -1 : 0;
}

/* ---- names ---- */

static const char *utf8(PyObject *s) {
    if (!s || !PyUnicode_Check(s))
        return NULL;
    const char *u = PyUnicode_AsUTF8(s);
    if (!u)
        PyErr_Clear();
    return u;
}

/* The module name of the function frame executes (a new reference), or NULL. */
static PyObject *module_of(PyFrameObject *frame) {
    if (!frame)
        return NULL;
    PyObject *g = PyFrame_GetGlobals(frame);
    if (!g)
        return NULL;
    PyObject *name = PyDict_Check(g) ? PyDict_GetItemString(g, "__name__") : NULL;
    Py_XINCREF(name);
    Py_DECREF(g);
    return name;
}

/* Calls a configured predicate; a failure counts and reads as false. */
static int ask(PyObject *fn, PyObject *a, PyObject *b) {
    if (!fn)
        return 0;
    nsp_busy++;
    PyObject *r = PyObject_CallFunctionObjArgs(fn, a ? a : Py_None, b ? b : Py_None, NULL);
    nsp_busy--;
    if (!r) {
        PyErr_Clear();
        nsp_count.errors++;
        return 0;
    }
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (t < 0) {
        PyErr_Clear();
        t = 0;
    }
    return t;
}

static uint32_t intern_text(const char *text) {
    nsp_busy++;
    uint32_t id = nsp_api->intern(text);
    nsp_busy--;
    return id;
}

static int is_library_path(const char *file) {
    if (!file)
        return 0;
    for (int i = 0; i < nsp_cfg.nlibrary; i++)
        if (strncmp(file, nsp_cfg.library[i], strlen(nsp_cfg.library[i])) == 0)
            return 1;
    return 0;
}

static void decide_code(struct nsp_code *c, PyCodeObject *co, PyFrameObject *frame) {
    const char *file = utf8(co->co_filename);
    const char *qual = utf8(co->co_qualname);
    c->library = (uint8_t)is_library_path(file);
    c->traced = c->target = 0;
    /* no frame given: a sys.monitoring event, whose code the current frame runs */
    PyObject *mod = module_of(frame ? frame : PyEval_GetFrame());
    if (nsp_cfg.mode == NSP_FUNCTIONS) {
        c->traced = (uint8_t)ask(nsp_cfg.is_traced, mod, NULL);
        if (c->traced && !c->loc) {
            char buf[NSC_REC_SIZE * 8];
            snprintf(buf, sizeof(buf), "%s:%d %s", file ? file : "?", co->co_firstlineno,
                     qual ? qual : "?");
            c->loc = intern_text(buf);
        }
    }
    /* targets in both modes (functions mode gives API events py_caller too);
     * a generator's calls are resumptions, never an API call */
    if (nsp_cfg.is_target && !(co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) {
        PyObject *name = PyUnicode_FromFormat("%U.%s", mod && PyUnicode_Check(mod) ? mod : Py_None,
                                              qual ? qual : "?");
        if (!name) {
            PyErr_Clear();
            nsp_count.errors++;
        } else {
            c->target = (uint8_t)ask(nsp_cfg.is_target, name, NULL);
            Py_DECREF(name);
        }
    }
    Py_XDECREF(mod);
}

struct nsp_code *nsp_code_of(PyCodeObject *co, PyFrameObject *frame) {
    void *p = NULL;
    if (GET_EXTRA((PyObject *)co, extra_index, &p) < 0) {
        PyErr_Clear();
        nsp_count.errors++;
        return NULL;
    }
    struct nsp_code *c = p;
    if (c && c->gen == nsp_gen)
        return c;
    if (!c) {
        c = calloc(1, sizeof(*c));
        if (!c || SET_EXTRA((PyObject *)co, extra_index, c) < 0) {
            PyErr_Clear();
            free(c);
            nsp_count.errors++;
            return NULL;
        }
    }
    decide_code(c, co, frame);
    c->gen = nsp_gen;
    return c;
}

int nsp_code_is_library(PyCodeObject *co) {
    void *p = NULL;
    if (GET_EXTRA((PyObject *)co, extra_index, &p) < 0) {
        PyErr_Clear();
        return 0;
    }
    struct nsp_code *c = p;
    if (c && c->gen == nsp_gen)
        return c->library;
    return is_library_path(utf8(co->co_filename));
}

/* ---- C callables: a table keyed by what identifies the function ---- */

#define CTAB 4096 /* at most half full; then forgotten and refilled */

struct centry {
    const void *key;  /* a PyMethodDef, or a type (held) */
    PyObject *held;   /* the type object kept alive for key, or NULL */
    struct nsp_code *info;
};
static struct centry ctab[CTAB];
static unsigned cn;

static void ctab_clear(void) {
    for (unsigned i = 0; i < CTAB; i++)
        if (ctab[i].key) {
            free_code(ctab[i].info);
            Py_XDECREF(ctab[i].held);
            ctab[i] = (struct centry){0};
        }
    cn = 0;
}

void nsp_codeinfo_clear(void) { ctab_clear(); }

/* What identifies callable (its PyMethodDef for C functions and method
 * descriptors, else its type), whether it is a C function, and NULL for
 * Python functions and methods. */
static const void *key_of(PyObject *callable, PyObject **type_out, int *is_c) {
    *type_out = NULL;
    *is_c = 0;
    if (PyFunction_Check(callable))
        return NULL;
    if (PyMethod_Check(callable)) {
        PyObject *f = PyMethod_GET_FUNCTION(callable);
        if (PyFunction_Check(f))
            return NULL;
        callable = f;
    }
    if (PyCFunction_Check(callable)) {
        *is_c = 1;
        return ((PyCFunctionObject *)callable)->m_ml;
    }
    if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
        *is_c = 1;
        return ((PyMethodDescrObject *)callable)->d_method;
    }
    *type_out = (PyObject *)Py_TYPE(callable);
    return Py_TYPE(callable);
}

static PyObject *dotted(PyObject *obj) {
    PyObject *mod = PyObject_GetAttrString(obj, "__module__");
    if (!mod)
        PyErr_Clear();
    PyObject *q = PyObject_GetAttrString(obj, "__qualname__");
    if (!q) {
        PyErr_Clear();
        q = PyObject_GetAttrString(obj, "__name__");
        if (!q)
            PyErr_Clear();
    }
    PyObject *r = NULL;
    if (q && PyUnicode_Check(q))
        r = mod && PyUnicode_Check(mod) ? PyUnicode_FromFormat("%U.%U", mod, q)
                                        : (Py_INCREF(q), q);
    if (!r)
        PyErr_Clear();
    Py_XDECREF(mod);
    Py_XDECREF(q);
    return r;
}

static void decide_callable(struct nsp_code *c, PyObject *callable, int is_c) {
    PyObject *name = dotted(callable);
    c->traced = c->target = c->library = 0;
    if (nsp_cfg.mode == NSP_FUNCTIONS) {
        c->traced = (uint8_t)is_c;
        if (is_c && !c->loc)
            c->loc = intern_text(name ? utf8(name) : "?");
    }
    if (nsp_cfg.is_target) {
        PyObject *tname = is_c ? NULL : dotted((PyObject *)Py_TYPE(callable));
        c->target = (uint8_t)ask(nsp_cfg.is_target, name, tname);
        Py_XDECREF(tname);
    }
    Py_XDECREF(name);
}

struct nsp_code *nsp_callable_of(PyObject *callable) {
    PyObject *type;
    int is_c;
    const void *key = key_of(callable, &type, &is_c);
    if (!key)
        return NULL;
    unsigned i = (unsigned)(((uintptr_t)key * 0x9e3779b97f4a7c15ull) >> 52) & (CTAB - 1);
    for (; ctab[i].key; i = (i + 1) & (CTAB - 1))
        if (ctab[i].key == key) {
            struct nsp_code *c = ctab[i].info;
            if (c->gen != nsp_gen) {
                decide_callable(c, callable, is_c);
                c->gen = nsp_gen;
            }
            return c;
        }
    if (cn + 1 > CTAB / 2) {
        nsp_flush_skipped();
        ctab_clear();
        i = (unsigned)(((uintptr_t)key * 0x9e3779b97f4a7c15ull) >> 52) & (CTAB - 1);
    }
    struct nsp_code *c = calloc(1, sizeof(*c));
    if (!c) {
        nsp_count.errors++;
        return NULL;
    }
    decide_callable(c, callable, is_c);
    c->gen = nsp_gen;
    Py_XINCREF(type);
    ctab[i] = (struct centry){key, type, c};
    cn++;
    return c;
}

/* ---- rate limit ---- */

static uint32_t coarse_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint32_t)ts.tv_sec;
}

int nsp_rate_ok(struct nsp_code *c) {
    if (!nsp_cfg.rate_limit)
        return 1;
    uint32_t now = coarse_seconds();
    if (c->window != now) {
        if (c->skipped) {
            nsp_record(NSC_PY_SKIPPED, c->loc, c->skipped);
            c->skipped = 0;
            unlink_pending(c);
        }
        c->window = now;
        c->in_window = 0;
    }
    if (c->in_window < nsp_cfg.rate_limit) {
        c->in_window++;
        return 1;
    }
    c->skipped++;
    nsp_count.rate_limited++;
    if (!c->pending) {
        c->pending = 1;
        c->prev_pending = NULL;
        c->next_pending = pending;
        if (pending)
            pending->prev_pending = c;
        pending = c;
    }
    return 0;
}

void nsp_flush_skipped(void) {
    while (pending) {
        struct nsp_code *c = pending;
        if (c->skipped && nsp_api)
            nsp_record(NSC_PY_SKIPPED, c->loc, c->skipped);
        c->skipped = 0;
        unlink_pending(c);
    }
}
