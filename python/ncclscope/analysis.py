# SPDX-License-Identifier: Apache-2.0
"""Traces as DataFrames: a job's operations, kernel channels, proxy steps,
comms and losses, read in C (converter/ops_table.h through ncclscope._analysis:
column buffers straight into NumPy, no text in between), in pandas in this
process or as Dask DataFrames on a dask.distributed cluster (one file per
task, read on a worker). The analyses (stats, stragglers, hangs) are written
once against the API pandas and Dask share, so both give the same rows, and
those rows are the ones `ncclscope stats --json` prints (same numbers).

    from ncclscope import analysis as A
    ops = A.operations("trace/")                      # pandas
    A.stats(ops)                                      # = ncclscope stats --json
    from dask.distributed import Client
    ops = A.operations("trace/", client=Client("tcp://head:8786"))   # Dask
    A.stats(ops)

    python3 -m ncclscope.analysis stats trace/ [--scheduler tcp://HOST:PORT | --scheduler-file F] [--json]

docs/analysis.md has the schema and the scaling measurements.
"""
import argparse
import errno as _errno
import json
import os
import sys
import warnings

# What the module needs, said in one line (the command prints it and exits
# 3; an import raises ImportError with it) rather than as a traceback.
_NEEDS = {"numpy": "python3-numpy", "pandas": "python3-pandas"}
try:
    import numpy as np
    import pandas as pd
except ImportError as _e:
    _pkg = _e.name if _e.name in _NEEDS else "numpy and pandas"
    _what = ("ncclscope.analysis needs %s (%s): install %s (Debian: apt-get install %s)"
             % (_pkg, _e, "it" if _e.name in _NEEDS else "them",
                _NEEDS.get(_e.name) or " ".join(_NEEDS.values())))
    if __name__ == "__main__":
        sys.stderr.write(_what + "\n")
        sys.exit(3)
    raise ImportError(_what) from _e

try:
    from . import _analysis as _c
except ImportError as _e:
    _what = "ncclscope.analysis needs its C extension ncclscope._analysis, not built or not found (%s)" % _e
    if __name__ == "__main__":
        sys.stderr.write(_what + "\n")
        sys.exit(3)
    raise ImportError(_what) from _e

TABLES = ("ops", "kernel_channels", "proxy_steps", "comms", "drops", "errors")
_WANT = {"ops": 1, "kernel_channels": 2, "proxy_steps": 4}
TRACE_SUFFIX = ".nsc"


class TraceError(Exception):
    """Damage in a trace file: which file, at which byte offset (-1 when the
    reader could not say), and the reader's message."""

    def __init__(self, path, offset, message):
        super().__init__(message)
        self.path, self.offset, self.message = path, int(offset), message

    def __reduce__(self):  # crosses process boundaries (Dask) intact
        return (TraceError, (self.path, self.offset, self.message))

    def __str__(self):
        return self.message


class TraceDamageWarning(UserWarning):
    """Some files were damaged: their intact parts are in the tables."""


class NoTraceFilesError(ValueError):
    """No trace file among the paths given (`ncclscope` exits 1)."""


class AlignmentError(ValueError):
    """The files cannot be put on one timeline: an alignment less certain
    than max_uncertainty_us (`ncclscope` exits 2 and prints the same)."""


_ALIGN = ("auto", "realtime")
_ERRORS = ("warn", "raise", "ignore")


def _choice(what, value, allowed):
    """A keyword's value checked: a typo must not run something else."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError("%s=%r: one of %s" % (what, value, ", ".join(map(repr, allowed))))
    return value


def _tables(tables):
    """The table names checked (a str is one name): an unknown one gave a
    Job whose table was None, silently."""
    if isinstance(tables, str):
        tables = (tables,)
    tables = tuple(tables)
    bad = [t for t in tables if t not in TABLES]
    if bad:
        raise ValueError("tables: unknown %s; the tables are %s"
                         % (", ".join(map(repr, bad)), ", ".join(TABLES)))
    return tables


def schema():
    """{table: [(column, "i8" | "str"), ...]}: the columns every reader
    (this module, `ncclscope export`) gives, in order."""
    return _c.schema()


def trace_files(paths):
    """Files and directories -> the job's trace files (a directory's *.nsc,
    sorted, as the converter expands them)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            out += sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith(TRACE_SUFFIX))
        elif os.path.exists(p):
            out.append(p)
        else:
            raise FileNotFoundError(_errno.ENOENT, os.strerror(_errno.ENOENT), p)
    if not out:
        raise NoTraceFilesError("no trace files in %s" % ", ".join(map(str, paths)))
    return out


def job_shifts(files, align="auto", max_uncertainty_us=1000.0):
    """Per file, the ns to add to put it on the job's clock: the converter's
    alignment (converter/clock_align.h), same method, same numbers.
    align: "auto" or "realtime". AlignmentError (a ValueError) when the
    files cannot be aligned within max_uncertainty_us."""
    _choice("align", align, _ALIGN)
    try:
        return _c.job_shifts(list(files), 0 if align == "auto" else 1, float(max_uncertainty_us) * 1e3)
    except ValueError as e:
        # clock_align.c's refusal; its other message is "out of memory"
        if str(e).startswith("cannot align"):
            raise AlignmentError(str(e)) from None
        raise


def _frame(raw, name, strings):
    cols = {}
    for col, kind in _c.schema()[name]:
        buf, _ = raw["tables"][name][col]
        if kind == "str":
            cols[col] = strings[np.frombuffer(buf, dtype=np.uint32)]
        else:
            cols[col] = np.frombuffer(buf, dtype=np.int64)
    return pd.DataFrame(cols)


def read_file(path, file_index=0, shift_ns=0, tables=("ops",)):
    """One file's tables: {name: pandas.DataFrame} for `tables` plus comms,
    drops and errors (always). Damage does not raise: the intact part's rows
    are there and `errors` says where (raise_errors() turns it into
    TraceError)."""
    tables = _tables(tables)
    want = 0
    for t in tables:
        want |= _WANT.get(t, 0)
    raw = _c.read(os.fspath(path), int(file_index), int(shift_ns), want)
    strings = np.array(raw["strings"], dtype=object)
    names = set(tables) | {"comms", "drops", "errors"}
    return {t: _frame(raw, t, strings) for t in TABLES if t in names}


def _empty(name):
    return pd.DataFrame({c: pd.Series([], dtype=object if k == "str" else np.int64)
                         for c, k in _c.schema()[name]})


def raise_errors(errors):
    """Raises the first error of an errors table as TraceError."""
    if len(errors):
        e = errors.iloc[0]
        raise TraceError(e["file"], e["offset"], e["message"])


class Job:
    """A job's tables: pandas DataFrames, or Dask DataFrames (one partition
    per file) when read through a client. `errors` is always pandas: the
    damage found (file, offset, message), one row each."""

    def __init__(self, files, shifts, tables, frames, errors, client):
        self.files, self.shifts, self.client = files, shifts, client
        self.errors = errors
        for t in TABLES:
            setattr(self, t, frames.get(t))
        self.errors = errors
        self._futures = frames.get("_futures")


def _read_for_dask(paths, first_index, shifts, tables):
    """A task: a few files read one after the other, their tables concatenated."""
    parts = [read_file(p, first_index + k, shifts[k], tables) for k, p in enumerate(paths)]
    return {t: pd.concat([x[t] for x in parts], ignore_index=True) for t in parts[0]}


def _pick(tables, name):
    return tables[name]


def load(paths, client=None, tables=("ops",), errors="warn", align="auto",
         max_uncertainty_us=1000.0, files_per_task=None, shifts=None):
    """Reads a job. paths: files and directories. client: a
    dask.distributed Client (each file is read on a worker; the tables are
    Dask DataFrames with one partition per file) or None (pandas, here).
    The clock shifts are computed once, up front, here (job_shifts), unless
    given (shifts: ns per file, in trace_files(paths)' order).
    errors: "warn" (damage -> TraceDamageWarning, the intact rows kept),
    "raise" (TraceError naming the first damaged file and offset), "ignore".
    files_per_task: files one Dask task reads (one partition); default: about
    4 tasks per worker thread, so the per-task overhead (~10 ms of pandas per
    groupby step) stays small next to the work. An unknown table, errors or
    align value raises ValueError naming the allowed ones."""
    tables = _tables(tables)
    _choice("errors", errors, _ERRORS)
    _choice("align", align, _ALIGN)
    files = trace_files(paths)
    if shifts is None:
        shifts = job_shifts(files, align, max_uncertainty_us)
    elif len(shifts) != len(files):
        raise ValueError("shifts: %d values for %d files" % (len(shifts), len(files)))
    shifts = [int(x) for x in shifts]
    names = [t for t in TABLES if t in set(tables) | {"comms", "drops", "errors"}]
    if client is None:
        parts = [read_file(f, i, shifts[i], tables) for i, f in enumerate(files)]
        frames = {t: pd.concat([p[t] for p in parts], ignore_index=True) if parts else _empty(t)
                  for t in names}
        err = frames["errors"]
    else:
        import dask.dataframe as dd
        k = files_per_task
        if not k:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
            k = max(1, -(-len(files) // (4 * max(1, threads))))
        futs = [client.submit(_read_for_dask, files[i:i + k], i, shifts[i:i + k], tuple(tables), pure=False)
                for i in range(0, len(files), k)]
        err_parts = client.gather([client.submit(_pick, fu, "errors") for fu in futs])
        err = pd.concat(err_parts, ignore_index=True) if err_parts else _empty("errors")
        frames = {}
        for t in names:
            parts = [client.submit(_pick, fu, t) for fu in futs]
            frames[t] = dd.from_delayed(parts, meta=_empty(t), verify_meta=False)
        frames["errors"] = err
        frames["_futures"] = futs  # the files' tables stay on the workers while the Job lives
    if len(err):
        if errors == "raise":
            raise_errors(err)
        if errors == "warn":
            warnings.warn("%d damage report(s), the intact parts are used; first: %s"
                          % (len(err), err.iloc[0]["message"]), TraceDamageWarning, stacklevel=3)
    return Job(files, shifts, tables, frames, err, client)


def _table(name, paths, client, **kw):
    job = load(paths, client, tables=(name,), **kw)
    t = getattr(job, name)
    if client is None:
        t.attrs["errors"] = job.errors
    # stats() reads it: the number of files given, as `ncclscope stats`
    # counts them (a file without operations has no partition rows)
    t.attrs["files"] = len(job.files)
    return t


def operations(paths, client=None, **kw):
    """One row per (rank, comm, operation, seqNumber): the operations as
    `ncclscope stats` derives them (schema: docs/analysis.md). pandas:
    .attrs["errors"] holds the damage found."""
    return _table("ops", paths, client, **kw)


def kernel_channels(paths, client=None, **kw):
    """One row per KernelCh event (channel of an operation's kernel)."""
    return _table("kernel_channels", paths, client, **kw)


def proxy_steps(paths, client=None, **kw):
    """One row per ProxyStep event, with its ProxyOp's channel, peer, direction."""
    return _table("proxy_steps", paths, client, **kw)


def comms(paths, client=None, **kw):
    """One row per communicator of each file."""
    return _table("comms", paths, client, **kw)


def drops(paths, client=None, **kw):
    """One row per file: what the plugin lost (its STATS) and the damage found."""
    return _table("drops", paths, client, **kw)


# ---- analyses: the same code on pandas and Dask frames ----

def _compute(x):
    return x.compute() if hasattr(x, "compute") and not isinstance(x, (pd.DataFrame, pd.Series)) else x


def _is_dask(df):
    return not isinstance(df, pd.DataFrame)


def _hist_index(v):
    """common/latency_hist.h's lat_hist_index, vectorized (v >= 0)."""
    v = np.asarray(v, dtype=np.int64)
    out = v.copy()
    big = v >= 128
    if big.any():
        b = v[big]
        msb = np.frexp(b.astype(np.float64))[1].astype(np.int64) - 1
        # frexp on a value above 2^53 may round up across a power of two
        msb = np.where((np.int64(1) << msb) > b, msb - 1, msb)
        shift = msb - 6
        out[big] = 128 + (msb - 7) * 64 + (np.right_shift(b, shift) - 64)
    return out


def _bucket_upper(i):
    if i < 128:
        return i
    k = i - 128
    msb = k // 64 + 7
    return ((k % 64 + 64 + 1) << (msb - 6)) - 1


def _quantile(hist, count, vmax, q):
    """lat_hist_quantile: hist = [(index, n)] sorted by index."""
    if not count:
        return 0
    rank = int(q * float(count))
    if rank >= count:
        rank = count - 1
    seen = 0
    for i, n in hist:
        seen += n
        if seen > rank:
            v = _bucket_upper(int(i))
            return v if v < vmax else vmax
    return vmax


def _size_bucket(b):
    """stats_model.c's bucket_of: the smallest k with 2^k >= bytes (max 63)."""
    b = np.asarray(b, dtype=np.int64)
    out = np.zeros(len(b), dtype=np.int64)
    m = b > 1
    e = np.frexp((b[m] - 1).astype(np.float64))[1].astype(np.int64)
    out[m] = np.minimum(e, 63)
    return out


_KEYS = ["comm", "p2p", "op", "dtype", "bucket"]


def _stat_rows(part):
    """Per operation: the group key and the histogram indexes of its host,
    GPU and queue times (-1: none), and its host time again when it has a
    completion ("done": the bandwidth of host-only rows, as stats_model.c).
    Runs per partition."""
    host = part["host_ns"].to_numpy()
    done = np.where(part["enqueue_only"].to_numpy() == 0, host, -1)
    gpu = part["gpu_ns"].to_numpy()
    queue = part["queue_ns"].to_numpy()
    return pd.DataFrame({
        "comm": part["comm"].to_numpy(), "p2p": part["p2p"].to_numpy(),
        "op": part["op"].to_numpy(), "dtype": part["dtype"].to_numpy(),
        "bucket": _size_bucket(part["bytes"].to_numpy()),
        "nranks": part["nranks"].to_numpy(), "bytes": part["bytes"].to_numpy(),
        "enqueue_only": part["enqueue_only"].to_numpy(),
        "has_host": (host >= 0).astype(np.int64), "host_ns": host,
        "host_i": np.where(host >= 0, _hist_index(np.maximum(host, 0)), -1),
        "has_gpu": (gpu >= 0).astype(np.int64), "gpu_ns": gpu,
        "gpu_i": np.where(gpu >= 0, _hist_index(np.maximum(gpu, 0)), -1),
        "has_queue": (queue >= 0).astype(np.int64), "queue_ns": queue,
        "queue_i": np.where(queue >= 0, _hist_index(np.maximum(queue, 0)), -1),
        "has_done": (done >= 0).astype(np.int64), "done_ns": done,
        "done_i": np.where(done >= 0, _hist_index(np.maximum(done, 0)), -1),
        "seq": part["seq"].to_numpy(),
        # KernelCh sampled: asked for KernelCh, and of a KernelCh file but not asked
        "smp": (part["kernel_ch_recorded"].to_numpy() * part["sampled"].to_numpy()).astype(np.int64),
        "uns": (part["kernel_ch_recorded"].to_numpy() * (1 - part["sampled"].to_numpy())).astype(np.int64),
    }, index=part.index)


def _bus_factor(op, n):
    """nccl-tests' bus factor, as nccl/op_rules.h (nsc_op_bus_factor) gives it."""
    if n <= 0:
        return 1.0
    if op == "AllReduce":
        return 2.0 * (n - 1) / n
    if op in ("AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter"):
        return (n - 1) / n
    return 1.0


def _lost(drops):
    d = _compute(drops)
    d = d.sort_values("file_index", kind="stable") if len(d) else d
    s = lambda c: int(d[c].sum()) if len(d) else 0
    errno_v = 0
    for v in d["write_errno"] if len(d) else []:
        if v:
            errno_v = int(v)
    peak, budget = 0, 0
    for p, b in zip(d["memory_peak"], d["memory_budget"]) if len(d) else []:
        if p > peak:
            peak, budget = int(p), int(b)
    return {"records": s("records_lost"), "dropped": s("dropped"), "write_records": s("write_lost"),
            "exit_records": s("exit_lost"), "events_dropped": s("events_dropped"),
            "failed_writes": s("failed_writes"), "write_errno": errno_v,
            "write_error": _errno.errorcode.get(errno_v) if errno_v else None,
            "string_overflow": s("string_overflow"), "unnamed_events": s("unnamed_events"),
            "comm_overflow": s("comm_overflow"), "memory_peak_bytes": peak,
            "memory_budget_bytes": budget}


_METRICS = ("host", "gpu", "queue", "done")
# coll: one long row per collective (idx its seq), so partitions holding
# other ranks of it add to the same row: the count of distinct collectives.
# wait/xfer: the GPU time split at the collective's last GPU start (_split_rows).
_SUMS = ("n", "bytes", "eo", "smp", "uns", "host_n", "gpu_n", "queue_n", "done_n", "host_h", "gpu_h",
         "queue_h", "done_h", "coll", "split_n", "wait_h", "xfer_h")
_MAXES = ("nranks", "host_max", "gpu_max", "queue_max", "done_max", "wait_max", "xfer_max")
# stats_model.c's split_kind: the collectives whose data moves only once every rank arrived
_SPLIT = ("AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll")
# stats.c's clocks_json: which clock each time of stats --json is
_CLOCKS = {
    "gpu": "gpu_*_us: GPU time, KernelCh %globaltimer, first GPU start to last GPU end across channels",
    "wait": "wait_*_us: GPU start to the last rank's GPU start (GPU times mapped to the host clock "
            "and aligned across hosts)",
    "transfer": "transfer_*_us: the last rank's GPU start to this rank's GPU end",
    "queue": "queue_*_us: enqueue on the host to GPU start",
    "host": "p50_us, p99_us, max_us: enqueue to completion on the host (last KernelCh/ProxyOp stop), "
            "of the operations with a completion; null when none has one (enqueue only)",
    "stragglers": "lag_us: enqueue (host) of the last rank minus the first's",
    "gpu_stragglers": "wait_us: GPU starts, the last rank's minus the first's, summed",
}
_LONG = _KEYS + ["what", "idx", "v"]
_SAMPLED_NOTE = ("KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): GPU-time percentiles, wait, transfer and "
                 "bandwidths of a row come from its sampled rank-operations (gpu_ops of rank_ops)")


def _partial_rows(part):
    """A partition's share of the stats rows, long form (keys, what, idx,
    v): per group the counts, byte sums and maxima (idx -1), the four
    latency histograms (what host_h/gpu_h/queue_h/done_h, idx the bucket)
    and the collectives (what coll, idx the seqNumber). Sums
    and maxima combine across partitions (_combine_rows), so Dask reduces
    them as a tree and pandas runs the same two functions once."""
    sf = _stat_rows(part)
    g = sf.groupby(_KEYS)
    wide = pd.DataFrame({
        "n": g["bytes"].size(), "bytes": g["bytes"].sum(), "eo": g["enqueue_only"].sum(),
        "smp": g["smp"].sum(), "uns": g["uns"].sum(),
        "host_n": g["has_host"].sum(), "gpu_n": g["has_gpu"].sum(), "queue_n": g["has_queue"].sum(),
        "nranks": g["nranks"].max(), "host_max": g["host_ns"].max(), "gpu_max": g["gpu_ns"].max(),
        "queue_max": g["queue_ns"].max(), "done_n": g["has_done"].sum(),
        "done_max": g["done_ns"].max()})
    parts = []
    if len(wide):
        long = wide.reset_index().melt(id_vars=_KEYS, var_name="what", value_name="v")
        long["idx"] = -1
        parts.append(long)
    for m in _METRICS:
        sub = sf[sf["has_" + m] == 1]
        h = sub.groupby(_KEYS + [m + "_i"]).size()
        if len(h):
            h = h.rename("v").reset_index().rename(columns={m + "_i": "idx"})
            h["what"] = m + "_h"
            parts.append(h)
    c = sf[sf["p2p"] == 0].groupby(_KEYS + ["seq"]).size()
    if len(c):
        c = c.rename("v").reset_index().rename(columns={"seq": "idx"})
        c["what"] = "coll"
        parts.append(c)
    if not parts:
        return _empty_long()
    out = pd.concat(parts, ignore_index=True)[_LONG]
    return out.astype({"p2p": np.int64, "bucket": np.int64, "idx": np.int64, "v": np.int64})


def _empty_long():
    return pd.DataFrame({"comm": pd.Series([], dtype=object), "p2p": pd.Series([], dtype=np.int64),
                         "op": pd.Series([], dtype=object), "dtype": pd.Series([], dtype=object),
                         "bucket": pd.Series([], dtype=np.int64), "what": pd.Series([], dtype=object),
                         "idx": pd.Series([], dtype=np.int64), "v": pd.Series([], dtype=np.int64)})


def _combine_rows(p):
    if not len(p):
        return _empty_long()
    key = _KEYS + ["what", "idx"]
    s = p[p["what"].isin(_SUMS)].groupby(key)["v"].sum()
    m = p[p["what"].isin(_MAXES)].groupby(key)["v"].max()
    return pd.concat([s, m]).rename("v").reset_index()[_LONG]


def _split_rows(part, full):
    """A partition's wait and transfer histograms, long form as
    _partial_rows: each collective rank-operation with a mapped GPU start
    whose collective (full: comm, op, seq, gpu_last) every rank recorded one
    for; wait = GPU start to the last rank's, at most the GPU time, transfer
    the rest (stats_model.c split_samples)."""
    c = part[(part["p2p"] == 0) & part["op"].isin(_SPLIT) & (part["gpu_start_ns"] != 0)
             & (part["gpu_ns"] > 0)]
    m = c.merge(full, on=_CKEY, how="inner")
    if not len(m):
        return _empty_long()
    gs = m["gpu_start_ns"].to_numpy().astype(np.int64)
    gpu = m["gpu_end_ns"].to_numpy().astype(np.int64) - gs
    wait = np.minimum(np.maximum(m["gpu_last"].to_numpy().astype(np.int64) - gs, 0), gpu)
    sf = pd.DataFrame({"comm": m["comm"].to_numpy(), "p2p": m["p2p"].to_numpy(), "op": m["op"].to_numpy(),
                       "dtype": m["dtype"].to_numpy(), "bucket": _size_bucket(m["bytes"].to_numpy()),
                       "wait_ns": wait, "xfer_ns": gpu - wait,
                       "wait_i": _hist_index(wait), "xfer_i": _hist_index(gpu - wait)})
    g = sf.groupby(_KEYS)
    wide = pd.DataFrame({"split_n": g["wait_ns"].size(), "wait_max": g["wait_ns"].max(),
                         "xfer_max": g["xfer_ns"].max()})
    long = wide.reset_index().melt(id_vars=_KEYS, var_name="what", value_name="v")
    long["idx"] = -1
    parts = [long]
    for k in ("wait", "xfer"):
        h = sf.groupby(_KEYS + [k + "_i"]).size().rename("v").reset_index().rename(columns={k + "_i": "idx"})
        h["what"] = k + "_h"
        parts.append(h)
    out = pd.concat(parts, ignore_index=True)[_LONG]
    return out.astype({"p2p": np.int64, "bucket": np.int64, "idx": np.int64, "v": np.int64})


def _split_lazy(ops, e):
    full = e[(e["nranks"] >= 1) & (e["gpu_ranks"] == e["nranks"]) & (e["ranks"] == e["nranks"])]
    full = full[_CKEY + ["gpu_last"]]
    if not _is_dask(ops):
        return _combine_rows(_split_rows(ops, full))
    return ops.reduction(_split_rows, combine=_combine_rows, aggregate=_combine_rows,
                         chunk_kwargs={"full": full}, meta=_empty_long(), split_every=16)


def _rows_lazy(ops):
    if not _is_dask(ops):
        return _combine_rows(_partial_rows(ops))
    return ops.reduction(_partial_rows, combine=_combine_rows, aggregate=_combine_rows,
                         meta=_empty_long(), split_every=16)


def _rows(ops):
    return _rows_finish(*_compute_all(_rows_lazy(ops)))


def _compute_all(*objs):
    """Dask objects in one compute (shared parts of the graph run once)."""
    if any(_is_lazy(o) for o in objs):
        import dask
        return dask.compute(*objs)
    return objs


def _is_lazy(o):
    return hasattr(o, "dask") and not isinstance(o, (pd.DataFrame, pd.Series))


def _rows_finish(long):
    agg, hl = {}, {m: {} for m in _METRICS + ("wait", "xfer")}
    for r in long.sort_values(_KEYS + ["what", "idx"]).itertuples(index=False):
        k = (r.comm, int(r.p2p), r.op, r.dtype, int(r.bucket))
        if r.what.endswith("_h"):
            hl[r.what[:-2]].setdefault(k, []).append((int(r.idx), int(r.v)))
        elif r.what == "coll":
            c = agg.setdefault(k, {})
            c["colls"] = c.get("colls", 0) + 1
        else:
            agg.setdefault(k, {})[r.what] = int(r.v)
    rows = []
    for k in sorted(agg):
        a = agg[k]
        comm, p2p, op, dtype, bucket = k
        ops_n = a["n"]
        nranks = max(a["nranks"], 0)
        lat_n, gpu_n, q_n = a["host_n"], a["gpu_n"], a["queue_n"]
        lat_max = max(a["host_max"], 0) if lat_n else 0
        gpu_max = a["gpu_max"] if gpu_n else 0
        q_max = a["queue_max"] if q_n else 0
        gh, qh = hl["gpu"].get(k, []), hl["queue"].get(k, [])
        # host time: of the operations with a completion only (an enqueue is no latency)
        done_n = a["done_n"]
        dh, done_max = hl["done"].get(k, []), max(a["done_max"], 0)
        host_p50 = float(_quantile(dh, done_n, done_max, 0.5)) if done_n else -1.0
        host_p99 = float(_quantile(dh, done_n, done_max, 0.99)) if done_n else -1.0
        host_max = float(done_max) if done_n else -1.0
        split_n = a.get("split_n", 0)
        wq, xq = {}, {}
        for name, out in (("wait", wq), ("xfer", xq)):
            mx = a.get(name + "_max", 0)
            for q in (0.5, 0.99):
                out[q] = float(_quantile(hl[name].get(k, []), split_n, mx, q)) if split_n else -1.0
        gpu_p50 = float(_quantile(gh, gpu_n, gpu_max, 0.5)) if gpu_n else -1.0
        gpu_p99 = float(_quantile(gh, gpu_n, gpu_max, 0.99)) if gpu_n else -1.0
        gpu_mx = float(gpu_max) if gpu_n else -1.0
        q50 = float(_quantile(qh, q_n, q_max, 0.5)) if q_n else -1.0
        q99 = float(_quantile(qh, q_n, q_max, 0.99)) if q_n else -1.0
        host_only = gpu_n == 0
        none = host_only and not done_n
        avg = float(a["bytes"]) / ops_n if ops_n else 0.0
        bf = _bus_factor(op, nranks)
        # stats_model.c numbers(): bandwidth from the transfer time where every
        # rank-operation has one, else GPU time, else host time of the
        # operations with a completion; none has one: None (no data moves
        # between the enqueue and the Coll's stop)
        host_algbw = None if not done_n else avg / host_p50 if host_p50 > 0 else 0.0
        uns = a.get("uns", 0)
        # KernelCh sampled: the sampled rank-operations stand for the row
        if split_n and split_n == (gpu_n if uns else ops_n):
            t, bw_from = xq[0.5], "transfer"
        elif not host_only:
            t, bw_from = gpu_p50, "gpu"
        elif not none:
            t, bw_from = host_p50, "host"
        else:
            t, bw_from = -1.0, None
        algbw = None if t < 0 else avg / t if t > 0 else 0.0
        eo = a["eo"]
        rows.append({
            "comm": comm, "nranks": nranks, "op": op, "p2p": bool(p2p), "dtype": dtype,
            "size_max_bytes": 1 << bucket, "avg_bytes": avg,
            "count": ops_n if p2p else a.get("colls", 0),
            "rank_ops": ops_n, "enqueue_only": eo,
            "p50_us": host_p50 / 1e3 if done_n else None,
            "p99_us": host_p99 / 1e3 if done_n else None,
            "max_us": host_max / 1e3 if done_n else None,
            "algbw_GBps": algbw, "busbw_GBps": None if algbw is None else algbw * bf,
            "bw_from": bw_from,
            "timing": "enqueue-only" if none else "host-only" if host_only
                      else "gpu (sampled)" if uns else "gpu (partial)" if gpu_n < ops_n else "gpu",
            "gpu_ops": gpu_n, "sampled": a.get("smp", 0), "_uns": uns,
            "gpu_p50_us": gpu_p50 / 1e3 if gpu_n else None,
            "gpu_p99_us": gpu_p99 / 1e3 if gpu_n else None,
            "gpu_max_us": gpu_mx / 1e3 if gpu_n else None,
            "split_ops": split_n,
            "wait_p50_us": wq[0.5] / 1e3 if split_n else None,
            "wait_p99_us": wq[0.99] / 1e3 if split_n else None,
            "transfer_p50_us": xq[0.5] / 1e3 if split_n else None,
            "transfer_p99_us": xq[0.99] / 1e3 if split_n else None,
            "queue_p50_us": q50 / 1e3 if q_n else None,
            "queue_p99_us": q99 / 1e3 if q_n else None,
            "host_algbw_GBps": host_algbw,
            "host_busbw_GBps": None if host_algbw is None else host_algbw * bf,
        })
    return rows


_CKEY = ["comm", "op", "seq"]
_RANK_BITS = 1 << 24  # file_index * 2^24 + rank + 1: the earliest file wins ties (stats_model.c)


_I64MAX, _I64MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
_ENTRY = ["first_ns", "first_fr", "last_ns", "last_fr", "ranks", "gpu_ranks", "gpu_first",
          "gpu_last", "gpu_last_fr", "gpu_last_enq", "nranks"]


def _coll_rows(part):
    """Each collective operation as a one-rank entry (stats_model.c's struct entry)."""
    part = part[part["p2p"] == 0]
    gs = part["gpu_start_ns"].to_numpy()
    enq = part["enqueue_ns"].to_numpy()
    fr = part["file_index"].to_numpy() * _RANK_BITS + part["rank"].to_numpy() + 1
    has = gs != 0
    return pd.DataFrame({
        "comm": part["comm"].to_numpy(), "op": part["op"].to_numpy(), "seq": part["seq"].to_numpy(),
        "first_ns": enq, "first_fr": fr, "last_ns": enq, "last_fr": fr,
        "ranks": np.ones(len(part), dtype=np.int64), "gpu_ranks": has.astype(np.int64),
        "gpu_first": np.where(has, gs, _I64MAX), "gpu_last": np.where(has, gs, _I64MIN),
        "gpu_last_fr": np.where(has, fr, _I64MAX), "gpu_last_enq": enq,
        "nranks": part["nranks"].to_numpy(),
    })


def _merge_entries(e):
    """Entries of the same collective merged, as stats_model.c's on_op does one
    rank at a time: the earliest enqueue and its rank (ties: the earliest
    file), the latest enqueue and its rank (ties: the earliest file), the
    latest GPU start, its rank and its enqueue; counts summed. Associative,
    so Dask runs it as a tree reduction over the files (chunk, combine and
    aggregate are this function) and pandas runs it once."""
    if not len(e):
        return e
    g = e.sort_values(_CKEY + ["first_ns", "first_fr"], kind="stable").groupby(_CKEY, sort=False)
    out = g[["first_ns", "first_fr"]].first()
    out[["ranks", "gpu_ranks"]] = g[["ranks", "gpu_ranks"]].sum()
    out["gpu_first"] = g["gpu_first"].min()
    out["nranks"] = g["nranks"].max()
    x = e.assign(neg=-e["last_ns"]).sort_values(_CKEY + ["neg", "last_fr"], kind="stable")
    out[["last_ns", "last_fr"]] = x.groupby(_CKEY, sort=False)[["last_ns", "last_fr"]].first()
    y = e.assign(neg=-e["gpu_last"].clip(lower=_I64MIN + 1)).sort_values(
        _CKEY + ["neg", "gpu_last_fr"], kind="stable")
    out[["gpu_last", "gpu_last_fr", "gpu_last_enq"]] = y.groupby(_CKEY, sort=False)[
        ["gpu_last", "gpu_last_fr", "gpu_last_enq"]].first()
    return out.reset_index()[_CKEY + _ENTRY]


def _collectives_lazy(ops):
    meta = _coll_rows(_empty("ops"))
    if not _is_dask(ops):
        return _merge_entries(_coll_rows(ops))
    c = ops.map_partitions(_coll_rows, meta=meta)
    return c.reduction(_merge_entries, combine=_merge_entries, aggregate=_merge_entries,
                       meta=meta[_CKEY + _ENTRY], split_every=16)


def _collectives_finish(e):
    e = e.copy()
    for col in ("first", "last", "gpu_last"):
        fr = e[col + "_fr"].astype(np.int64)
        e[col + "_rank"] = np.where((fr > 0) & (fr != _I64MAX), fr % _RANK_BITS - 1, -1)
    return e


def _collectives(ops):
    """One row per collective (comm, op, seqNumber) over all ranks: first
    and last enqueue and by whom, first and last GPU start (mapped), the
    last GPU starter and its enqueue; ranks seen, ranks with a GPU start
    (stats_model.c's straggler entries)."""
    return _collectives_finish(*_compute_all(_collectives_lazy(ops)))


def stragglers(ops, top=20):
    """Stragglers by GPU start (who made whom wait), per (comm, rank): how
    often its kernel started last in a collective whose every rank had a
    GPU start, how long the first rank waited then (wait_us), and whether it
    was late on the host (enqueued late: its enqueue - the earliest enqueue
    >= half the lag) or on the GPU. Also, by enqueue, the `top` collectives
    whose last rank entered latest after the first. Returns (gpu, enqueue)
    as lists of dicts: stats --json's "gpu_stragglers" and "stragglers"."""
    e = _collectives(ops)
    return _late(e), _by_enqueue(e, top)


def _by_enqueue(e, top):
    s = e[e["ranks"] > 1].copy()
    s["lag"] = s["last_ns"] - s["first_ns"]
    s = s.sort_values(["lag", "comm", "seq", "op"], ascending=[False, True, True, True])
    return [{"comm": r.comm, "seq": int(r.seq), "op": r.op, "ranks": int(r.ranks),
             "last_rank": int(r.last_rank), "first_rank": int(r.first_rank),
             "lag_us": float(r.lag) / 1e3} for r in s.head(top).itertuples()]


def _late(e):
    full = e[(e["gpu_ranks"] >= 2) & (e["gpu_ranks"] == e["ranks"])].copy()
    if not len(full):
        return []
    full["lag"] = full["gpu_last"] - full["gpu_first"]
    full["host"] = np.maximum(full["gpu_last_enq"].astype(np.int64) - full["first_ns"], 0)
    full["host_late"] = (full["host"] * 2 >= full["lag"]).astype(np.int64)
    full["gpu_late"] = 1 - full["host_late"]
    colls = full.groupby("comm").size().rename("collectives")
    per = full.groupby(["comm", "gpu_last_rank"]).agg(
        last=("lag", "size"), wait=("lag", "sum"), host_late=("host_late", "sum"),
        gpu_late=("gpu_late", "sum")).reset_index().join(colls, on="comm")
    per = per.sort_values(["wait", "comm", "gpu_last_rank"], ascending=[False, True, True])
    return [{"comm": r.comm, "rank": int(r.gpu_last_rank), "collectives": int(r.collectives),
             "last": int(r.last), "wait_us": float(r.wait) / 1e3, "host_late": int(r.host_late),
             "gpu_late": int(r.gpu_late)} for r in per.itertuples()]


def stats(ops, drops=None, top=20, files=None):
    """The rows of `ncclscope stats --json` (a dict of the same shape and
    numbers, rounded as it prints them; null there is None) from an operations frame, pandas or Dask (one compute for
    everything). drops: the drops table for the "lost" block."""
    lazy = [_rows_lazy(ops), _collectives_lazy(ops)]
    if drops is not None:
        lazy.append(drops)
    got = list(_compute_all(*lazy))
    long = got[0]
    e = _collectives_finish(got[1])
    # the split needs every collective's last GPU start: a second pass
    split = _compute_all(_split_lazy(ops, got[1]))[0]
    rows = _rows_finish(_combine_rows(pd.concat([long, split], ignore_index=True)))
    out = {"files": files if files is not None else getattr(ops, "attrs", {}).get("files"),
           # every operation is in exactly one row
           "operations": int(long[long["what"] == "n"]["v"].sum()),
           # stats' --skip-first and --time, which stats() does not take
           "skipped_first": 0, "outside_window": 0}
    if drops is not None:
        out["lost"] = _lost(got[2])
    # KernelCh sampled (stats.c): said, and each row's sampled count, only then
    sampled, kernel = sum(r["sampled"] for r in rows), sum(r["sampled"] + r["_uns"] for r in rows)
    for r in rows:
        if not sampled < kernel:
            del r["sampled"]
        del r["_uns"]
    if sampled < kernel:
        out["kernel_sampled"] = {"sampled": sampled, "operations": kernel, "note": _SAMPLED_NOTE}
    out["clocks"] = dict(_CLOCKS)
    out.update({"rows": rows, "stragglers": _by_enqueue(e, top), "gpu_stragglers": _late(e)})
    return _as_printed(out)


def _as_printed(s):
    """The numbers as stats --json prints them (%.3f; avg_bytes %.0f), so
    that stats() == json.loads(`ncclscope stats --json`): a user comparing
    the two finds them equal, not 316066.09506726457 against 316066.095.
    round() and printf both round the exact binary value, halves to even."""
    def one(d):
        return {k: (round(v) if k == "avg_bytes" else round(v, 3)) if isinstance(v, float) else v
                for k, v in d.items()}
    for k in ("rows", "stragglers", "gpu_stragglers"):
        s[k] = [one(x) for x in s[k]]
    return s


def hang(paths, jobs=1):
    """`ncclscope hang --json` on a job's files, in this process: the same
    C code (converter/reports/hang.c), so HANG blocks (the watchdog's view
    in the process: flight dumps, traces where it fired) count as they do
    there. Returns that JSON's dict with two more keys: "exit", the
    command's exit code (0 no hang, 2 none found with damage, 4 a hang,
    5 a divergence), and "messages", what it prints on stderr (files cut
    short, damage). jobs: files read at once (0: the cores). Reads the files
    on the caller's machine; hangs() and divergences() are the same analyses
    on tables, for Dask, from the records alone."""
    rc, text, msgs = _c.hang(trace_files(paths), int(jobs), 1)
    out = json.loads(text)
    out["exit"], out["messages"] = rc, msgs
    return out


_HANG_MAX_RANKS = 1 << 20  # hang.c: a damaged count must not make us walk billions of ranks


def _hang_members(c):
    """The comms rows hang.c counts as members: comm id 0 left out, an
    nranks out of 1..2^20 (a damaged record) read as 0."""
    c = c[c["comm"] != "0" * 16].copy()
    c["nranks"] = c["nranks"].where((c["nranks"] > 0) & (c["nranks"] <= _HANG_MAX_RANKS), 0)
    return c


def _hang_span(nranks, traced):
    """The ranks hang.c walks: the comm's size, or where it is not recorded
    (API v1-v3, nranks 0) up to the highest traced rank."""
    return nranks if nranks > 0 else max((r + 1 for r in traced if 0 <= r < _HANG_MAX_RANKS), default=0)


_STUCK_COLS = ["comm", "op", "seq", "rank", "p2p", "stuck", "channels", "channels_done", "kernel_ch_recorded",
               "sampled", "completion_inferred", "maybe_stuck", "at_end",
               "file_index", "event_id", "row", "host", "pid", "enqueue_ns"]
_HM_RECENT_SEQS = 8  # hang_model.h: a rank's enqueue times kept per (comm, function), highest seqNumbers


class _Procs:
    """Process ids for the C rules (only equality counts): (host, pid)."""

    def __init__(self):
        self.ids = {}

    def __call__(self, x):
        return self.ids.setdefault((x.host, int(x.pid)), len(self.ids) + 1)


def _enq(x):
    return max(int(x.enqueue_ns), 0)


def _with_causes(entries, rows):
    """Entries reordered and marked as `ncclscope hang` does (hang_model.h,
    nsc_hm_order, in C): roots first, each with "cause" "root" or "behind"
    and "behind" naming its root (comm, name, op, seq, the root's ranks on
    the processes both hold). rows: (entry, proc, enqueue_ns, rank)."""
    shown = _c.hang_order(len(entries), rows)
    out = []
    for e, behind, ranks in shown:
        row = dict(entries[e])
        if behind < 0:
            row["cause"] = "root"
        else:
            r = entries[shown[behind][0]]
            row["cause"] = "behind"
            row["behind"] = {"comm": r["comm"], "name": r["name"], "op": r["op"], "seq": r["seq"],
                             "ranks": list(ranks)}
        out.append(row)
    return out


def _hang_done_max(o):
    """Per (comm, rank, function): the highest seqNumber the rank was seen
    to complete (every channel's KernelCh of a sampled collective stopped,
    or, not sampled, a later one of its comm completed)."""
    coll = o[(o["p2p"] == 0) & (o["maybe_stuck"] == 0)]
    proven = coll[(coll["stuck"] == 0) & (((coll["sampled"] == 1) & (coll["channels"] > 0) &
                                           (coll["channels_done"] >= coll["channels"])) |
                                          (coll["completion_inferred"] == 1))]
    return proven.groupby(["comm", "rank", "op"])["seq"].max().to_dict()


def _hang_stuck(o):
    """hang.c's stuck list (o: computed rows with _STUCK_COLS): in file
    order, one per (comm, rank, event id) as dedupe_stuck keeps them, less
    the collectives below a seqNumber the rank was seen to complete
    (drop_overtaken). With KernelCh sampled, the collectives that were not
    sampled and may be stuck (maybe_stuck) are in it too."""
    order = {}
    listed = (o["stuck"] == 1) | ((o["maybe_stuck"] == 1) & (o["p2p"] == 0))
    for x in o[listed].sort_values(["file_index", "row"], kind="stable").itertuples(index=False):
        order[(x.comm, x.rank, x.event_id)] = x
    done_max = _hang_done_max(o)
    kept = [x for x in order.values() if x.p2p != 0 or not x.seq < done_max.get((x.comm, x.rank, x.op), -1)]
    # one that may be stuck stays while a stuck one of its comm and rank does (drop_lone_maybe)
    held = set((x.comm, x.rank, x.host, x.pid) for x in kept if x.stuck == 1)
    return [x for x in kept if x.stuck == 1 or (x.comm, x.rank, x.host, x.pid) in held]


def hangs(ops, comms, kernel_channels=None):
    """Where a hung (killed) job's ranks diverge: the rows ("hangs") of
    `ncclscope hang --json` (converter/model/hang_model.c). Per communicator
    with a stuck operation (in flight when its file ended and never
    completed: the `stuck` column):
    - with a stuck collective, the one its stuck ranks enqueued first (NCCL
      counts seqNumbers per function: AllReduce 9 and AllGather 9 of one
      comm coexist, the second queued behind the first), chosen by the
      command's C rule (ncclscope._analysis.hang_pick): the ranks
      that never entered it (missing, with the last seqNumber they entered of
      that function, None for none), whether every traced rank is inside it,
      those stuck inside it (with their channels done and, given
      kernel_channels, the channels still open), those that completed it;
    - with only point-to-point operations stuck ("seq" None): the earliest
      one's function, the stuck operations, and per stuck Send or Recv whom
      it waits for ("waits") and whether that peer posted the matching
      operation; a traced peer with fewer matching operations toward the
      rank than the rank has toward it never posted it (missing);
    and the ranks that left no trace; "cause": "root", or "behind" with
    "behind" naming the root (comm, name, op, seq, its ranks on the
    processes both hold) that a process holding both enqueued first (the
    command's C rule, ncclscope._analysis.hang_order). Lists keep hang's
    order: roots first, then what waits behind them, each group as the
    stuck operations come in the files (file, then row), one per (comm, rank,
    event id) where several files of a process hold the same one (a later
    file's view replaces an earlier one's in place). Where nothing is stuck,
    divergences() gives hang's other answer. Not here: the ProxyOp details
    (peers, proxy_ops), and a file's HANG block (the watchdog's view in the
    process: flight dumps, traces where it fired), from which `ncclscope
    hang` and hang() also know of operations whose records a flight window
    lost. A collective left open below a seqNumber its rank completed (every
    channel's KernelCh stopped; same comm and function) completed too, as a
    comm's collectives run in order on one stream: it is not stuck (a lost
    child record), as in hang. The earliest point-to-point operation is taken on the job's
    aligned clock (load's align), hang's on each file's own: on several
    hosts they may name different functions."""
    cols = ["comm", "op", "seq", "rank", "p2p", "peer", "stuck", "stop_ns", "enqueue_ns", "channels",
            "channels_done", "kernel_ch_recorded", "sampled", "completion_inferred", "maybe_stuck",
            "at_end", "file_index", "event_id", "row", "host", "pid"]
    o, c = _compute_all(ops[cols], comms[["comm", "comm_name", "rank", "nranks", "file_index", "serial"]])
    c = _hang_members(c).sort_values(["file_index", "serial"], kind="stable")
    kc = None
    if kernel_channels is not None:
        kc = _compute_all(kernel_channels[["file_index", "op_id", "channel", "stop_ns"]])[0]
        kc = kc[kc["stop_ns"] == 0]
    coll = o[o["p2p"] == 0]
    seqs = coll.groupby(["comm", "rank", "op"])["seq"].agg(["min", "max"])
    pairs = o[o["p2p"] == 1].groupby(["comm", "rank", "op", "peer"]).size()
    stuck = _hang_stuck(o)
    done_max = _hang_done_max(o)
    unk = coll[(coll["at_end"] == 1) & (coll["kernel_ch_recorded"] == 1) & (coll["sampled"] == 0) &
               (coll["completion_inferred"] == 0)]
    unknown_min = unk.groupby(["comm", "rank", "op"])["seq"].min().to_dict()

    def maybe(x):
        return x.stuck == 0 and x.maybe_stuck == 1

    def stuck_row(x):
        row = {"rank": int(x.rank), "enqueued": bool(x.stop_ns)}
        if maybe(x):
            row.update({"sampled": False, "maybe_stuck": True})
        row.update({"nch": int(x.channels), "channels_done": int(x.channels_done)})
        if kc is not None:
            open_ch = kc[(kc["file_index"] == x.file_index) & (kc["op_id"] == x.event_id)]
            row["channels"] = sorted(int(v) for v in open_ch["channel"])
        return row

    out, rows, proc = [], [], _Procs()
    for comm in dict.fromkeys(x.comm for x in stuck):  # by their first stuck operation
        members = c[c["comm"] == comm]
        nranks = int(members["nranks"].max()) if len(members) else 0
        traced = set(int(r) for r in members["rank"])
        row = {"comm": "0x" + comm, "name": members["comm_name"].iloc[-1] if len(members) else "",
               "nranks": nranks}
        mine = [x for x in stuck if x.comm == comm]
        s = [x for x in mine if x.p2p == 0]
        if s:
            span = _hang_span(nranks, traced)
            facts = {}

            def holds(x):
                # hang_model.c's holds_others: no rank completed it (or a
                # later one of its function), some traced rank never entered it
                k = (x.op, int(x.seq))
                if k not in facts:
                    done = any(v >= x.seq for (cm, _, op), v in done_max.items() if cm == comm and op == x.op)
                    never = any(r != x.rank and r in traced and not (
                        (comm, r, x.op) in seqs.index and
                        seqs.loc[(comm, r, x.op), "min"] <= x.seq <= seqs.loc[(comm, r, x.op), "max"])
                        for r in range(span))
                    facts[k] = not done and never
                return facts[k]

            # KernelCh sampled: collectives not sampled that may be stuck count
            # where a rank never entered them; else the stuck sampled ones
            nmaybe = sum(1 for x in s if maybe(x))
            if any(maybe(x) and holds(x) for x in s):
                cands = [x for x in s if holds(x)]
            else:
                cands = [x for x in s if not maybe(x)]
            # the one its ranks enqueued first (hang_model.h, nsc_hm_pick, in C)
            target = cands[_c.hang_pick([(proc(x), _enq(x), int(x.seq), x.op) for x in cands])]
            inside = [x for x in s if x.seq == target.seq and x.op == target.op]
            rows += [(len(out), proc(x), _enq(x), int(x.rank)) for x in inside]
            inside_ranks = set(int(x.rank) for x in inside)
            missing, done, unknown = [], [], []
            for r in range(_hang_span(nranks, traced)):
                if r not in traced or r in inside_ranks:
                    continue
                k = (comm, r, target.op)
                if not (k in seqs.index and seqs.loc[k, "min"] <= target.seq <= seqs.loc[k, "max"]):
                    missing.append(r)
                elif unknown_min.get(k, target.seq + 1) <= target.seq:
                    unknown.append(r)  # entered it, not sampled: completion not known
                else:
                    done.append(r)
            last = [int(seqs.loc[(comm, r, target.op), "max"]) if (comm, r, target.op) in seqs.index
                    else None for r in missing]
            row.update({"op": target.op, "seq": int(target.seq), "missing_ranks": missing,
                        "missing_last_seq": last, "all_inside": not missing and not done and not unknown})
            if maybe(target):
                row.update({"inferred": True, "completion": "inferred from sampled completion"})
            if nmaybe:
                row["maybe_stuck_ops"] = nmaybe
            row.update({"stuck_ranks": [stuck_row(x) for x in inside], "completed_ranks": done})
            if unknown:
                row["unknown_ranks"] = unknown
        else:
            def count(rank, func, peer):
                return int(pairs.get((comm, rank, func, peer), 0))

            missing, waits = set(), []
            mine = [x for x in mine if not maybe(x)]  # a collective not sampled: no p2p fact
            for x in mine:
                r, func, peer = int(x.rank), x.op, int(x.peer)
                match = {"Send": "Recv", "Recv": "Send"}.get(func, func)
                posted = count(peer, match, r) >= count(r, func, peer)
                if peer in traced and not posted:
                    missing.add(peer)
                why = ("the peer left no trace" if peer not in traced else
                       "the peer posted the matching operation (both in flight)" if posted else
                       "the peer never posted the matching operation")
                waits.append({"rank": r, "op": func, "peer": peer, "waits_for": peer,
                              "peer_posted": posted, "why": why})
            first = min(mine, key=lambda x: x.enqueue_ns)
            rows += [(len(out), proc(x), _enq(x), int(x.rank)) for x in mine]
            row.update({"op": first.op, "seq": None, "missing_ranks": sorted(missing),
                        "stuck_ranks": [stuck_row(x) for x in mine], "waits": waits,
                        "completed_ranks": []})
        row["untraced_ranks"] = [r for r in range(nranks) if r not in traced]
        out.append(row)
    return _with_causes(out, rows)


def divergences(ops, comms):
    """The "divergences" of `ncclscope hang --json` (converter/model/hang_model.c,
    nsc_hm_divergences): where no operation is seen stuck but a file records
    no KernelCh (an intra-node collective then counts as completed once
    enqueued), per communicator and function the first seqNumber some traced
    ranks entered and others never did. Not reported when a rank that
    entered it recorded KernelCh (its completion would prove every rank took
    part), nor while anything is stuck (hangs() answers then). A rank with
    none of the function is behind only when the ranks that entered it hold
    it from seqNumber 0 (a whole history: a flight window or deleted
    segments may have lost the first ones). missing_last_seq is None for a
    rank with none of it. Each has "cause" and "behind" as hangs() (by when
    the ranks that entered it enqueued it), roots first, each group by
    communicator and function. As hangs(), from the records alone: with a HANG
    block in a file (the watchdog fired, or a flight dump), `ncclscope hang`
    and hang() also count the watchdog's operations in flight and each
    comm's last enqueued collective, and may answer otherwise."""
    o, c = _compute_all(ops[_STUCK_COLS], comms[["comm", "comm_name", "rank", "nranks"]])
    c = _hang_members(c)
    if _hang_stuck(o):  # hang.c: a stuck communicator is reported instead
        return []
    coll = o[o["p2p"] == 0]
    if not len(coll):
        return []
    per = coll.groupby(["comm", "op", "rank"]).agg(min=("seq", "min"), max=("seq", "max"),
                                                   rec=("kernel_ch_recorded", "min"))
    # KernelCh sampled: per (comm, op, rank) the lowest seqNumber in flight at
    # the end whose completion is not known (hang_model.h, unknown_min)
    unk = coll[(coll["at_end"] == 1) & (coll["kernel_ch_recorded"] == 1) & (coll["sampled"] == 0) &
               (coll["completion_inferred"] == 0)]
    unknown_min = unk.groupby(["comm", "op", "rank"])["seq"].min().to_dict()
    out, rows, proc = [], [], _Procs()
    first = coll.sort_values(["file_index", "row"], kind="stable")
    for (comm, func), g in per.groupby(level=[0, 1], sort=True):
        members = c[c["comm"] == comm].sort_values("rank", kind="stable")
        nranks = int(members["nranks"].max()) if len(members) else 0
        names = [n for n in members["comm_name"] if n]
        entries = {int(k[2]): v for k, v in g.iterrows()}
        ranks = []  # (rank, last, min, unrecorded); -1: none of the function
        traced = sorted(set(int(x) for x in members["rank"]))
        span = _hang_span(nranks, traced)
        for r in traced:
            if not 0 <= r < span:
                continue
            e = entries.get(r)
            ranks.append((r, int(e["max"]), int(e["min"]), int(e["rec"]) == 0) if e is not None
                         else (r, -1, -1, False))
        top = max((x[1] for x in ranks), default=-1)
        behind = [x[1] + 1 for x in ranks if 0 <= x[1] < top]
        point = min(behind) if behind else -1
        ahead = [x for x in ranks if x[1] >= 0 and x[1] >= (point if point >= 0 else top)]
        whole = all(x[2] == 0 for x in ahead)
        at = point if point >= 0 else top
        blind = all(x[3] or unknown_min.get((comm, func, x[0]), at + 1) <= at for x in ahead)
        if point < 0 and whole and top >= 0:
            point = 0  # only ranks with none of it are behind
        if point < 0 or not blind:
            continue
        entered = [x[0] for x in ranks if x[1] >= point]
        missing = [x for x in ranks if x[1] < point and (x[1] >= 0 or whole)]
        if not entered or not missing:
            continue
        # when each rank that entered it enqueued it (hang_model.c keeps the
        # times of a rank's highest seqNumbers only)
        mine = first[(first["comm"] == comm) & (first["op"] == func)]
        for r in entered:
            ops_r = mine[mine["rank"] == r]
            kept = sorted(set(int(v) for v in ops_r["seq"]))[-_HM_RECENT_SEQS:]
            at = ops_r[ops_r["seq"] == point]
            if point in kept and len(at):
                x = next(at.itertuples(index=False))
                rows.append((len(out), proc(x), _enq(x), r))
        out.append({"comm": "0x" + comm, "name": names[0] if names else "", "nranks": nranks,
                    "op": func, "seq": point, "entered_ranks": entered,
                    "missing_ranks": [x[0] for x in missing],
                    "missing_last_seq": [x[1] if x[1] >= 0 else None for x in missing]})
    return _with_causes(out, rows)


# ---- the command ----

def _fmt(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        return "%.3f" % v
    return str(v)


def _json_like_c(s):
    """stats --json's own layout (%.3f, avg_bytes %.0f): a text diff works too."""
    def obj(d):
        return "{" + ", ".join('"%s": %s' % (k, ("%.0f" % v) if k == "avg_bytes" else _fmt(v))
                               for k, v in d.items()) + "}"
    parts = ['"files": %s' % _fmt(s["files"]), '"operations": %d' % s["operations"],
             '"skipped_first": %d' % s["skipped_first"], '"outside_window": %d' % s["outside_window"]]
    if "lost" in s:
        parts.append('"lost": ' + obj(s["lost"]))
    if "kernel_sampled" in s:
        parts.append('"kernel_sampled": ' + obj(s["kernel_sampled"]))
    parts.append('"clocks": ' + obj(s["clocks"]))
    head = "{" + ", ".join(parts) + ", "
    body = []
    for k in ("rows", "stragglers", "gpu_stragglers"):
        body.append('"%s": [%s\n]' % (k, ",".join("\n  " + obj(r) for r in s[k])))
    return head + ", ".join(body) + "}\n"


def _refused(e):
    """Why nothing was read, on stderr, and the exit code ncclscope gives
    then (docs/analysis.md promises the same): 1 no trace file among the
    paths, 2 files that cannot be aligned, 3 a path that cannot be read."""
    if isinstance(e, OSError) and e.filename is not None:
        print("ncclscope.analysis: %s: %s" % (e.filename, e.strerror or e), file=sys.stderr)
    else:
        print("ncclscope.analysis: %s" % e, file=sys.stderr)
    from ncclscope import analysis as A  # run as __main__: the classes A's functions raise
    if isinstance(e, A.NoTraceFilesError):
        return 1
    if isinstance(e, A.AlignmentError):
        return 2
    return 3


FILE_MAGIC = b"NCCLSCP1"  # format/trace_format.h: the first 8 bytes of every trace


def _not_traces(files):
    """As ncclscope does before reading anything: each file that does not
    start with the file magic (empty, text, random bytes) named on stderr;
    returns 3 when there was one, else 0. A file that cannot be opened is
    the reader's to report, as there."""
    bad = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                head = fh.read(len(FILE_MAGIC))
        except OSError:
            continue
        if head != FILE_MAGIC:
            print("ncclscope.analysis: not an ncclscope trace: %s" % f, file=sys.stderr)
            bad = 3
    return bad


# A scheduler that is not there fails in this many seconds, not
# distributed's default 30 (its connect timeout).
SCHEDULER_TIMEOUT_S = 5


class _Parser(argparse.ArgumentParser):
    """Usage errors as ncclscope gives them: one line, exit 1 (argparse
    prints its usage and exits 2, which ncclscope uses for damage)."""

    def error(self, message):
        self.exit(1, "%s: %s (--help: the options)\n" % (self.prog, message))


def _number(kind, lo, hi, what):
    """An option value parsed whole and in range, as ncclscope's
    (cli_opts.h): "3x", "nan", "inf" and out-of-range values are refused."""
    def parse(v):
        import math
        try:
            x = kind(v)
        except ValueError:
            x = None
        if x is None or (isinstance(x, float) and not math.isfinite(x)) or not lo <= x <= hi:
            raise argparse.ArgumentTypeError("takes %s, not '%s'" % (what, v))
        return x
    return parse


def _client(a):
    """The dask.distributed Client of --scheduler / --scheduler-file, or
    None. Raises _Refusal (one line, its exit code) when dask is missing or
    the scheduler cannot be reached within SCHEDULER_TIMEOUT_S."""
    if not (a.scheduler or a.scheduler_file):
        return None
    try:
        from dask.distributed import Client
        import dask.dataframe  # noqa: F401  (the tables are Dask DataFrames)
    except ImportError as e:
        raise _Refusal(3, "--scheduler needs dask and distributed (%s): install them (Debian: "
                          "apt-get install python3-dask python3-distributed)" % e)
    where = a.scheduler or a.scheduler_file
    if a.scheduler_file:
        # distributed waits for the file without end (Slurm starts the
        # scheduler beside the job): as long as for a connection here
        import time
        t0 = time.monotonic()
        while not os.path.exists(a.scheduler_file):
            if time.monotonic() - t0 > SCHEDULER_TIMEOUT_S:
                raise _Refusal(3, "--scheduler-file %s: no such file after %d s (is dask-scheduler "
                                  "--scheduler-file running?)" % (a.scheduler_file, SCHEDULER_TIMEOUT_S))
            time.sleep(0.1)
    if a.scheduler:
        # checked before a Client is made: one that fails on its address
        # leaves dask's state such that a later Client in this process
        # computes wrong frames (a Series for a DataFrame)
        from distributed.comm.addressing import parse_address
        from distributed.comm.registry import get_backend
        try:
            get_backend(parse_address(a.scheduler)[0])
        except (ValueError, TypeError) as e:
            raise _Refusal(1, "--scheduler %s: not a scheduler address (tcp://HOST:PORT): %s" % (where, e))
    try:
        if a.scheduler:
            return Client(a.scheduler, timeout=SCHEDULER_TIMEOUT_S)
        return Client(scheduler_file=a.scheduler_file, timeout=SCHEDULER_TIMEOUT_S)
    except (ValueError, TypeError) as e:
        raise _Refusal(1, "--scheduler %s: not a scheduler address (tcp://HOST:PORT): %s" % (where, e))
    except (OSError, TimeoutError) as e:
        raise _Refusal(3, "cannot reach the Dask scheduler %s within %d s: %s"
                          % (where, SCHEDULER_TIMEOUT_S, str(e).splitlines()[0] if str(e) else type(e).__name__))


class _Refusal(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _parser():
    ap = _Parser(prog="python3 -m ncclscope.analysis",
                 description="analyses of ncclscope traces in pandas or on Dask")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    st = sub.add_parser("stats", help="the rows of `ncclscope stats --json`")
    st.add_argument("paths", nargs="+")
    st.add_argument("--scheduler", help="tcp://HOST:PORT of a dask.distributed scheduler")
    st.add_argument("--scheduler-file", help="the file dask-scheduler --scheduler-file wrote (Slurm)")
    st.add_argument("--json", action="store_true")
    st.add_argument("--top", type=_number(int, 0, 1000000, "a number of rows (0-1000000)"), default=20)
    st.add_argument("--align", choices=("auto", "realtime"), default="auto")
    st.add_argument("--max-uncertainty-us", type=_number(float, 1e-9, 1e12, "a number of microseconds > 0"),
                    default=1000.0)
    hg = sub.add_parser("hang", help="`ncclscope hang`: the same code, the same output and exit codes")
    hg.add_argument("paths", nargs="+")
    hg.add_argument("--json", action="store_true")
    hg.add_argument("-j", "--jobs", type=_number(int, 0, 1024, "a number of files at once (0-1024)"), default=0,
                    help="files read at once (0: the cores)")
    return ap


def main(argv=None):
    """`python3 -m ncclscope.analysis`: every error is one line on stderr
    (no traceback) and the exit codes are ncclscope's: 1 usage, 2 damaged
    input or files that cannot be aligned, 3 an input that cannot be read
    or is not a trace, a scheduler that cannot be reached, a missing
    package."""
    a = _parser().parse_args(argv)
    try:
        return _run(a)
    except _Refusal as e:
        print("ncclscope.analysis: %s" % e, file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # one line, not a traceback: what failed and why
        print("ncclscope.analysis %s: %s: %s" % (a.cmd, type(e).__name__, str(e).splitlines()[0] if str(e) else ""),
              file=sys.stderr)
        return 3


def _run(a):
    from ncclscope import analysis as A  # pickled by module name on the workers, not __main__
    try:
        files = A.trace_files(a.paths)
    except (ValueError, OSError) as e:
        return _refused(e)
    bad = _not_traces(files)
    if bad:
        return bad
    if a.cmd == "hang":
        try:
            rc, text, msgs = _c.hang(files, a.jobs, int(a.json))
        except (ValueError, OSError) as e:
            return _refused(e)
        sys.stderr.write(msgs)
        sys.stdout.write(text)
        return rc
    client = _client(a)
    try:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", A.TraceDamageWarning)
                job = A.load(a.paths, client, tables=("ops",), align=a.align,
                             max_uncertainty_us=a.max_uncertainty_us)
        except (ValueError, OSError) as e:
            return _refused(e)
        for e in job.errors["message"]:
            print("ncclscope.analysis: %s" % e, file=sys.stderr)
        s = A.stats(job.ops, job.drops, a.top, files=len(job.files))
        if a.json:
            sys.stdout.write(_json_like_c(s))
        else:
            _print_stats(s, a.top)
        return 2 if len(job.errors) else 0
    finally:
        if client is not None:
            client.close()


def _print_stats(s, top):
    print("%d file(s), %d rank-operations" % (s["files"], s["operations"]))
    print("%-16s %5s %-14s %-12s %10s %8s %-13s %10s %10s %9s" % (
        "comm", "ranks", "op", "dtype", "size<=", "rank-ops", "timing", "p50 us", "p99 us", "busbw"))
    for r in s["rows"]:
        host = r["timing"] in ("host-only", "enqueue-only")
        p50 = r["p50_us"] if host else r["gpu_p50_us"]
        p99 = r["p99_us"] if host else r["gpu_p99_us"]
        p50, p99 = ["-" if v is None else "%.2f" % v for v in (p50, p99)]
        bw = "-" if r["busbw_GBps"] is None else "%.2f" % r["busbw_GBps"]
        print("%-16s %5d %-14s %-12s %10d %8d %-13s %10s %10s %9s" % (
            r["comm"], r["nranks"], r["op"], r["dtype"], r["size_max_bytes"], r["rank_ops"],
            r["timing"], p50, p99, bw))
    for r in s["gpu_stragglers"][:top]:
        print("straggler: comm %s rank %d last in %d of %d collectives, made others wait %.2f us"
              % (r["comm"], r["rank"], r["last"], r["collectives"], r["wait_us"]))


if __name__ == "__main__":
    sys.exit(main())
