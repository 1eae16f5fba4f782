// SPDX-License-Identifier: Apache-2.0
/*
 * module.c - ncclscope._native: what the Python package (ncclscope/__init__.py)
 * calls. The policy (which plugin, which session, defaults, filters) is
 * Python's; this file loads the plugin, holds the configuration and runs a
 * backend.
 */
#include "native.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const struct ncclscope_py_v1 *nsp_api;
struct nsp_config nsp_cfg;
struct nsp_counters nsp_count;
uint32_t nsp_gen = 1;

static void *plugin_handle;
static PyObject *plugin_path;
static void *own_session; /* session_open's handle while ours is open */

static void free_config(void) {
    Py_CLEAR(nsp_cfg.is_traced);
    Py_CLEAR(nsp_cfg.is_target);
    for (int i = 0; i < nsp_cfg.nlibrary; i++)
        free(nsp_cfg.library[i]);
    free(nsp_cfg.library);
    free(nsp_cfg.cwd);
    memset(&nsp_cfg, 0, sizeof(nsp_cfg));
}

/* load(path) -> True: dlopen the plugin (never closed: NCCL may use the same
 * copy) and take its ncclscope_py_v1 table. OSError when the file is not
 * an ncclscope plugin of a version we speak. */
static PyObject *m_load(PyObject *self, PyObject *arg) {
    (void)self;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path)
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return PyErr_Format(PyExc_OSError, "%s", dlerror());
    const struct ncclscope_py_v1 *api = dlsym(h, NCCLSCOPE_PY_SYMBOL);
    if (!api || api->version != 1 ||
        api->size < offsetof(struct ncclscope_py_v1, forget_latest) + sizeof(api->forget_latest)) {
        dlclose(h);
        return PyErr_Format(PyExc_OSError, "%s is not an ncclscope plugin with %s", path,
                            NCCLSCOPE_PY_SYMBOL);
    }
    if (nsp_api && api != nsp_api) {
        dlclose(h);
        return PyErr_Format(PyExc_RuntimeError, "another ncclscope plugin is already in use (%U)",
                            plugin_path);
    }
    if (nsp_api) /* the same copy again */
        dlclose(h);
    else
        plugin_handle = h;
    nsp_api = api;
    Py_XSETREF(plugin_path, Py_NewRef(arg));
    Py_RETURN_TRUE;
}

static int need_plugin(void) {
    if (nsp_api)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "no ncclscope plugin loaded (load() first)");
    return -1;
}

static PyObject *m_session_open(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name || need_plugin())
        return NULL;
    if (!own_session)
        own_session = nsp_api->session_open(name);
    return PyBool_FromLong(own_session != NULL);
}

static PyObject *m_session_close(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (own_session && nsp_api) {
        void *s = own_session;
        own_session = NULL;
        Py_BEGIN_ALLOW_THREADS /* the flusher's last write may take a while */
        nsp_api->session_close(s);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *m_session_live(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(nsp_api && nsp_api->session_live());
}

static int copy_strings(PyObject *seq, char ***out, int *n) {
    PyObject *f = PySequence_Fast(seq, "library must be a sequence of str");
    if (!f)
        return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(f);
    *out = calloc((size_t)m + 1, sizeof(char *));
    *n = 0;
    for (Py_ssize_t i = 0; *out && i < m; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(f, i));
        if (!s) {
            Py_DECREF(f);
            return -1;
        }
        (*out)[(*n)++] = strdup(s);
    }
    Py_DECREF(f);
    return *out ? 0 : -1;
}

static enum nsp_backend running;

/* The plugin's `tracing` (appended to the table: an older plugin lacks it). */
static void tell_tracing(int on) {
    if (nsp_api->size >= offsetof(struct ncclscope_py_v1, tracing) + sizeof(nsp_api->tracing) &&
        nsp_api->tracing)
        nsp_api->tracing(on);
}

static void stop_backend(void) {
    if (running == NSP_MONITORING)
        nsp_monitor_stop();
    else if (running == NSP_SETPROFILE)
        nsp_profile_stop();
    running = 0;
}

/* start(mode, backend, c_calls, rate_limit, depth, is_traced, is_target,
 *       library, cwd) */
static PyObject *m_start(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"mode", "backend", "c_calls", "rate_limit", "depth", "is_traced",
                             "is_target", "library", "cwd", NULL};
    const char *mode, *backend, *cwd = NULL;
    int c_calls = 1, depth = 4;
    unsigned long rate = 0;
    PyObject *is_traced = Py_None, *is_target = Py_None, *library = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|pkiOOOz", kwlist, &mode, &backend, &c_calls,
                                     &rate, &depth, &is_traced, &is_target, &library, &cwd))
        return NULL;
    if (need_plugin())
        return NULL;
#ifdef Py_GIL_DISABLED
    PyErr_SetString(PyExc_RuntimeError, "ncclscope does not support free-threaded Python yet");
    return NULL;
#endif
    enum nsp_mode m = !strcmp(mode, "caller") ? NSP_CALLER : !strcmp(mode, "functions") ? NSP_FUNCTIONS : NSP_OFF;
    enum nsp_backend b = !strcmp(backend, "monitoring") ? NSP_MONITORING
                         : !strcmp(backend, "setprofile") ? NSP_SETPROFILE : 0;
    if (m == NSP_OFF || !b)
        return PyErr_Format(PyExc_ValueError, "mode must be caller or functions, backend "
                            "monitoring or setprofile (not %s, %s)", mode, backend);
    stop_backend();
    free_config();
    nsp_cfg.mode = m;
    nsp_cfg.backend = b;
    nsp_cfg.c_calls = c_calls;
    nsp_cfg.rate_limit = (uint32_t)(rate > UINT32_MAX ? UINT32_MAX : rate);
    nsp_cfg.depth = depth;
    nsp_cfg.is_traced = is_traced != Py_None ? Py_NewRef(is_traced) : NULL;
    nsp_cfg.is_target = is_target != Py_None ? Py_NewRef(is_target) : NULL;
    if (library && library != Py_None &&
        copy_strings(library, &nsp_cfg.library, &nsp_cfg.nlibrary) != 0) {
        free_config();
        return NULL;
    }
    if (cwd) {
        nsp_cfg.cwd = strdup(cwd);
        nsp_cfg.cwd_len = strlen(cwd);
    }
    nsp_gen++; /* every cached decision is redone under the new settings */
    nsp_events_reset();
    char err[256];
    int rc = b == NSP_MONITORING ? nsp_monitor_start(err, sizeof(err))
                                 : nsp_profile_start(err, sizeof(err));
    if (rc != 0) {
        free_config();
        PyErr_SetString(PyExc_RuntimeError, err);
        return NULL;
    }
    running = b;
    tell_tracing(1);
    Py_RETURN_NONE;
}

static PyObject *m_stop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (!running)
        Py_RETURN_NONE;
    stop_backend();
    nsp_flush_skipped();
    nsp_api->set_caller(0);
    nsp_api->forget_latest();
    tell_tracing(0);
    nsp_gen++; /* open shadow stacks and caller depths are stale now */
    nsp_callers_clear();
    nsp_codeinfo_clear();
    free_config();
    Py_RETURN_NONE;
}

static PyObject *m_status(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    const char *mode = nsp_cfg.mode == NSP_CALLER ? "caller" : nsp_cfg.mode == NSP_FUNCTIONS ? "functions" : "off";
    const char *backend = running == NSP_MONITORING ? "monitoring" : running == NSP_SETPROFILE ? "setprofile" : "none";
    return Py_BuildValue(
        "{s:s,s:s,s:O,s:O,s:O,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "mode", mode, "backend", backend,
        "plugin", plugin_path ? plugin_path : Py_None, "own_session", own_session ? Py_True : Py_False,
        "session_live", nsp_api && nsp_api->session_live() ? Py_True : Py_False,
        "records", (unsigned long long)nsp_count.records,
        "not_kept", (unsigned long long)nsp_count.not_kept,
        "ring_full", (unsigned long long)nsp_count.ring_full,
        "rate_limited", (unsigned long long)nsp_count.rate_limited,
        "callers", (unsigned long long)nsp_count.callers,
        "stacks", (unsigned long long)nsp_count.stacks,
        "unmatched", (unsigned long long)nsp_count.unmatched,
        "errors", (unsigned long long)nsp_count.errors);
}

/* intern(text) -> id, for tests and tools that name their own locations. */
static PyObject *m_intern(PyObject *self, PyObject *arg) {
    (void)self;
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s || need_plugin())
        return NULL;
    return PyLong_FromUnsignedLong(nsp_api->intern(s));
}

static PyMethodDef methods[] = {
    {"load", m_load, METH_O, "load(path): use the ncclscope plugin at path"},
    {"session_open", m_session_open, METH_O, "session_open(name): a session of our own"},
    {"session_close", m_session_close, METH_NOARGS, "end the session session_open began"},
    {"session_live", m_session_live, METH_NOARGS, "whether a session is open"},
    {"start", (PyCFunction)(void (*)(void))m_start, METH_VARARGS | METH_KEYWORDS, "start tracing"},
    {"stop", m_stop, METH_NOARGS, "stop tracing"},
    {"status", m_status, METH_NOARGS, "counters and settings"},
    {"intern", m_intern, METH_O, "intern(text) -> string id"},
    {"_thread_hook", nsp_profile_thread_hook, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "ncclscope._native",
    "ncclscope's recorder: Python events into the plugin's rings (docs/python.md)", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void);
PyMODINIT_FUNC PyInit__native(void) {
    if (nsp_codeinfo_init() != 0)
        return PyErr_Format(PyExc_RuntimeError, "no code-object extra slot left");
    PyObject *m = PyModule_Create(&moddef);
    if (m && PyModule_AddIntConstant(m, "HAVE_MONITORING", PY_VERSION_HEX >= 0x030C0000) < 0)
        Py_CLEAR(m);
    return m;
}
