// SPDX-License-Identifier: Apache-2.0
/*
 * ncclscope._analysis - a trace file's tables (converter/ops_table.h) as
 * buffers for NumPy: each column comes back as one bytes object that
 * ncclscope.analysis wraps with np.frombuffer (int64, or uint32 indexes
 * into the file's string list). No NumPy headers needed, no text between
 * the decoder and the DataFrame. The GIL is released while a file is read:
 * a Dask worker's threads read files side by side.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hang.h"
#include "hang_model.h"
#include "op_rules.h"
#include "ops_table.h"

static PyObject *table_dict(const struct nsc_ot_table *t) {
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    for (unsigned c = 0; c < t->ncols; c++) {
        size_t w = t->spec[c].type == NSC_OT_STR ? 4 : 8;
        PyObject *b = PyBytes_FromStringAndSize(t->nrows ? t->col[c] : "", (Py_ssize_t)(t->nrows * w));
        PyObject *v = b ? Py_BuildValue("(Ns)", b, t->spec[c].type == NSC_OT_STR ? "str" : "i8") : NULL;
        if (!v || PyDict_SetItemString(d, t->spec[c].name, v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

/* read(path, file_index, shift_ns, want) -> {"strings": [...], "tables":
 * {name: {column: (bytes, "i8"|"str")}}, "nrows": {name: n}} */
static PyObject *py_read(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj;
    int file_index;
    long long shift;
    unsigned int want;
    if (!PyArg_ParseTuple(args, "O&iLI", PyUnicode_FSConverter, &path_obj, &file_index, &shift, &want))
        return NULL;
    struct nsc_ot_file f;
    int rc;
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    rc = nsc_ot_read(path, file_index, (int64_t)shift, want, &f);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc < 0) {
        nsc_ot_free(&f);
        return PyErr_NoMemory();
    }
    PyObject *out = PyDict_New(), *strs = PyList_New(f.nstr), *tables = PyDict_New(),
             *nrows = PyDict_New();
    if (!out || !strs || !tables || !nrows)
        goto fail;
    for (uint32_t i = 0; i < f.nstr; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(f.str[i], (Py_ssize_t)strlen(f.str[i]), "replace");
        if (!s)
            goto fail;
        PyList_SET_ITEM(strs, i, s);
    }
    for (int i = 0; i < NSC_OT_NTABLES; i++) {
        PyObject *t = table_dict(&f.t[i]);
        PyObject *n = PyLong_FromSize_t(f.t[i].nrows);
        if (!t || !n || PyDict_SetItemString(tables, nsc_ot_table_names[i], t) != 0 ||
            PyDict_SetItemString(nrows, nsc_ot_table_names[i], n) != 0) {
            Py_XDECREF(t);
            Py_XDECREF(n);
            goto fail;
        }
        Py_DECREF(t);
        Py_DECREF(n);
    }
    if (PyDict_SetItemString(out, "strings", strs) != 0 ||
        PyDict_SetItemString(out, "tables", tables) != 0 ||
        PyDict_SetItemString(out, "nrows", nrows) != 0)
        goto fail;
    Py_DECREF(strs);
    Py_DECREF(tables);
    Py_DECREF(nrows);
    nsc_ot_free(&f);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(strs);
    Py_XDECREF(tables);
    Py_XDECREF(nrows);
    nsc_ot_free(&f);
    return NULL;
}

/* A Python list of paths as C strings (file-system encoding), for the
 * calls below; they stay valid until path_list_free, GIL released or not. */
struct path_list {
    PyObject **enc; /* the encoded bytes objects, owned */
    const char **paths;
    int n;
};

/* 0, or -1 with a Python exception set. A str or bytes is refused: it is a
 * sequence too, of letters. */
static int path_list_get(PyObject *seq, const char *what, struct path_list *pl) {
    memset(pl, 0, sizeof(*pl));
    if (PyUnicode_Check(seq) || PyBytes_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s: a list of paths, not one path", what);
        return -1;
    }
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > INT_MAX) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: too many paths", what);
        return -1;
    }
    pl->enc = calloc((size_t)n + 1, sizeof(*pl->enc));
    pl->paths = calloc((size_t)n + 1, sizeof(*pl->paths));
    int rc = 0;
    if (!pl->enc || !pl->paths) {
        PyErr_NoMemory();
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fast, i), &pl->enc[i]))
            rc = -1;
        else
            pl->paths[i] = PyBytes_AS_STRING(pl->enc[i]);
        pl->n = (int)i + 1; /* what path_list_free releases */
    }
    Py_DECREF(fast);
    return rc;
}

static void path_list_free(struct path_list *pl) {
    for (int i = 0; pl->enc && i < pl->n; i++)
        Py_XDECREF(pl->enc[i]);
    free(pl->enc);
    free(pl->paths);
    memset(pl, 0, sizeof(*pl));
}

/* job_shifts([paths], mode, max_uncertainty_ns) -> [shift_ns, ...];
 * ValueError when the files cannot be put on one timeline. */
static PyObject *py_job_shifts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    int mode = 0;
    double max_unc = 1e6;
    if (!PyArg_ParseTuple(args, "O|id", &seq, &mode, &max_unc))
        return NULL;
    struct path_list pl;
    if (path_list_get(seq, "job_shifts", &pl) != 0) {
        path_list_free(&pl);
        return NULL;
    }
    int64_t *shift = calloc((size_t)pl.n + 1, sizeof(*shift));
    PyObject *out = NULL;
    char err[1024] = "";
    if (!shift) {
        PyErr_NoMemory();
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = nsc_ot_job_shifts(pl.paths, pl.n, mode, max_unc, shift, err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_SetString(PyExc_ValueError, err);
        goto done;
    }
    if (!(out = PyList_New(pl.n)))
        goto done;
    for (int i = 0; i < pl.n; i++)
        PyList_SET_ITEM(out, i, PyLong_FromLongLong(shift[i]));
done:
    free(shift);
    path_list_free(&pl);
    return out;
}

/* hang([paths], jobs, json) -> (exit code, report text, messages text):
 * `ncclscope hang [--json]` on the files (reports/hang.c), the report and
 * the messages kept in memory instead of stdout and stderr. */
static PyObject *py_hang(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    int jobs = 1, json = 1;
    if (!PyArg_ParseTuple(args, "O|ii", &seq, &jobs, &json))
        return NULL;
    struct path_list pl;
    if (path_list_get(seq, "hang", &pl) != 0) {
        path_list_free(&pl);
        return NULL;
    }
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *err = open_memstream(&ebuf, &elen);
    PyObject *ret = NULL;
    if (!out || !err) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = nsc_hang(pl.paths, pl.n, json != 0, jobs, out, err);
    Py_END_ALLOW_THREADS
    /* A stream that could not grow has lost part of the report. */
    int lost = ferror(out) | ferror(err);
    lost |= fclose(out) != 0;
    lost |= fclose(err) != 0;
    out = err = NULL;
    if (lost) {
        PyErr_NoMemory();
        goto done;
    }
    /* Paths in messages need not be UTF-8: replaced, never an exception. */
    PyObject *ot = PyUnicode_DecodeUTF8(obuf ? obuf : "", (Py_ssize_t)olen, "replace");
    PyObject *et = PyUnicode_DecodeUTF8(ebuf ? ebuf : "", (Py_ssize_t)elen, "replace");
    if (ot && et)
        ret = Py_BuildValue("(iOO)", rc, ot, et);
    Py_XDECREF(ot);
    Py_XDECREF(et);
done:
    if (out)
        fclose(out);
    if (err)
        fclose(err);
    free(obuf);
    free(ebuf);
    path_list_free(&pl);
    return ret;
}

/* hang_pick([(proc, enqueue_ns, seq, func), ...]) -> index: the row of
 * the stuck collective a communicator's ranks hang at (hang_model.h's
 * nsc_hm_pick, the rule of `ncclscope hang`). */
static PyObject *py_hang_pick(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "O", &seq))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "hang_pick: a list of rows");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    struct nsc_hm_cand *c = calloc((size_t)n + 1, sizeof(*c));
    PyObject *ret = NULL;
    if (!c) {
        PyErr_NoMemory();
        goto done;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "hang_pick: no rows");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned long long proc, enq, sq;
        const char *func;
        /* func points into the row's str, which the list keeps alive */
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "KKKs", &proc, &enq, &sq, &func))
            goto done;
        c[i] = (struct nsc_hm_cand){proc, enq, sq, func};
    }
    ret = PyLong_FromSize_t(nsc_hm_pick(c, (size_t)n));
done:
    free(c);
    Py_DECREF(fast);
    return ret;
}

/* hang_order(nentries, [(entry, proc, enqueue_ns, rank), ...]) ->
 * [(entry, behind, [ranks]), ...] in the order shown: roots first; behind
 * -1 for a root, else the shown index of the root it waits behind, ranks
 * that root's ranks on the processes both hold (hang_model.h's
 * nsc_hm_order). */
static PyObject *py_hang_order(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t ne;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "nO", &ne, &seq))
        return NULL;
    if (ne < 0) {
        PyErr_SetString(PyExc_ValueError, "hang_order: nentries < 0");
        return NULL;
    }
    PyObject *fast = PySequence_Fast(seq, "hang_order: a list of rows");
    if (!fast)
        return NULL;
    Py_ssize_t ni = PySequence_Fast_GET_SIZE(fast);
    struct nsc_hm_inst *in = calloc((size_t)ni + 1, sizeof(*in));
    int *rank = calloc((size_t)ni + 1, sizeof(*rank));
    struct nsc_hm_cause *causes = calloc((size_t)ne + 1, sizeof(*causes));
    size_t *order = calloc((size_t)ne + 1, sizeof(*order));
    PyObject *ret = NULL;
    if (!in || !rank || !causes || !order) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ni; i++) {
        Py_ssize_t entry;
        unsigned long long proc, enq;
        int r;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "nKKi", &entry, &proc, &enq, &r))
            goto done;
        if (entry < 0 || entry >= ne) {
            PyErr_SetString(PyExc_ValueError, "hang_order: a row of no entry");
            goto done;
        }
        in[i] = (struct nsc_hm_inst){(size_t)entry, proc, enq};
        rank[i] = r;
    }
    if (nsc_hm_order((size_t)ne, in, rank, (size_t)ni, causes, order) != 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(ret = PyList_New(ne)))
        goto done;
    for (Py_ssize_t k = 0; k < ne; k++) {
        const struct nsc_hm_cause *c = &causes[order[k]];
        PyObject *rl = PyList_New(c->nranks);
        for (int q = 0; rl && q < c->nranks; q++)
            PyList_SET_ITEM(rl, q, PyLong_FromLong(c->ranks[q]));
        PyObject *t = rl ? Py_BuildValue("(nlN)", (Py_ssize_t)order[k], c->behind, rl) : NULL;
        if (!t || PyErr_Occurred()) {
            Py_XDECREF(t);
            Py_CLEAR(ret);
            goto done;
        }
        PyList_SET_ITEM(ret, k, t);
    }
done:
    for (Py_ssize_t k = 0; causes && k < ne; k++)
        free(causes[k].ranks);
    free(in);
    free(rank);
    free(causes);
    free(order);
    Py_DECREF(fast);
    return ret;
}

/* schema() -> {table: [(column, "i8"|"str"), ...]} in output order */
static PyObject *py_schema(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < NSC_OT_NTABLES; i++) {
        unsigned n;
        const struct nsc_ot_colspec *s = nsc_ot_schema((enum nsc_ot_table_id)i, &n);
        PyObject *l = PyList_New(n);
        for (unsigned c = 0; l && c < n; c++)
            PyList_SET_ITEM(l, c, Py_BuildValue("(ss)", s[c].name, s[c].type == NSC_OT_STR ? "str" : "i8"));
        if (!l || PyErr_Occurred() || PyDict_SetItemString(d, nsc_ot_table_names[i], l) != 0) {
            Py_XDECREF(l);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(l);
    }
    return d;
}

/* bus_factor(func, is_p2p, nranks) -> nccl-tests' bus factor, the rule of
 * nccl/op_rules.h (nsc_op_bus_factor) that stats, report and live metrics
 * apply: busbw = algbw x this. func None: an unnamed operation (1). */
static PyObject *py_bus_factor(PyObject *self, PyObject *args) {
    (void)self;
    const char *func;
    int is_p2p, nranks;
    if (!PyArg_ParseTuple(args, "zpi", &func, &is_p2p, &nranks))
        return NULL;
    return PyFloat_FromDouble(nsc_op_bus_factor(func, is_p2p, nranks));
}

static PyMethodDef methods[] = {
    {"read", py_read, METH_VARARGS, "read(path, file_index, shift_ns, want) -> tables as buffers"},
    {"job_shifts", py_job_shifts, METH_VARARGS,
     "job_shifts(paths, mode=0, max_uncertainty_ns=1e6) -> per-file clock shifts (ns)"},
    {"schema", py_schema, METH_NOARGS, "schema() -> {table: [(column, type)]}"},
    {"hang", py_hang, METH_VARARGS,
     "hang(paths, jobs=1, json=1) -> (exit code, `ncclscope hang [--json]` text, messages)"},
    {"hang_pick", py_hang_pick, METH_VARARGS,
     "hang_pick([(proc, enqueue_ns, seq, func)]) -> the row of the stuck collective a comm hangs at"},
    {"hang_order", py_hang_order, METH_VARARGS,
     "hang_order(nentries, [(entry, proc, enqueue_ns, rank)]) -> [(entry, behind, ranks)], roots first"},
    {"bus_factor", py_bus_factor, METH_VARARGS,
     "bus_factor(func, is_p2p, nranks) -> nccl-tests' bus factor (nccl/op_rules.h)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_analysis",
                                    "trace files as column buffers (converter/ops_table.h)", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__analysis(void);
PyMODINIT_FUNC PyInit__analysis(void) {
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    PyModule_AddIntConstant(m, "TABLE_OPS", NSC_OT_T_OPS);
    PyModule_AddIntConstant(m, "TABLE_KERNEL_CHANNELS", NSC_OT_T_KCH);
    PyModule_AddIntConstant(m, "TABLE_PROXY_STEPS", NSC_OT_T_STEPS);
    return m;
}
