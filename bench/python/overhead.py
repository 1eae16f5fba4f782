# SPDX-License-Identifier: Apache-2.0
"""What ncclscope's Python modes cost (docs/benchmarks.md, "Python").

    python bench/python/overhead.py [--build build] [--repeat 5] [--json out.json]

1. A function-heavy pure-Python loop (recursive fib, small methods, a few
   builtins: ~1.3 M Python calls and ~1.2 M C calls per run) timed in a fresh
   interpreter per setting: no tracing, sys.setprofile with a do-nothing
   Python function, cProfile, and each ncclscope mode and backend this
   Python has. The settings take turns, --repeat rounds, and the fastest
   run of each counts (CPU time of the thread: the machine is shared).
2. caller mode's cost per collective: "collectives" through the plugin
   (tests/python's fake NCCL through ctypes: GroupApi, CollApi, Group, Coll
   and KernelCh records each) issued by a Python function that is a target,
   with caller mode off and on at depths 1 and 3, alternating in one
   process, the fastest of 8 x --repeat blocks of 5,000 of each.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

WORK = r"""
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
class P:
    def __init__(self, x): self.x = x
    def norm(self): return abs(self.x) + len(str(self.x))
def loop(n):
    s = 0
    for i in range(n):
        s += P(i).norm()
    return s
def work():
    fib(25)          # 242785 calls
    loop(200000)     # 200000 x (__init__, norm) + abs, len, str
SETUP
t0 = time.thread_time()
for _ in range(2):
    work()
t1 = time.thread_time()
TEARDOWN
print(t1 - t0)
"""

SETTINGS = {
    "none": ("", ""),
    "sys.setprofile (no-op Python function)":
        ("sys.setprofile(lambda *a: None)", "sys.setprofile(None)"),
    "cProfile": ("import cProfile; pr = cProfile.Profile(); pr.enable()", "pr.disable()"),
    "ncclscope caller (monitoring)":
        ("import ncclscope; ncclscope.trace(mode='caller', backend='monitoring')", "ncclscope.stop()"),
    "ncclscope caller (setprofile)":
        ("import ncclscope; ncclscope.trace(mode='caller', backend='setprofile')", "ncclscope.stop()"),
    "ncclscope functions (monitoring)":
        ("import ncclscope; ncclscope.trace(mode='functions', backend='monitoring')", "ncclscope.stop()"),
    "ncclscope functions, no C calls (monitoring)":
        ("import ncclscope; ncclscope.trace(mode='functions', backend='monitoring', c_calls=False)",
         "ncclscope.stop()"),
    "ncclscope functions, rate limit 1000/s (monitoring)":
        ("import ncclscope; ncclscope.trace(mode='functions', backend='monitoring', rate_limit=1000)",
         "ncclscope.stop()"),
    "ncclscope functions, loop excluded (monitoring)":
        ("import ncclscope; ncclscope.trace(mode='functions', backend='monitoring', include=['mypkg'])",
         "ncclscope.stop()"),
    "ncclscope functions (setprofile)":
        ("import ncclscope; ncclscope.trace(mode='functions', backend='setprofile')", "ncclscope.stop()"),
    "ncclscope functions, loop excluded (setprofile)":
        ("import ncclscope; ncclscope.trace(mode='functions', backend='setprofile', include=['mypkg'])",
         "ncclscope.stop()"),
}

CALLS = 2 * (242785 + 200000 * 2)  # Python calls per run (fib, __init__, norm)

COLL = r"""
import ctypes, json, os, sys, time
lib = ctypes.CDLL(os.environ["NSC_FAKE_LIB"])
lib.fake_collective.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
import ncclscope
assert lib.fake_load(os.environ["NSC_PLUGIN"].encode()) == 0 and lib.fake_init(0, 1) == 0
def all_reduce(n):
    lib.fake_collective(b"AllReduce", n)
def step(i):
    all_reduce(1024)
def block():
    t0 = time.thread_time_ns()
    for i in range(5000):
        step(i)
    return (time.thread_time_ns() - t0) / 5000
backends = ["monitoring", "setprofile"] if sys.version_info >= (3, 12) else ["setprofile"]
confs = [("off", None)] + [("caller depth %d (%s)" % (d, b), dict(depth=d, backend=b))
                           for b in backends for d in (1, 3)]
best = {c: 1e18 for c, _ in confs}
for r in range(int(sys.argv[1])):
    for name, kw in confs:
        if kw is not None:
            ncclscope.trace(mode="caller", targets=["__main__.all_reduce"], session="nccl", **kw)
        block()
        best[name] = min(best[name], block())
        ncclscope.stop()
lib.fake_finalize()
print(json.dumps(best))
"""


def run(code, env, args=()):
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return p.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["loop", "collective"])
    ap.add_argument("--json")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    have_mon = sys.version_info >= (3, 12)
    results = {"python": sys.version.split()[0], "loop": {}, "collective": {}}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"), NCCLSCOPE_DIR=d,
                   NSC_PLUGIN=os.path.join(build, "plugin", "libnccl-profiler-ncclscope.so"),
                   NSC_FAKE_LIB=os.path.join(build, "tests", "python", "libfake_nccl_py.so"))
        env.pop("NCCL_PROFILER_PLUGIN", None)
        print("Python %s; %d Python calls per run; fastest of %d rounds"
              % (results["python"], CALLS, a.repeat))
        settings = [(n, c) for n, c in SETTINGS.items() if have_mon or "monitoring" not in n]
        if a.only == "collective":
            settings = []
        times = {n: [] for n, _ in settings}
        for _ in range(a.repeat):
            for name, (setup, teardown) in settings:
                code = WORK.replace("SETUP", setup).replace("TEARDOWN", teardown)
                times[name].append(float(run(code, env)))
        base = min(times["none"]) if settings else 0
        for name, _ in settings:
            t = min(times[name])
            per = (t - base) / CALLS * 1e9
            results["loop"][name] = {"seconds": t, "ns_per_call": per, "runs": times[name]}
            print("  %-52s %7.3f s  %5.2fx  %+7.1f ns/call" % (name, t, t / base, per))
        if a.only == "loop":
            settings = None
        best = json.loads(run(COLL, env, [str(8 * a.repeat)])) if settings is not None else {"off": 0}
        results["collective"] = best
        print("one collective through the plugin (GroupApi, CollApi, Group, Coll, KernelCh "
              "records), issued from a Python function that is a target:")
        for name, ns in best.items():
            print("  %-36s %7.0f ns  %+6.0f ns" % (name, ns, ns - best["off"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
