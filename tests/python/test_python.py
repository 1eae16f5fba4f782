# SPDX-License-Identifier: Apache-2.0
"""The ncclscope Python package under one interpreter (this one):

    test_python.py                      (env: PYTHONPATH=build/python, NSC_CLI,
                                          NSC_PLUGIN, NSC_FAKE_LIB, NSC_BUILD_PY)

- functions mode: Python and C calls on 4 threads, nested right (both
  backends on 3.12+: sys.monitoring and setprofile; setprofile on 3.11);
- caller mode through the plugin NCCL loads (a fake NCCL driven by ctypes):
  every CollApi/P2pApi carries the Python line that issued it, a collective
  on a thread without Python the process's latest caller, stats --by-caller
  splits the time by call site; functions mode puts the API events inside
  the Python call that made them;
- no leaked references (tracemalloc, sys.getrefcount, sys.gettotalrefcount
  where the build has it);
- a clean disable (stop() leaves no hook; sys.monitoring refused cleanly on
  3.11); the rate limit; activation through the .pth hook and ncclscope.run;
- with NCCL_PROFILER_PLUGIN exported: a script without NCCL keeps its
  functions; Python first, then NCCL's init (API v4, v7) joining the
  package's session: the trace says NCCL's version and converts as it;
  NCCLSCOPE_PYTHON where the package does not trace: one line on stderr.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
CLI = os.environ["NSC_CLI"]
PLUGIN = os.environ["NSC_PLUGIN"]
BUILD_PY = os.environ["NSC_BUILD_PY"]
PY = sys.executable
VER = sys.version_info[:2]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def run(args, env=None, cwd=None, ok=(0,)):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([BUILD_PY, DATA])
    e.update(env or {})
    p = subprocess.run(args, env=e, cwd=cwd, capture_output=True, text=True, timeout=120)
    if p.returncode not in ok:
        print("stdout:", p.stdout[-3000:], "\nstderr:", p.stderr[-3000:])
        raise SystemExit("FAIL: %s exited %d" % (" ".join(args), p.returncode))
    return p


def convert(d):
    out = d + ".json"
    run([CLI, "convert", d, "-o", out])
    with open(out) as f:
        return json.load(f)


def pyslices(doc, pid_filter=None):
    return [e for e in doc["traceEvents"] if e.get("cat", "").startswith("python")
            and e["ph"] == "X" and (pid_filter is None or pid_filter(e["pid"]))]


def process_names(doc):
    return {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def tree(slices):
    """Parent of each slice by time containment on its track; raises on
    slices that overlap without nesting."""
    parent = {}
    by_track = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_track.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                p = stack[-1]
                if e["ts"] + e["dur"] > p["ts"] + p["dur"] + 1e-3:
                    raise AssertionError("overlap without nesting: %s in %s" % (e, p))
                parent[id(e)] = p
            stack.append(e)
    return parent


def test_nesting(backend):
    with tempfile.TemporaryDirectory() as d:
        out = run([PY, os.path.join(DATA, "nesting.py"), backend], env={"NCCLSCOPE_DIR": d}).stdout
        st = eval(out.split("STATUS", 1)[1].strip())
        check(st["backend"] == backend, "backend %s ran as %s" % (backend, st["backend"]))
        check(st["errors"] == 0 and st["ring_full"] == 0, "status %s" % st)
        doc = convert(d)
    names = process_names(doc)
    sl = pyslices(doc, lambda pid: names.get(pid, "").endswith(" python"))
    try:
        parent = tree(sl)
    except AssertionError as e:
        check(False, "%s: %s" % (backend, e))
        return
    per_thread = {}
    for e in sl:
        per_thread.setdefault(e["tid"], {}).setdefault(e["name"], 0)
        per_thread[e["tid"]][e["name"]] += 1
    # worker(n): n x middle(5); middle: 8 leaf (+ math.sqrt each), 4 gen slices
    # (first run and 3 resumes), builtins.sum around them, fails()
    want_n = sorted([10, 10, 11, 12])
    got_n = sorted(c.get("middle", 0) for c in per_thread.values())
    check(got_n == want_n, "%s: middle() per thread %s, want %s" % (backend, got_n, want_n))
    for tid, c in per_thread.items():
        n = c.get("middle", 0)
        want = {"worker": 1, "middle": n, "leaf": 8 * n, "math.sqrt": 8 * n, "gen": 4 * n,
                "builtins.sum": n, "fails": n}
        got = {k: c.get(k, 0) for k in want}
        check(got == want, "%s: thread %d counts %s, want %s" % (backend, tid, got, want))
    want_parent = {"math.sqrt": {"leaf"}, "leaf": {"middle", "gen"}, "gen": {"builtins.sum"},
                   "builtins.sum": {"middle"}, "fails": {"middle"}, "middle": {"worker"}}
    bad = [(e["name"], parent[id(e)]["name"] if id(e) in parent else None) for e in sl
           if e["name"] in want_parent
           and (id(e) not in parent or parent[id(e)]["name"] not in want_parent[e["name"]])]
    check(not bad, "%s: wrong parents %s" % (backend, sorted(set(bad))[:5]))
    exc = [e for e in sl if e["name"] == "fails"]
    if backend == "monitoring" or VER < (3, 12):  # 3.12+'s setprofile passes None for both
        check(exc and all(e["args"].get("exception") for e in exc), "%s: fails() not marked" % backend)
    check(all(e["cat"] == ("python.c" if "." in e["name"] else "python") for e in sl),
          "%s: categories" % backend)
    md = doc["metadata"]["ncclscope"]["files"][0]
    check(md.get("python_calls") == len(sl), "%s: metadata python_calls %s vs %d"
          % (backend, md.get("python_calls"), len(sl)))


def expected_lines():
    lines = {}
    with open(os.path.join(DATA, "train.py")) as f:
        for i, l in enumerate(f, 1):
            m = re.search(r"# LINE:(\w+)", l)
            if m:
                lines[m.group(1)] = i
    return lines


def test_caller():
    lines = expected_lines()
    train = os.path.join(DATA, "train.py")
    with tempfile.TemporaryDirectory() as d:
        env = {"NCCLSCOPE_DIR": d, "NCCL_PROFILER_PLUGIN": PLUGIN, "NCCLSCOPE_EVENTS": "all"}
        out = run([PY, train, "caller"], env=env).stdout
        st = eval(out.strip().splitlines()[-1])
        check(st["own_session"] is False, "caller: opened its own session under NCCL's plugin")
        # init, 4 all_reduce (each through a wrapper: nested targets count once), 2 send,
        # all_gather, backward
        check(st["callers"] == 1 + 4 + 2 + 1 + 1, "caller: %d target calls, want 9" % st["callers"])
        doc = convert(d)
        by = run([CLI, "stats", d, "--by-caller", "--json"]).stdout
        text = run([CLI, "stats", d, "--by-caller"]).stdout
    check(not pyslices(doc), "caller mode recorded Python slices")
    api = [e for e in doc["traceEvents"] if e.get("cat") in ("CollApi", "P2pApi") and e["ph"] in "Xb"]
    want = {"AllReduce": "train.py:%d train_step" % lines["allreduce"],
            "AllGather": "train.py:%d evaluate" % lines["allgather"],
            "Send": "train.py:%d train_step" % lines["send"]}
    seen = {}
    for e in api:
        a = e["args"]
        seen.setdefault(e["name"], []).append((a.get("py_caller"), a.get("py_caller_from")))
    check(len(seen.get("AllReduce", [])) == 5, "AllReduce count %s" % seen.get("AllReduce"))
    for name, c in want.items():
        mine = [x for x in seen.get(name, []) if x[1] is None]
        check(mine and all(x[0] and x[0].endswith(c) for x in mine),
              "py_caller of %s: %s, want ...%s" % (name, mine, c))
    # DDP-like: the all-reduce made on a thread without Python
    other = [x for x in seen.get("AllReduce", []) if x[1] == "process"]
    check(len(other) == 1 and other[0][0].endswith("train.py:%d main" % lines["backward"]),
          "collective from a non-Python thread: %s" % other)
    check([x[0] for x in seen.get("Broadcast", [])] == [None], "non-target call got a caller: %s"
          % seen.get("Broadcast"))
    stacks = [e["args"].get("py_stack", "").split(" | ") for e in api if e["name"] == "AllGather"]
    check(len(stacks) == 1 and len(stacks[0]) == 3
          and stacks[0][1].endswith("train.py:%d main" % lines["evaluate"])
          and stacks[0][2].endswith("train.py:%d <module>" % lines["main"]),
          "py_stack of AllGather: %r" % stacks)
    # stats --by-caller: time = GPU time, which the fake makes the count (ns)
    j = json.loads(by)
    rows = {(r["caller"] or "").split("/")[-1] + " " + r["op"]: r for r in j["callers"]}
    ar = rows.get("train.py:%d train_step AllReduce" % lines["allreduce"])
    check(ar and ar["rank_ops"] == 4 and abs(ar["gpu_us"] - 12.0) < 1e-6,
          "by-caller AllReduce row %s (rows %s)" % (ar, list(rows)))
    total = 4 * 3000 + 1000 + 500 + 10
    check(ar and abs(ar["share"] - 12000.0 / total) < 1e-3, "AllReduce share %s" % (ar and ar["share"]))
    check(j["with_python_caller"] == 6 and j["operations"] == 7, "by-caller counts %s" % j)
    check("(no Python caller)" in text and "train_step" in text, "by-caller text:\n" + text)


def test_functions_with_nccl():
    """functions mode with NCCL: the API events nest under fakedist's calls
    on the thread's track in the communicator's process."""
    with tempfile.TemporaryDirectory() as d:
        env = {"NCCLSCOPE_DIR": d, "NCCL_PROFILER_PLUGIN": PLUGIN}
        run([PY, os.path.join(DATA, "train.py"), "functions"], env=env)
        doc = convert(d)
    names = process_names(doc)
    comm = [pid for pid, n in names.items() if "comm fake" in n]
    check(len(comm) == 1, "comm processes %s" % names)
    if not comm:
        return
    track = [e for e in doc["traceEvents"] if e.get("pid") == comm[0] and e["ph"] == "X"
             and e.get("cat") in ("python", "GroupApi", "CollApi", "P2pApi", "Group", "Coll")]
    try:
        parent = tree(track)
    except AssertionError as e:
        check(False, "functions+nccl: %s" % e)
        return
    def chain(e):
        out = []
        while id(e) in parent:
            e = parent[id(e)]
            out.append(e["name"])
        return out
    ar = [e for e in track if e.get("cat") == "CollApi" and e["name"] == "AllReduce"
          and "py_caller_from" not in e["args"]]
    check(len(ar) == 4, "AllReduce CollApi in the comm process: %d" % len(ar))
    for e in ar:
        c = chain(e)
        check(c[:1] == ["GroupApi"] and "all_reduce" in c and "train_step" in c and "main" in c,
              "AllReduce nests under %s" % c)
        check(e["args"].get("py_caller", "").endswith("train_step"), "py_caller with functions mode")


def test_leaks():
    code = r"""
import gc, sys, tracemalloc, threading
import ncclscope
sentinel = object()
def f(x):
    return [x]
def g(n):
    for i in range(n):
        f(sentinel)
        len(str(i))
def measure(mode, **kw):
    ncclscope.trace(mode=mode, **kw)
    g(2000)  # warm up: decisions, interned locations
    gc.collect()
    rc = sys.getrefcount(sentinel)
    total = sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else None
    tracemalloc.start()
    s0 = tracemalloc.take_snapshot()
    for _ in range(20):
        g(5000)
    gc.collect()
    s1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(st.size_diff for st in s1.compare_to(s0, "filename"))
    ncclscope.stop()
    gc.collect()
    print(mode, kw.get("backend"), grown, sys.getrefcount(sentinel) - rc,
          (sys.gettotalrefcount() - total) if total is not None else 0)
for b in (["monitoring", "setprofile"] if sys.version_info >= (3, 12) else ["setprofile"]):
    measure("functions", backend=b, include=["__main__"])
    measure("functions", backend=b, include=["__main__"], rate_limit=50)
    measure("caller", backend=b, targets=["__main__.f"])
"""
    with tempfile.TemporaryDirectory() as d:
        out = run([PY, "-c", code], env={"NCCLSCOPE_DIR": d}).stdout
    for line in out.strip().splitlines():
        mode, backend, grown, rc, total = line.split()
        check(int(grown) < 64 * 1024, "leak: %s/%s grew %s bytes over 100k calls" % (mode, backend, grown))
        check(int(rc) == 0, "leak: %s/%s sentinel refcount %+d" % (mode, backend, int(rc)))
        check(abs(int(total)) < 1000, "leak: %s/%s total refcount %+d" % (mode, backend, int(total)))


def test_disable():
    code = r"""
import sys, threading
import ncclscope
from ncclscope import _native
print("HAVE", _native.HAVE_MONITORING)
try:
    ncclscope.trace(backend="monitoring")
    print("MON started")
except RuntimeError as e:
    print("MON refused:", e)
ncclscope.stop()
st = ncclscope.trace(mode="functions")
print("AUTO", st["backend"])
ncclscope.stop()
print("AFTER", sys.getprofile(), getattr(threading, "_profile_hook", None),
      sys.monitoring.get_tool(4) if hasattr(sys, "monitoring") else None)
# the setprofile backend will not replace a running profiler
sys.setprofile(lambda *a: None)
try:
    ncclscope.trace(mode="functions", backend="setprofile")
    print("PROF replaced")
except RuntimeError as e:
    print("PROF refused:", e)
sys.setprofile(None)
print("STATUS", ncclscope.status()["backend"])
"""
    with tempfile.TemporaryDirectory() as d:
        out = run([PY, "-c", code], env={"NCCLSCOPE_DIR": d}).stdout
    have = VER >= (3, 12)
    check(("HAVE %d" % have) in out, "HAVE_MONITORING:\n" + out)
    if have:
        check("MON started" in out and "AUTO monitoring" in out, "3.12+: monitoring\n" + out)
    else:
        check("MON refused: sys.monitoring needs Python 3.12" in out and "AUTO setprofile" in out,
              "no sys.monitoring: clean refusal and setprofile\n" + out)
        print("this Python has no sys.monitoring: functions and caller run on setprofile")
    check("AFTER None None None" in out, "hooks left after stop:\n" + out)
    check("PROF refused: a profiler is already running" in out, "setprofile over a profiler:\n" + out)
    check("STATUS none" in out, "status after a refused start:\n" + out)


def test_rate_limit():
    code = r"""
import ncclscope
ncclscope.trace(mode="functions", include=["__main__"], rate_limit=100, c_calls=False)
def f(): pass
for i in range(20000): f()
st = ncclscope.status()
ncclscope.stop()
print(st["rate_limited"])
"""
    with tempfile.TemporaryDirectory() as d:
        limited = int(run([PY, "-c", code], env={"NCCLSCOPE_DIR": d}).stdout.strip())
        doc = convert(d)
    md = doc["metadata"]["ncclscope"]["files"][0]
    drawn = sum(1 for e in pyslices(doc) if e["name"] == "f")
    check(0 < drawn <= 100 * 10 and drawn + limited == 20000,
          "rate limit: %d drawn + %d limited != 20000" % (drawn, limited))
    check(md.get("python_calls_not_recorded") == limited,
          "SKIPPED records: %s vs %d" % (md.get("python_calls_not_recorded"), limited))


def test_activation():
    script = os.path.join(DATA, "nesting.py")
    with tempfile.TemporaryDirectory() as d:
        # .pth: a site dir holding it is processed at start; sitecustomize adds the build dir as one
        site = os.path.join(d, "site")
        os.mkdir(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("import site\nsite.addsitedir(%r)\n" % BUILD_PY)
        code = "import ncclscope; print(ncclscope.status()['mode'])"
        e = {"NCCLSCOPE_DIR": os.path.join(d, "t1"), "NCCLSCOPE_PYTHON": "functions",
             "PYTHONPATH": os.pathsep.join([site, DATA])}
        out = run([PY, "-c", code], env=e).stdout.strip()
        check(out == "functions", ".pth hook: mode %r" % out)
        e["NCCLSCOPE_PYTHON"] = ""
        out = run([PY, "-c", "import sys; print('ncclscope' in sys.modules)"], env=e).stdout.strip()
        check(out == "False", ".pth hook imported ncclscope without NCCLSCOPE_PYTHON")
        e["NCCLSCOPE_PYTHON"] = "bogus"
        p = run([PY, "-c", "print('ran')"], env=e)
        check(p.stdout.strip() == "ran" and "not started" in p.stderr,
              "bad NCCLSCOPE_PYTHON: %r %r" % (p.stdout, p.stderr))
        # python -m ncclscope.run
        p = run([PY, "-m", "ncclscope.run", "--mode", "functions", "--include", "__main__",
                 "-c" if False else script, "setprofile"], env={"NCCLSCOPE_DIR": os.path.join(d, "t2")})
        check("STATUS" in p.stdout, "ncclscope.run: %r" % p.stdout[-300:])
        doc = convert(os.path.join(d, "t2"))
        check(any(e["name"] == "middle" for e in pyslices(doc)), "ncclscope.run recorded nothing")


JOINED = os.path.join(DATA, "joined.py")
NOTICE = "does nothing here"  # the plugin's line when NCCLSCOPE_PYTHON finds no package tracing


def test_no_nccl_with_plugin_exported():
    """NCCL_PROFILER_PLUGIN exported as docs/python.md sets it up, a script
    that makes no communicator: python -m ncclscope.run keeps its functions
    (the package's own session; the trace says no NCCL took part)."""
    with tempfile.TemporaryDirectory() as d:
        env = {"NCCLSCOPE_DIR": d, "NCCL_PROFILER_PLUGIN": PLUGIN}
        p = run([PY, "-m", "ncclscope.run", "--mode", "functions", "--include", "__main__",
                 JOINED, "no-nccl"], env=env)
        files = sorted(f for f in os.listdir(d) if f.endswith(".nsc"))
        check(len(files) == 1, "no NCCL, plugin exported: trace files %s" % files)
        if len(files) != 1:
            return
        info = run([CLI, "info", os.path.join(d, files[0])]).stdout
        doc = convert(d)
    names = [e["name"] for e in pyslices(doc)]
    check(names.count("prepare") == 1 and names.count("cleanup") == 1,
          "no NCCL, plugin exported: functions %s" % names)
    check(re.search(r"^NCCL API +none", info, re.M), "no NCCL: info says\n" + info)
    check(NOTICE not in p.stderr, "no NCCLSCOPE_PYTHON, yet: %r" % p.stderr)


def test_python_then_nccl(api):
    """The package's session opens first (functions before the first
    communicator), its file is on disk, then NCCL's init through API `api`
    joins it: one file, which says NCCL's version and converts as that
    version's (GPU time from KernelCh, nested Python calls)."""
    with tempfile.TemporaryDirectory() as d:
        env = {"NCCLSCOPE_DIR": d, "NCCL_PROFILER_PLUGIN": PLUGIN, "NCCLSCOPE_EVENTS": "all",
               "NCCLSCOPE_PYTHON": "functions", "NCCLSCOPE_FLUSH_MS": "20",
               "JOINED_WAIT_FOR": d, "FAKE_NCCL_API": str(api)}
        p = run([PY, "-m", "ncclscope.run", "--include", "__main__,fakedist", JOINED], env=env)
        check(NOTICE not in p.stderr, "v%d: the package traces, yet the plugin says %r" % (api, p.stderr))
        files = sorted(f for f in os.listdir(d) if f.endswith(".nsc"))
        check(len(files) == 1, "v%d: trace files %s" % (api, files))
        if len(files) != 1:
            return
        info = run([CLI, "info", os.path.join(d, files[0])]).stdout
        doc = convert(d)
        stats = json.loads(run([CLI, "stats", d, "--json"]).stdout)
    check(re.search(r"^NCCL API +v%d$" % api, info, re.M), "v%d: info says\n%s" % (api, info))
    check("closed cleanly  yes" in info, "v%d: not closed cleanly\n%s" % (api, info))
    procs = process_names(doc)
    names = [e["name"] for e in pyslices(doc, lambda pid: procs.get(pid, "").endswith(" python"))]
    check(all(names.count(n) == 1 for n in ("prepare", "all_reduce", "cleanup")),
          "v%d: functions %s" % (api, names))
    rows = [r for r in stats["rows"] if r["op"] == "AllReduce"]
    check(len(rows) == 1 and rows[0]["gpu_ops"] == 1 and abs(rows[0]["gpu_p50_us"] - 3.0) < 1e-6,
          "v%d: AllReduce row %s" % (api, rows))
    colls = [e for e in doc["traceEvents"] if e.get("cat") == "Coll" and e["name"] == "AllReduce"]
    check(len(colls) == 1, "v%d: Coll events %d" % (api, len(colls)))


def test_not_tracing_notice():
    """NCCLSCOPE_PYTHON with the package on PYTHONPATH only (its .pth hook
    never runs): NCCL's first init says so on stderr, once, with the ways
    that work; off values say nothing."""
    with tempfile.TemporaryDirectory() as d:
        env = {"NCCLSCOPE_DIR": d, "NCCL_PROFILER_PLUGIN": PLUGIN, "NCCLSCOPE_PYTHON": "caller"}
        p = run([PY, os.path.join(DATA, "train.py"), "none"], env=env)
        lines = [l for l in p.stderr.splitlines() if "NCCLSCOPE_PYTHON" in l]
        check(len(lines) == 1 and NOTICE in lines[0] and "python -m ncclscope.run" in lines[0]
              and "torchrun" in lines[0] and ".pth" in lines[0],
              "NCCLSCOPE_PYTHON without the package: stderr %r" % p.stderr)
        env["NCCLSCOPE_PYTHON"] = "off"
        p = run([PY, os.path.join(DATA, "train.py"), "none"], env=env)
        check("NCCLSCOPE_PYTHON" not in p.stderr, "NCCLSCOPE_PYTHON=off: stderr %r" % p.stderr)


def main():
    print("Python %d.%d (%s)" % (VER + (PY,)))
    backends = ["monitoring", "setprofile"] if VER >= (3, 12) else ["setprofile"]
    for b in backends:
        test_nesting(b)
    test_caller()
    test_functions_with_nccl()
    test_leaks()
    test_disable()
    test_rate_limit()
    test_activation()
    test_no_nccl_with_plugin_exported()
    for api in (4, 7):
        test_python_then_nccl(api)
    test_not_tracing_notice()
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
