# SPDX-License-Identifier: Apache-2.0
"""ncclscope.analysis on a real Dask cluster and in pandas, against the C tools.

A dask-scheduler and two dask-worker processes are started on 127.0.0.1
(ports the OS picks, stopped at the end, also on failure). On the 4-process
trace in tests/data: operations() through the cluster equals operations() in
pandas row for row; stats() in both and `python3 -m ncclscope.analysis stats
--json` (pandas and --scheduler) give the numbers `ncclscope stats --json`
prints; kernel channels and proxy steps point at their operations. Damage:
a file cut short and a non-trace among good files yield the good files' rows
and errors naming file and offset (TraceError with errors="raise", on the
cluster too, whose workers survive). `ncclscope export` writes the same
operations as CSV, and the SQL of docs/analysis.md (run on sqlite3, which
reads the same CSV) gives stats' busbw and stragglers.

Needs pandas, numpy, dask.distributed (Debian: python3-pandas python3-dask
python3-distributed): without them a visible skip (exit 77)."""
import json
import os
import shutil
import signal
import sqlite3
import csv
import subprocess
import sys
import tempfile
import time

SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


try:
    import numpy as np  # noqa: F401
    import pandas as pd
    import dask.dataframe  # noqa: F401
    from dask.distributed import Client
except ImportError as e:
    print("SKIP: ncclscope.analysis tests need pandas, numpy and dask.distributed (%s): "
          "apt-get install python3-pandas python3-dask python3-distributed" % e)
    sys.exit(SKIP)

sys.path.insert(0, os.environ["NSC_BUILD_PY"])
try:
    from ncclscope import analysis as A
except ImportError as e:
    print("SKIP: ncclscope._analysis not built for %s (%s)" % (sys.executable, e))
    sys.exit(SKIP)

CLI = os.environ["NSC_CLI"]
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
JOB = os.path.join(DATA, "h200x4_procs")


def run(cmd, ok=(0,), env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode not in ok:
        fail("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-3000:]))
    return p


def c_stats(paths, ok=(0,)):
    return json.loads(run([CLI, "stats", "--json", *paths], ok=ok).stdout)


def same_numbers(a, b, where):
    """JSON values equal; floats within the 3 decimals stats prints."""
    if isinstance(a, dict):
        check(isinstance(b, dict) and set(a) == set(b), "%s: keys %s vs %s" % (where, sorted(a), sorted(b) if isinstance(b, dict) else b))
        for k in a:
            same_numbers(a[k], b[k], where + "." + k)
    elif isinstance(a, list):
        check(isinstance(b, list) and len(a) == len(b), "%s: %d vs %s rows" % (where, len(a), len(b) if isinstance(b, list) else b))
        for i, (x, y) in enumerate(zip(a, b)):
            same_numbers(x, y, "%s[%d]" % (where, i))
    elif isinstance(a, float) or isinstance(b, float):
        check(a is not None and b is not None and abs(float(a) - float(b)) <= 0.0015 * max(1.0, abs(float(a)) * 1e-9),
              "%s: %r vs %r" % (where, a, b))
    else:
        check(a == b, "%s: %r vs %r" % (where, a, b))


def compare_stats(py, c, where):
    """stats() and stats --json: every row and straggler; the enqueue
    straggler list is compared as sorted by (lag, comm, seq, op): C's qsort
    leaves ties in any order."""
    py = json.loads(json.dumps(py))
    key = lambda r: (-round(r["lag_us"], 3), r["comm"], r["seq"], r["op"])
    for d in (py, c):
        d["stragglers"] = sorted(d["stragglers"], key=key)
    same_numbers(c, py, where)


class Cluster:
    """dask-scheduler + 2 dask-worker processes on 127.0.0.1, own process groups."""

    def __init__(self, tmp):
        self.procs = []
        self.tmp = tmp
        env = dict(os.environ)
        env["PYTHONPATH"] = os.environ["NSC_BUILD_PY"] + os.pathsep + env.get("PYTHONPATH", "")
        env["DASK_DISTRIBUTED__WORKER__DAEMON"] = "False"
        self.env = env

    def _cmd(self, name, module):
        exe = shutil.which(name)
        # the console script runs the Python that has distributed; else this one's module
        return [exe] if exe else [sys.executable, "-m", module]

    def start(self):
        sfile = os.path.join(self.tmp, "scheduler.json")
        self._spawn(self._cmd("dask-scheduler", "distributed.cli.dask_scheduler") +
                    ["--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", sfile], "scheduler")
        t0 = time.time()
        while not os.path.exists(sfile) or not os.path.getsize(sfile):
            check(time.time() - t0 < 60, "dask-scheduler did not start: %s" % self._log("scheduler"))
            check(self.procs[0].poll() is None, "dask-scheduler exited: %s" % self._log("scheduler"))
            time.sleep(0.2)
        time.sleep(0.2)
        self.address = json.load(open(sfile))["address"]
        check(self.address.startswith("tcp://127.0.0.1:"), self.address)
        for i in range(2):
            self._spawn(self._cmd("dask-worker", "distributed.cli.dask_worker") +
                        [self.address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                         "--local-directory", os.path.join(self.tmp, "w%d" % i)], "worker%d" % i)
        return self.address

    def _spawn(self, cmd, name):
        log = open(os.path.join(self.tmp, name + ".log"), "w")
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def _log(self, name):
        try:
            return open(os.path.join(self.tmp, name + ".log")).read()[-2000:]
        except OSError:
            return ""

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def sorted_ops(df):
    return df.sort_values(["file_index", "row"]).reset_index(drop=True)


def damaged_job(tmp, name):
    """The 4 files, one cut short in its middle, and a file that is no trace."""
    job = os.path.join(tmp, name)
    os.makedirs(job)
    files = sorted(os.listdir(JOB))
    for f in files:
        shutil.copy(os.path.join(JOB, f), job)
    victim = os.path.join(job, files[1])
    blob = open(victim, "rb").read()
    open(victim, "wb").write(blob[: len(blob) // 2])
    open(os.path.join(job, "zz-not-a-trace.nsc"), "wb").write(b"garbage" * 100)
    return job, victim


def test_pandas(tmp):
    ops = A.operations(JOB)
    check(len(ops) == 1408 and ops.attrs["files"] == 4 and len(ops.attrs["errors"]) == 0,
          "4-process trace: %d rows, %r" % (len(ops), ops.attrs))
    check(sorted(ops["rank"].unique()) == [0, 1, 2, 3], "ranks %s" % ops["rank"].unique())
    check((ops["gpu_ns"] > 0).all() and (ops["queue_ns"] >= 0).all(), "every op has GPU and queue time")
    early = ops["gpu_start_ns"] <= ops["enqueue_ns"]
    check((ops[early]["queue_ns"] == 0).all() and
          (ops[~early]["queue_ns"] == ops[~early]["gpu_start_ns"] - ops[~early]["enqueue_ns"]).all(),
          "queue time: enqueue to mapped GPU start, 0 when mapped earlier")
    # one row per (rank, comm, op, seqNumber) for collectives (p2p have no seqNumber)
    coll = ops[ops["p2p"] == 0]
    check(not coll.duplicated(["rank", "comm", "op", "seq"]).any(), "duplicate (rank, comm, op, seq)")
    shifts = A.job_shifts(A.trace_files(JOB))
    check(A.load(JOB, shifts=shifts).ops.equals(ops), "load(shifts=job_shifts()) = load()")
    job = A.load(JOB, tables=("ops", "kernel_channels", "proxy_steps"))
    kc = job.kernel_channels
    check(len(kc) > 0 and kc.merge(job.ops, left_on=["file_index", "op_id"],
                                   right_on=["file_index", "event_id"]).shape[0] == len(kc),
          "every kernel channel belongs to an operation of its file")
    per_op = kc.groupby(["file_index", "op_id"]).size()
    first = job.ops.set_index(["file_index", "event_id"])["channels"]
    check((per_op == first.reindex(per_op.index)).all(), "kernel channels per op = its nChannels")
    net = A.load(os.path.join(DATA, "h200x2_net_1MiB.nsc"), tables=("ops", "proxy_steps"))
    ps = net.proxy_steps
    check(len(ps) > 0 and (ps["op_id"].isin(net.ops["event_id"])).all() and (ps["stop_ns"] >= ps["start_ns"]).all(),
          "proxy steps belong to operations and stop after they start")
    check(len(job.comms) == 4 and (job.comms["nranks"] == 4).all(), "comms: %s" % job.comms)
    check(len(job.drops) == 4 and (job.drops["ended"] == 1).all(), "drops: %s" % job.drops)
    # stats() = ncclscope stats --json, in-process and through the command
    compare_stats(A.stats(ops, job.drops, files=4), c_stats([JOB]), "pandas stats")
    text = run([sys.executable, "-m", "ncclscope.analysis", "stats", "--json", JOB],
               env=dict(os.environ, PYTHONPATH=os.environ["NSC_BUILD_PY"])).stdout
    check(text == run([CLI, "stats", "--json", JOB]).stdout,
          "python3 -m ncclscope.analysis stats --json prints what ncclscope stats --json prints")
    # torch_ddp_2rank: enqueue only (no bandwidth: None, as stats' null);
    # one of 4 files: count = its distinct collectives, as stats'
    for f in ("h200x2_mixed_64KiB.nsc", "h200x2_net_1MiB.nsc", "torch_ddp_2rank.nsc",
              os.path.join("h200x4_procs", "vm-2367.nsc")):
        p = os.path.join(DATA, f)
        j = A.load(p)
        s, c = A.stats(j.ops, j.drops, files=1), c_stats([p])
        if f.startswith("torch"):
            check(all(r["busbw_GBps"] is None and r["host_algbw_GBps"] is None for r in s["rows"]),
                  "enqueue-only rows: no bandwidth: %s" % s["rows"])
        compare_stats(s, c, f)
        # rounded as stats --json prints them: equal, not within a tolerance
        # (the DDP file's average sizes are not whole: 70482739.2 printed 70482739)
        key = lambda r: (-r["lag_us"], r["comm"], r["seq"], r["op"])
        check(dict(s, stragglers=sorted(s["stragglers"], key=key)) ==
              dict(c, stragglers=sorted(c["stragglers"], key=key)), "%s: stats() == stats --json" % f)
        if f.endswith("vm-2367.nsc"):
            check([r["count"] for r in s["rows"] if r["op"] == "AllGather"] == [22, 22, 12],
                  "one file of 4: AllGathers counted: %s" % s["rows"])
    print("ok: pandas: 1408 operations, kernel channels and proxy steps joined to them, stats = ncclscope stats --json")
    return ops


def test_damage(tmp, client=None):
    where = "dask" if client else "pandas"
    job, victim = damaged_job(tmp, "damaged-" + where)
    try:
        A.operations(job, client=client, errors="raise")
        fail("%s: errors=raise on a damaged job did not raise" % where)
    except A.TraceError as e:
        check(e.path in (victim, os.path.join(job, "zz-not-a-trace.nsc")) and e.offset >= 0 and
              e.path in str(e) and "offset" in str(e), "%s: TraceError %r %r %r" % (where, e.path, e.offset, str(e)))
    j = A.load(job, client=client, errors="ignore")
    err = j.errors
    check(len(err) >= 2 and set(err["file"]) == {victim, os.path.join(job, "zz-not-a-trace.nsc")} and
          (err["offset"] >= 0).all(), "%s: errors name file and offset: %s" % (where, err))
    ops = j.ops.compute() if client else j.ops
    good = A.operations(JOB)
    names = sorted(os.listdir(JOB))
    for i, n in enumerate(names):
        if os.path.join(job, n) == victim:
            continue
        mine = ops[ops["file"] == os.path.join(job, n)].drop(columns=["file", "file_index"]).reset_index(drop=True)
        want = good[good["file_index"] == i].drop(columns=["file", "file_index"]).reset_index(drop=True)
        check(mine.equals(want), "%s: the good file %s lost rows in a damaged job" % (where, n))
    cut = ops[ops["file"] == victim]
    # its one record block was cut: what is before the cut (the session) and nothing of it
    check(len(cut) < 352, "%s: the cut file: %d rows" % (where, len(cut)))
    drops = j.drops.compute() if client else j.drops
    # ncclscope skips a directory's file that is not a trace (a note naming
    # it) and reads the rest: its numbers are those of the rest of this job
    junk = os.path.join(job, "zz-not-a-trace.nsc")
    r = run([CLI, "stats", "--json", job], ok=(2,))
    check(junk + ": skipped: not an ncclscope trace" in r.stderr, r.stderr)
    c = c_stats([f for f in j.files if f != junk], ok=(2,))
    compare_stats(A.stats(ops[ops["file"] != junk], drops[drops["file"] != junk], files=len(j.files) - 1), c,
                  where + " damaged stats")
    print("ok: %s: damage -> TraceError(file, offset); the good files' rows kept; stats as C's" % where)


def test_export(tmp, ops):
    out = os.path.join(tmp, "export")
    r = run([CLI, "export", JOB, "-o", out])
    check("1408 operations" in r.stderr, r.stderr)
    parts = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(out, "ops")) for f in fs)
    check([os.path.relpath(p, out) for p in parts] == ["ops/vm/rank-%d.csv" % i for i in range(4)], parts)
    types = {c: (str if k == "str" else "int64") for c, k in A.schema()["ops"]}
    csvd = pd.concat([pd.read_csv(p, dtype=types, keep_default_na=False) for p in parts], ignore_index=True)
    a = sorted_ops(csvd)
    b = sorted_ops(ops)
    b["file"] = b["file"].astype(str)
    check(list(a.columns) == list(b.columns), "CSV header = the schema")
    for col in a.columns:
        check((a[col].astype(str).values == b[col].astype(str).values).all(), "CSV column %s differs" % col)
    # the SQL of docs/analysis.md, on sqlite3 (standard SQL over the same CSV)
    db = sqlite3.connect(":memory:")
    cols = A.schema()["ops"]
    db.execute("CREATE TABLE ops (%s)" % ", ".join("%s %s" % (c, "TEXT" if k == "str" else "INTEGER") for c, k in cols))
    for p in parts:
        with open(p) as f:
            rd = csv.reader(f)
            next(rd)
            db.executemany("INSERT INTO ops VALUES (%s)" % ",".join("?" * len(cols)),
                           [[v if k == "str" else int(v) for v, (c, k) in zip(row, cols)] for row in rd])
    c = c_stats([JOB])
    stragglers = db.execute(SQL_STRAGGLERS).fetchall()
    want = {(g["comm"], g["rank"]): g for g in c["gpu_stragglers"]}
    check(len(stragglers) == len(want), "SQL stragglers: %d rows, stats %d" % (len(stragglers), len(want)))
    for comm, rank, last, wait_us in stragglers:
        g = want[(comm, rank)]
        check(g["last"] == last and abs(g["wait_us"] - wait_us) < 0.001, "SQL straggler %s %d" % (comm, rank))
    rows = {(r["comm"], r["op"], r["dtype"], r["size_max_bytes"]): r for r in c["rows"] if not r["p2p"]}
    busbw = db.execute(SQL_BUSBW).fetchall()
    check(len(busbw) == len(rows), "SQL per-size rows %d vs stats %d" % (len(busbw), len(rows)))
    for comm, op, dtype, size, n, nranks, avg, p50, bw in busbw:
        r = rows[(comm, op, dtype, size)]
        # stats' p50 is its histogram bucket's upper edge: within 1.6 % of the sample
        check(r["rank_ops"] == n and r["gpu_ops"] == n and abs(r["busbw_GBps"] - bw) <= 0.02 * bw + 0.001,
              "SQL busbw %s %s %d: %s vs stats %s" % (op, dtype, size, bw, r["busbw_GBps"]))
    print("ok: export: one CSV per rank, the operations' rows; the documented SQL gives stats' stragglers")


# The queries of docs/analysis.md (kept equal by hand: the doc says so).
SQL_STRAGGLERS = """
WITH coll AS (
  SELECT comm, op, seq, COUNT(*) AS ranks,
         SUM(CASE WHEN gpu_start_ns > 0 THEN 1 ELSE 0 END) AS gpu_ranks,
         MIN(NULLIF(gpu_start_ns, 0)) AS gpu_first, MAX(gpu_start_ns) AS gpu_last
  FROM ops WHERE p2p = 0 GROUP BY comm, op, seq),
last AS (
  SELECT c.comm, c.op, c.seq, MIN(o.file_index) AS file_index, c.gpu_last - c.gpu_first AS lag
  FROM coll c JOIN ops o ON o.comm = c.comm AND o.op = c.op AND o.seq = c.seq
                        AND o.gpu_start_ns = c.gpu_last
  WHERE c.gpu_ranks >= 2 AND c.gpu_ranks = c.ranks
  GROUP BY c.comm, c.op, c.seq)
SELECT l.comm, o.rank, COUNT(*) AS last, SUM(l.lag) / 1e3 AS wait_us
FROM last l JOIN ops o ON o.comm = l.comm AND o.op = l.op AND o.seq = l.seq
                      AND o.file_index = l.file_index
GROUP BY l.comm, o.rank ORDER BY wait_us DESC
"""

SQL_BUSBW = """
WITH coll AS (
  SELECT comm, op, seq, COUNT(*) AS ranks, MAX(nranks) AS nranks,
         SUM(CASE WHEN gpu_start_ns > 0 THEN 1 ELSE 0 END) AS gpu_ranks, MAX(gpu_start_ns) AS gpu_last
  FROM ops WHERE p2p = 0 GROUP BY comm, op, seq),
w AS (
  SELECT o.comm, o.op, o.dtype, o.nranks, o.bytes, o.gpu_ns,
         CASE WHEN o.op IN ('AllReduce', 'AllGather', 'ReduceScatter', 'AlltoAll')
                   AND c.gpu_ranks = c.nranks AND c.ranks = c.nranks AND o.gpu_start_ns > 0
              THEN CASE WHEN c.gpu_last <= o.gpu_start_ns THEN 0
                        WHEN c.gpu_last - o.gpu_start_ns >= o.gpu_ns THEN o.gpu_ns
                        ELSE c.gpu_last - o.gpu_start_ns END END AS wait_ns
  FROM ops o JOIN coll c ON o.comm = c.comm AND o.op = c.op AND o.seq = c.seq
  WHERE o.p2p = 0 AND o.gpu_ns > 0),
s AS (
  SELECT comm, op, dtype, nranks, bytes, COALESCE(gpu_ns - wait_ns, gpu_ns) AS t_ns,
         CASE WHEN bytes <= 1 THEN 1 ELSE CAST(POWER(2, CEIL(LOG2(bytes))) AS BIGINT) END AS size_max
  FROM w),
r AS (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY comm, op, dtype, size_max ORDER BY t_ns) AS k,
         COUNT(*) OVER (PARTITION BY comm, op, dtype, size_max) AS n
  FROM s)
SELECT comm, op, dtype, size_max, n AS rank_ops, MAX(nranks) AS nranks,
       AVG(bytes) AS avg_bytes, MAX(CASE WHEN k = FLOOR(n * 0.5) + 1 THEN t_ns END) AS p50_ns,
       AVG(bytes) / MAX(CASE WHEN k = FLOOR(n * 0.5) + 1 THEN t_ns END)
         * CASE WHEN op = 'AllReduce' THEN 2.0 * (MAX(nranks) - 1) / MAX(nranks)
                WHEN op IN ('AllGather', 'ReduceScatter') THEN (MAX(nranks) - 1) * 1.0 / MAX(nranks)
                ELSE 1.0 END AS busbw_GBps
FROM r GROUP BY comm, op, dtype, size_max, n ORDER BY comm, op, dtype, size_max
"""


def hung_job(tmp, events="Coll,P2p,KernelCh,ProxyOp,ProxyStep", last_ops=10, name="hung", mode="coll",
             first=0, env_more=None, hang_files=0, lose=-1, extra=()):
    """tests/cli/hang_rank.c's killed 4-rank job (test_hang.py): AllReduce
    seqNumber 9 that rank 3 never enters (it runs last_ops - 1), ranks 0-2
    stuck inside it (with KernelCh recorded; without it they count as having
    completed it). mode "p2p": 2 ranks, rank 0's 10th Send never received
    (rank 1 posts 9 Recvs). first: coll's seqNumbers start there (a
    history that lost its first ones). lose: that seqNumber records no stop
    of its channel 0's KernelCh (a lost child record). extra: more
    hang_rank arguments. hang_files: wait also until that
    many files hold a HANG block (env_more: NCCLSCOPE_HANG_SECONDS)."""
    driver, plugin = os.environ.get("NSC_HANG_RANK"), os.environ.get("NSC_PLUGIN")
    if not driver or not plugin:
        return None
    d = os.path.join(tmp, name)
    os.makedirs(d)
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", **(env_more or {}))
    env.pop("NCCLSCOPE_EVENTS", None)
    if events is not None:  # None: the plugin's default mask
        env["NCCLSCOPE_EVENTS"] = events
    nranks = 2 if mode == "p2p" else 4
    procs = [subprocess.Popen([driver, "--plugin", plugin, "--rank", str(r), "--nranks", str(nranks), "--ops",
                               str(10 if r < nranks - 1 else last_ops), "--mode", mode, "--first", str(first),
                               "--lose", str(lose), *extra], env=env,
                              stdout=subprocess.PIPE, text=True)
             for r in range(nranks)]
    # job (hang_rank.c): 3 collectives a step on ranks 0-1, 2 on rank 3, rank 2 one step short
    want_ops = 19 if mode == "p2p" else 98 if mode == "job" else 29 + last_ops
    try:
        for p in procs:
            check(p.stdout.readline().strip() == "hung", "a rank did not reach its hang")
        deadline = time.time() + 20
        while time.time() < deadline:  # every operation in the files (test_hang.py)
            time.sleep(0.2)
            p = subprocess.run([CLI, "hang", d, "--json"], capture_output=True, text=True)
            try:
                doc = json.loads(p.stdout)
                if doc["operations"] == want_ops and doc.get("watchdog", {}).get("files", 0) >= hang_files:
                    break
            except ValueError:
                pass
    finally:
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
    return d


SHOWN = ("rank", "enqueued", "nch", "channels_done", "channels")


def same_hangs(py, c, what):
    """hangs() against hang --json's "hangs": every key hangs() gives, and
    the stuck ranks' fields it shows, in the command's order."""
    check(len(py) == len(c), "%s: %d stuck communicators vs %d" % (what, len(py), len(c)))
    for p, h in zip(py, c):
        for k, v in p.items():
            want = [{f: s[f] for f in SHOWN + ("sampled", "maybe_stuck") if f in s} for s in h[k]] \
                if k == "stuck_ranks" else h[k]
            check(v == want, "%s: hangs()[%s] %r vs hang --json %r" % (what, k, v, want))


def test_hangs(tmp):
    d = hung_job(tmp)
    if d is None:
        print("SKIP (part): hangs(): no NSC_HANG_RANK/NSC_PLUGIN")
        return
    cli = run([CLI, "hang", d, "--json"], ok=(4,))
    c = json.loads(cli.stdout)["hangs"]
    # hang(): the command's own answer, in this process
    h = A.hang(d)
    check(h.pop("exit") == 4 and h.pop("messages") == cli.stderr and h == json.loads(cli.stdout),
          "hang() is not what ncclscope hang --json says")
    # python3 -m ncclscope.analysis hang: the command's output and exit code
    for fmt in ([], ["--json"]):
        mine = subprocess.run([sys.executable, "-m", "ncclscope.analysis", "hang", d, *fmt], capture_output=True,
                              text=True, env=dict(os.environ, PYTHONPATH=os.environ["NSC_BUILD_PY"]))
        theirs = run([CLI, "hang", d, *fmt], ok=(4,))
        check((mine.returncode, mine.stdout, mine.stderr) == (4, theirs.stdout, theirs.stderr),
              "python3 -m ncclscope.analysis hang %s: exit %d\n%s%s" % (fmt, mine.returncode, mine.stdout,
                                                                         mine.stderr))
    try:  # one path where a list is due: refused, not read letter by letter
        A._c.hang(d)
        fail("_analysis.hang took a str for a list of paths")
    except TypeError:
        pass
    j = A.load(d, tables=("ops", "kernel_channels"), errors="ignore")
    py = A.hangs(j.ops, j.comms, j.kernel_channels)
    check(len(py) == 1 and set(py[0]) == {"comm", "name", "nranks", "op", "seq", "missing_ranks",
                                          "missing_last_seq", "all_inside", "stuck_ranks",
                                          "completed_ranks", "untraced_ranks", "cause"}, py)
    same_hangs(py, c, "coll")
    check(py[0]["missing_last_seq"] == [8] and py[0]["all_inside"] is False and
          [s["rank"] for s in py[0]["stuck_ranks"]] == [0, 1, 2], py[0])
    # the files twice (a process's dumps a moment apart hold the same
    # operations): one entry per operation, as hang's dedupe keeps them
    dup = os.path.join(tmp, "hung-twice")
    os.makedirs(dup)
    for f in sorted(os.listdir(d)):
        shutil.copy(os.path.join(d, f), os.path.join(dup, f))
        shutil.copy(os.path.join(d, f), os.path.join(dup, "z-" + f))
    c2 = json.loads(run([CLI, "hang", dup, "--json"], ok=(4,)).stdout)["hangs"]
    j2 = A.load(dup, tables=("ops", "kernel_channels"), errors="ignore")
    py2 = A.hangs(j2.ops, j2.comms, j2.kernel_channels)
    same_hangs(py2, c2, "coll, files twice")
    check([s["rank"] for s in py2[0]["stuck_ranks"]] == [0, 1, 2], py2)
    # AllReduce 3 left open in every rank's records (one KernelCh stop
    # lost) below the completed 4..8: not stuck, as hang's drop_overtaken
    dl = hung_job(tmp, name="lost", lose=3)
    cl = json.loads(run([CLI, "hang", dl, "--json"], ok=(4,)).stdout)
    jl = A.load(dl, tables=("ops", "kernel_channels"), errors="ignore")
    pyl = A.hangs(jl.ops, jl.comms, jl.kernel_channels)
    same_hangs(pyl, cl["hangs"], "coll, a lost KernelCh stop")
    check(cl["overtaken"] == 4 and len(pyl) == 1 and pyl[0]["seq"] == 9 and pyl[0]["missing_ranks"] == [3],
          pyl)
    check(int(jl.ops["stuck"].sum()) == 7, "the ops table keeps the records' view: 3 stuck at 9, 4 at 3")
    # API v3 (NCCL 2.26): no comm size, a Coll's nMaxChannels (4 said, 2
    # run): the ranks are those traced, completion is what is still open
    d3 = hung_job(tmp, name="v3", extra=("--version", "3", "--nch", "4"))
    c3 = json.loads(run([CLI, "hang", d3, "--json"], ok=(4,)).stdout)
    j3 = A.load(d3, tables=("ops", "kernel_channels"), errors="ignore")
    py3 = A.hangs(j3.ops, j3.comms, j3.kernel_channels)
    same_hangs(py3, c3["hangs"], "API v3")
    check(len(py3) == 1 and py3[0]["seq"] == 9 and py3[0]["missing_ranks"] == [3] and py3[0]["nranks"] == 0 and
          py3[0]["untraced_ranks"] == [], py3)
    # point-to-point: rank 0's last Send waits for a Recv rank 1 never posted
    d = hung_job(tmp, name="p2p", mode="p2p")
    c = json.loads(run([CLI, "hang", d, "--json"], ok=(4,)).stdout)["hangs"]
    jp = A.load(d, tables=("ops", "kernel_channels"), errors="ignore")
    py = A.hangs(jp.ops, jp.comms, jp.kernel_channels)
    check(len(py) == 1 and "waits" in py[0], py)
    same_hangs(py, c, "p2p")
    check(py[0]["seq"] is None and py[0]["missing_ranks"] == [1] and len(py[0]["waits"]) == 1 and
          py[0]["waits"][0]["waits_for"] == 1 and py[0]["waits"][0]["peer_posted"] is False, py[0])
    check(A.hangs(A.operations(JOB), A.comms(JOB)) == [], "complete traces: no hang")
    check(A.divergences(j.ops, j.comms) == [], "something stuck: hangs() answers, no divergences")
    print("ok: hangs() = ncclscope hang --json on killed jobs (missing rank 3 at AllReduce 9; a Send never received)")
    # The same jobs recorded without KernelCh (the default mask on NVLink):
    # nothing is seen stuck, hang names divergences (exit 5); rank 3 one
    # short, rank 3 with no AllReduce at all (a whole history: behind from
    # seqNumber 0), and the same where the others hold AllReduce from 5 only
    # (rank 3 may have had what they lost: not behind, no divergence)
    for last_ops, first, want in ((10, 0, [(9, [0, 1, 2], [3], [8])]), (1, 0, [(0, [0, 1, 2], [3], [None])]),
                                  (1, 5, [])):
        d = hung_job(tmp, events="Coll,P2p", last_ops=last_ops, name="diverged%d.%d" % (last_ops, first),
                     first=first)
        c = json.loads(run([CLI, "hang", d, "--json"], ok=(5,) if want else (0,)).stdout)
        h = A.hang(d, jobs=2)
        rc = h.pop("exit")
        h.pop("messages")
        check(rc == (5 if want else 0) and h == c, "hang(): %s (exit %s) vs %s" % (h, rc, c))
        j = A.load(d, tables=("ops",), errors="ignore")
        check(A.hangs(j.ops, j.comms) == [] and c["hangs"] == [], "nothing seen stuck: %s" % c)
        if want and last_ops == 10:
            # beside it, a comm whose only stuck collective is overtaken
            # (the lost job without its real hang at 9): not stuck for hang,
            # so the divergence is still reported
            lj = A.load(dl, tables=("ops",), errors="ignore")
            lo, lc = lj.ops[lj.ops["seq"] != 9].copy(), lj.comms.copy()
            lo["comm"], lc["comm"] = "e" * 16, "e" * 16
            both = A.divergences(pd.concat([j.ops, lo]), pd.concat([j.comms, lc]))
            check(both == c["divergences"], "an overtaken collective hid the divergence: %s" % both)
        py = A.divergences(j.ops, j.comms)
        check(py == c["divergences"], "divergences(): %s vs hang --json %s" % (py, c["divergences"]))
        check([(v["seq"], v["entered_ranks"], v["missing_ranks"], v["missing_last_seq"]) for v in py] == want,
              "divergences(): %s" % py)
        if want:
            # hang's member rules: the same rows under comm id 0 (skipped)
            # add nothing; under a comm whose nranks is past 2^20 (damage:
            # size unknown, as API v1-v3 leave it) the traced ranks count
            ops2, comms2 = [j.ops], [j.comms]
            for cid, nr in (("0" * 16, None), ("f" * 16, (1 << 20) + 1)):
                o2, c2 = j.ops.copy(), j.comms.copy()
                o2["comm"], c2["comm"] = cid, cid
                if nr:
                    c2["nranks"] = nr
                ops2.append(o2)
                comms2.append(c2)
            check(A.divergences(pd.concat(ops2), pd.concat(comms2)) ==
                  py + [dict(v, comm="0x" + "f" * 16, nranks=0) for v in py], "member rules")
    check(A.divergences(A.operations(JOB), A.comms(JOB)) == [], "complete traces (KernelCh): none")
    # The watchdog fired (HANG blocks in ranks 0-2's files): hang() reads
    # them as the command does, the watchdog's view of each stuck rank
    d = hung_job(tmp, name="watched", env_more={"NCCLSCOPE_HANG_SECONDS": "1"}, hang_files=3)
    cli = run([CLI, "hang", d, "--json"], ok=(4,))
    h = A.hang(d)
    check(h.pop("exit") == 4 and h.pop("messages") == cli.stderr and h == json.loads(cli.stdout), "hang(): %s" % h)
    check(h["watchdog"]["files"] == 3 and h["hangs"][0]["missing_ranks"] == [3] and
          [s["rank"] for s in h["hangs"][0]["stuck_ranks"]] == [0, 1, 2], h)
    print("ok: divergences() = ncclscope hang --json's on killed jobs recorded without KernelCh; "
          "hang() = the command, HANG blocks included")


def test_hangs_sampled(tmp):
    """KernelCh sampled (format 4): a killed job where rank 2 never entered
    AllReduce 1, which was not sampled on the others, while a later sampled
    AllReduce 2 is stuck; a 2-rank comm's stuck Broadcast waits behind it.
    hangs() names AllReduce 1 inferred, as hang --json; the ops table says
    which operations were sampled."""
    exe = os.environ.get("NSC_SAMPLED_JOB")
    if not exe:
        print("SKIP (part): hangs() with KernelCh sampled: no NSC_SAMPLED_JOB")
        return
    d = os.path.join(tmp, "sampled-job")
    os.makedirs(d)
    run([exe, d])
    c = json.loads(run([CLI, "hang", d, "--json"], ok=(4,)).stdout)
    j = A.load(d, tables=("ops", "kernel_channels"), errors="ignore")
    py = A.hangs(j.ops, j.comms, j.kernel_channels)
    same_hangs(py, c["hangs"], "KernelCh sampled")
    check(len(py) == 2 and py[0]["op"] == "AllReduce" and py[0]["seq"] == 1 and py[0]["missing_ranks"] == [2] and
          py[0].get("inferred") is True and py[0]["cause"] == "root" and py[1]["op"] == "Broadcast" and
          py[1]["cause"] == "behind" and py[1]["behind"]["seq"] == 1, py)
    o = j.ops
    check(int(o["sampled"].sum()) == c["kernel_sampled"]["sampled"] and len(o) == c["kernel_sampled"]["operations"],
          "sampled column vs hang --json: %s" % c["kernel_sampled"])
    check(((o["sampled"] == 1) | (o["gpu_ns"] < 0)).all(), "GPU time on an operation not sampled")
    check(int(o["maybe_stuck"].sum()) > 0 and int(o[o["maybe_stuck"] == 1]["stuck"].sum()) == 0, "maybe_stuck")
    # stats(): stats --json's numbers, the sample said (kernel_sampled, each row's sampled count)
    cs = c_stats([d])
    compare_stats(A.stats(o, j.drops, files=4), cs, "stats, KernelCh sampled")
    check(cs["kernel_sampled"]["sampled"] == c["kernel_sampled"]["sampled"] and
          all("sampled" in r for r in cs["rows"]) and
          any(r["timing"] == "gpu (sampled)" for r in cs["rows"]), cs["rows"])
    print("ok: hangs() = ncclscope hang --json with KernelCh sampled (AllReduce 1 inferred, missing rank 2)")


def test_cluster(tmp, ops):
    cl = Cluster(tmp)
    client = None
    try:
        addr = cl.start()
        client = Client(addr, timeout=60)
        client.wait_for_workers(2, timeout=60)
        check(len(client.scheduler_info()["workers"]) == 2, "two workers")
        dk = A.operations(JOB, client=client)
        check(dk.npartitions == 4, "one partition per file: %d" % dk.npartitions)
        got = sorted_ops(dk.compute())
        check(got.equals(sorted_ops(ops)), "Dask operations differ from pandas'")
        # the files were read on the workers
        who = client.run(lambda: __import__("sys").modules.get("ncclscope._analysis") is not None)
        check(all(who.values()) and len(who) == 2, "the workers read the files: %s" % who)
        drops = A.drops(JOB, client=client)
        s_dask = A.stats(dk, drops)
        check(s_dask["files"] == 4, "Dask stats() counts the files as ncclscope stats does: %s" % s_dask["files"])
        c = c_stats([JOB])
        compare_stats(s_dask, c, "dask stats")
        compare_stats(A.stats(ops, A.drops(JOB), files=4), json.loads(json.dumps(s_dask)), "pandas vs dask")
        gd, _ = A.stragglers(dk)
        gp, _ = A.stragglers(ops)
        check(gd == gp and len(gp) > 0, "stragglers: dask %s pandas %s" % (gd, gp))
        text = run([sys.executable, "-m", "ncclscope.analysis", "stats", "--json", JOB, "--scheduler", addr],
                   env=dict(os.environ, PYTHONPATH=os.environ["NSC_BUILD_PY"])).stdout
        check(text == run([CLI, "stats", "--json", JOB]).stdout,
              "python3 -m ncclscope.analysis stats --scheduler: not what ncclscope stats --json prints")
        print("ok: dask cluster (scheduler + 2 workers on %s): operations and stats = pandas = ncclscope stats --json" % addr)
        test_damage(tmp, client)
        check(len(client.scheduler_info()["workers"]) == 2, "a worker died on damaged input")
    finally:
        if client is not None:
            client.close()
        cl.stop()


def test_refusals(tmp):
    """load() refuses unknown tables, errors and align values (a typo gave
    a Job whose table was None, or ran with the default) naming the allowed
    ones; `python3 -m ncclscope.analysis` exits as ncclscope does (1 no
    trace file, 2 files that cannot be aligned, 3 a missing path: it gave 3
    for all, and a missing path without the reason) and says why."""
    ddp = os.path.join(DATA, "torch_ddp_2rank.nsc")
    for kw, words in ((dict(tables=("ops", "bogus")), ("'bogus'", "kernel_channels", "proxy_steps")),
                      (dict(errors="bogus"), ("'warn'", "'raise'", "'ignore'")),
                      (dict(align="bogus"), ("'auto'", "'realtime'"))):
        try:
            A.load(ddp, **kw)
            fail("load(%s) did not raise" % kw)
        except ValueError as e:
            check(all(w in str(e) for w in words), "load(%s): %s" % (kw, e))
    check(A.load(ddp, tables="ops").ops is not None, "tables='ops' is the one table")
    # two hosts whose clocks disagree beyond an impossible limit (test_merge_stats)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
    from test_merge_stats import rewrite_host
    hosts = os.path.join(tmp, "hosts")
    os.makedirs(hosts)
    for i, f in enumerate(A.trace_files(JOB)):
        dst = os.path.join(hosts, os.path.basename(f))
        rewrite_host(f, dst, "hostB") if i >= 2 else shutil.copy(f, dst)
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    missing = os.path.join(tmp, "nonexistent")
    env = dict(os.environ, PYTHONPATH=os.environ["NSC_BUILD_PY"])
    for cmd, args, code, why in (
            ("stats", [empty], 1, "no trace files"),
            ("hang", [empty], 1, "no trace files"),
            ("stats", [missing], 3, missing + ": No such file or directory"),
            ("hang", [missing], 3, missing + ": No such file or directory"),
            ("stats", [hosts, "--max-uncertainty-us", "0.0001"], 2, "cannot align host hostB")):
        c = run([CLI, cmd, *args], ok=(code,))
        py = run([sys.executable, "-m", "ncclscope.analysis", cmd, *args], ok=(code,), env=env)
        check(why in py.stderr and why in c.stderr.replace("no .nsc files", "no trace files"),
              "%s %s: exit %d; python says %r, ncclscope %r" % (cmd, args, code, py.stderr, c.stderr))
    print("ok: load() refuses unknown tables/errors/align; python3 -m ncclscope.analysis exits as ncclscope (1, 2, 3) and says why")


def test_hangs_job(tmp):
    """hang_rank.c's job mode (test_hang.py, test_job): rank 2 skips
    AllReduce 9 of the 4-rank comm; ranks 0, 1, 3 enqueue it and then
    AllGather 9, ranks 0-1 Broadcast 109 of a 2-rank comm, queued behind it.
    hangs() as hang --json: AllReduce 9 the root (not AllGather 9, the lower
    name), the Broadcast behind it; divergences() (the default mask on one
    NVLink node) in enqueue order, AllGather 9 behind AllReduce 9."""
    if not os.environ.get("NSC_HANG_RANK"):
        print("SKIP (part): hangs() of a job: no NSC_HANG_RANK")
        return
    root = {"comm": "0x0000004a4e470003", "name": "hang-job", "op": "AllReduce", "seq": 9}
    d = hung_job(tmp, name="job", mode="job")
    c = json.loads(run([CLI, "hang", d, "--json"], ok=(4,)).stdout)["hangs"]
    j = A.load(d, tables=("ops", "kernel_channels"), errors="ignore")
    py = A.hangs(j.ops, j.comms, j.kernel_channels)
    same_hangs(py, c, "job")
    check([(h["op"], h["seq"], h["cause"]) for h in py] == [("AllReduce", 9, "root"), ("Broadcast", 109, "behind")],
          "hangs(): %s" % py)
    check(py[0]["missing_ranks"] == [2] and [s["rank"] for s in py[0]["stuck_ranks"]] == [0, 1, 3] and
          py[1]["behind"] == dict(root, ranks=[0, 1]), py)
    d = hung_job(tmp, events="lean", name="job-intra", mode="job", extra=("--intra",))
    c = json.loads(run([CLI, "hang", d, "--json"], ok=(5,)).stdout)
    j = A.load(d, tables=("ops",), errors="ignore")
    check(A.hangs(j.ops, j.comms) == [] == c["hangs"], c)
    py = A.divergences(j.ops, j.comms)
    check(py == c["divergences"], "divergences(): %s vs hang --json %s" % (py, c["divergences"]))
    check([(v["op"], v["seq"], v["entered_ranks"], v["missing_ranks"], v["cause"]) for v in py] ==
          [("AllReduce", 9, [0, 1, 3], [2], "root"), ("AllGather", 9, [0, 1, 3], [2], "behind")] and
          py[1]["behind"] == dict(root, ranks=[0, 1, 3]), "divergences(): %s" % py)
    print("ok: hangs()/divergences() of a job: AllReduce 9 the root, what was queued behind it marked so")
    # at default settings on one NVLink node: KernelCh on a sample (test_hang.py, test_job_sampled)
    for k, env in enumerate(({}, {"NCCLSCOPE_KERNEL_SAMPLE": "4", "NCCLSCOPE_KERNEL_SAMPLE_MS": "0"},
                             {"NCCLSCOPE_KERNEL_SAMPLE": "19", "NCCLSCOPE_KERNEL_SAMPLE_MS": "0"})):
        d = hung_job(tmp, events=None, name="job-sampled%d" % k, mode="job", extra=("--intra",), env_more=env)
        c = json.loads(run([CLI, "hang", d, "--json"], ok=(4, 5)).stdout)
        j = A.load(d, tables=("ops", "kernel_channels"), errors="ignore")
        py = A.hangs(j.ops, j.comms, j.kernel_channels)
        same_hangs(py, c["hangs"], "job, KernelCh sampled %s" % env)
        check(A.divergences(j.ops, j.comms) == c["divergences"], "divergences(), sampled %s: %s" % (env, c))
        first = (py or c["divergences"])[0]
        check((first["op"], first["seq"], first["missing_ranks"], first["cause"]) == ("AllReduce", 9, [2], "root"),
              "sampled %s: %s" % (env, first))
    print("ok: hangs()/divergences() of a job with KernelCh sampled = hang --json")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(args):
    """A.main(args) here (an interpreter with pandas starts in seconds on a
    loaded machine): (exit code, stderr)."""
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = A.main(args)
        except SystemExit as e:  # argparse
            rc = e.code
    return rc, err.getvalue()


def test_cli_errors(tmp):
    """`python3 -m ncclscope.analysis`: every error one line on stderr (no
    traceback, no argparse usage block), the exit codes ncclscope's: usage 1
    (argparse's was 2, ncclscope's code for damage), a file that is not a
    trace 3 as ncclscope (it was read as damage, 2), a missing numpy or
    pandas 3 naming the Debian package, a scheduler that is not there 3
    within SCHEDULER_TIMEOUT_S (distributed's default connect timeout is
    30 s; a missing --scheduler-file was waited for without end)."""
    env = dict(os.environ, PYTHONPATH=os.environ["NSC_BUILD_PY"])
    junk = os.path.join(tmp, "junk.nsc")
    open(junk, "wb").write(bytes(range(256)) * 8)
    port = free_port()
    cases = [
        (["stats", JOB, "--top", "3x"], 1, ("--top", "'3x'")),
        (["stats", JOB, "--top", "-1"], 1, ("--top", "'-1'")),
        (["stats", JOB, "--max-uncertainty-us", "nan"], 1, ("--max-uncertainty-us", "'nan'")),
        (["hang", JOB, "-j", "x"], 1, ("-j", "'x'")),
        (["stats"], 1, ("paths",)),
        (["frobnicate", JOB], 1, ("'frobnicate'",)),
        (["stats", junk], 3, ("ncclscope.analysis: not an ncclscope trace: %s\n" % junk,)),
        (["hang", junk], 3, ("ncclscope.analysis: not an ncclscope trace: %s\n" % junk,)),
        (["stats", JOB, "--scheduler", "nosuch://x"], 1, ("--scheduler nosuch://x",)),
        (["stats", JOB, "--scheduler-file", os.path.join(tmp, "none.json")], 3, ("none.json: no such file after",)),
    ]
    for args, code, words in cases:
        rc, err = in_process(args)
        check(rc == code and err.count("\n") == 1 and "Traceback" not in err and all(w in err for w in words),
              "%s: exit %s, %r" % (args, rc, err))
    for cmd in ("stats", "hang"):  # ncclscope says the same, with the same code
        c = run([CLI, cmd, junk], ok=(3,))
        check(c.stderr == "ncclscope %s: not an ncclscope trace: %s\n" % (cmd, junk), c.stderr)
    t0 = time.monotonic()
    rc, err = in_process(["stats", JOB, "--scheduler", "tcp://127.0.0.1:%d" % port])
    dt = time.monotonic() - t0
    check(rc == 3 and "cannot reach the Dask scheduler tcp://127.0.0.1:%d" % port in err, (rc, err))
    check(dt < A.SCHEDULER_TIMEOUT_S + 10, "an unreachable scheduler took %.1f s to refuse" % dt)
    # the real command: one line on stderr whatever distributed logs, and a
    # missing package said as such
    p = run([sys.executable, "-m", "ncclscope.analysis", "stats", JOB, "--scheduler", "tcp://127.0.0.1:%d" % port],
            ok=(3,), env=env)
    check(p.stderr.count("\n") == 1 and "cannot reach" in p.stderr, repr(p.stderr))
    code = ("import sys, runpy; sys.modules['numpy'] = None; sys.argv = ['analysis', 'stats', %r]; "
            "runpy.run_module('ncclscope.analysis', run_name='__main__', alter_sys=True)" % JOB)
    p = run([sys.executable, "-c", code], ok=(3,), env=env)
    check(p.stderr.count("\n") == 1 and "needs numpy" in p.stderr and "apt-get install python3-numpy" in p.stderr,
          repr(p.stderr))
    print("ok: python3 -m ncclscope.analysis: errors one line, exit 1/3 as ncclscope, no scheduler: "
          "refused in %.1f s" % dt)


def main():
    tmp = tempfile.mkdtemp(prefix="nsc-analysis-")
    try:
        ops = test_pandas(tmp)
        test_damage(tmp)
        test_export(tmp, ops)
        test_hangs(tmp)
        test_hangs_job(tmp)
        test_hangs_sampled(tmp)
        test_refusals(tmp)
        test_cli_errors(tmp)
        try:
            A.operations(os.path.join(tmp, "nosuch"))
            fail("a missing path did not raise")
        except FileNotFoundError:
            pass
        test_cluster(tmp, ops)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok: analysis")


if __name__ == "__main__":
    main()
