#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How the analyses scale with ranks: a synthetic job (bench/synth_job.py) of
each size, analysed by `ncclscope stats --json` (C, one process), by
`python3 -m ncclscope.analysis stats --json` in one process (pandas), and
by the same command on a local dask.distributed cluster (dask-scheduler and
W dask-worker processes, 1 thread each, on 127.0.0.1). Wall time and peak
memory (max RSS) of each process; the three outputs must be the same text.
Prints a Markdown table (docs/analysis.md).

    PYTHONPATH=build/python python3 bench/analysis_scale.py --cli build/converter/ncclscope \\
        --ranks 64,256,1024 --workers 2 [--keep /tmp/jobs]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_measured(cmd, env=None):
    """wall seconds, peak RSS (MiB) of that one process (wait4), stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode not in (0, 2):
            sys.exit("%s failed (%d): %s" % (" ".join(cmd), p.returncode, err.read().decode()[-2000:]))
        return dt, ru.ru_maxrss / 1024.0, out.read()


class Cluster:
    def __init__(self, workers, tmp, env):
        self.procs, self.tmp, self.env, self.workers = [], tmp, env, workers

    def start(self):
        sfile = os.path.join(self.tmp, "scheduler.json")
        if os.path.exists(sfile):
            os.unlink(sfile)
        self._spawn(["dask-scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", sfile])
        while not os.path.exists(sfile) or not os.path.getsize(sfile):
            time.sleep(0.2)
        time.sleep(0.3)
        self.address = json.load(open(sfile))["address"]
        for i in range(self.workers):
            self._spawn(["dask-worker", self.address, "--host", "127.0.0.1", "--nthreads", "1",
                         "--no-dashboard", "--memory-limit", "0",
                         "--local-directory", os.path.join(self.tmp, "w%d" % i)])
        from dask.distributed import Client
        c = Client(self.address)
        c.wait_for_workers(self.workers, timeout=120)
        c.close()
        return self.address

    def _spawn(self, cmd):
        self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           env=self.env, start_new_session=True))

    def worker_peaks(self):
        from dask.distributed import Client
        c = Client(self.address)
        peaks = c.run(lambda: __import__("resource").getrusage(0).ru_maxrss / 1024.0)
        c.close()
        return sorted(peaks.values())

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "converter", "ncclscope"))
    ap.add_argument("--src", default=os.path.join(ROOT, "tests", "data", "h200x4_procs"))
    ap.add_argument("--ranks", default="64,256,1024")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", help="directory for the synthetic jobs (kept)")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the C and pandas commands; the fastest counts (a shared machine)")
    ap.add_argument("--cli-j", help="a second ncclscope with -j N (converter/parallel.c), run as --cli-j PATH:N")
    a = ap.parse_args()
    py = sys.executable
    env = dict(os.environ)
    tmp = tempfile.mkdtemp(prefix="nsc-scale-")
    base = a.keep or tmp
    rows = []
    try:
        for n in (int(x) for x in a.ranks.split(",")):
            job = os.path.join(base, "job%d" % n)
            if not os.path.isdir(job):
                subprocess.run([py, os.path.join(HERE, "synth_job.py"), "--from", a.src, "--ranks", str(n),
                                "--out", job], check=True, stdout=subprocess.DEVNULL)
            size = sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job))
            def best(cmd, e=None):
                runs = [run_measured(cmd, e) for _ in range(a.repeat)]
                return min(r[0] for r in runs), max(r[1] for r in runs), runs[0][2]
            c_t, c_m, c_out = best([a.cli, "stats", "--json", job])
            p_t, p_m, p_out = best([py, "-m", "ncclscope.analysis", "stats", "--json", job], env)
            ops = json.loads(c_out)["operations"]
            row = {"ranks": n, "MB": size / 1e6, "ops": ops, "c_s": c_t, "c_mib": c_m, "py_s": p_t,
                   "py_mib": p_m, "same_py": p_out == c_out}
            if a.cli_j:
                path, nj = a.cli_j.rsplit(":", 1)
                # --max-uncertainty-us given: that branch lost its default (a report to its owner)
                j_t, j_m, j_out = best([path, "stats", "--json", "-j", nj, "--max-uncertainty-us", "1000", job])
                row.update(cj_s=j_t, cj_mib=j_m, same_j=json.loads(j_out)["rows"] == json.loads(c_out)["rows"])
            # in-process breakdown: alignment pass, reading, analysis
            code = ("import time,json,sys; from ncclscope import analysis as A\n"
                    "t=time.monotonic(); f=A.trace_files(sys.argv[1]); s=A.job_shifts(f); t1=time.monotonic()\n"
                    "j=A.load(sys.argv[1]); t2=time.monotonic(); A.stats(j.ops, j.drops, files=len(f)); t3=time.monotonic()\n"
                    "print(json.dumps([t1-t,t2-t1,t3-t2]))")
            brs = [json.loads(subprocess.run([py, "-c", code, job], capture_output=True, env=env,
                                             check=True).stdout) for _ in range(a.repeat)]
            br = min(brs, key=sum)
            row.update(align_s=br[0], load_s=br[1], stats_s=br[2])
            if not a.no_dask:
                cl = Cluster(a.workers, tmp, env)
                try:
                    addr = cl.start()
                    d_t, d_m, d_out = run_measured([py, "-m", "ncclscope.analysis", "stats", "--json", job,
                                                    "--scheduler", addr], env)
                    row.update(dask_s=d_t, dask_client_mib=d_m, dask_worker_mib=cl.worker_peaks(),
                               same_dask=d_out == c_out)
                finally:
                    cl.stop()
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("| ranks | trace MB | operations | C stats s | C MiB | C stats -j s | -j MiB "
          "| pandas s (align / read / analyse) | pandas MiB "
          "| Dask %d workers s | Dask client MiB | Dask worker MiB (each) | same output |" % a.workers)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %.1f | %d | %.2f | %.0f | %s | %s | %.2f (%.2f / %.2f / %.2f) | %.0f | %s | %s | %s | %s |" % (
            r["ranks"], r["MB"], r["ops"], r["c_s"], r["c_mib"],
            "%.2f" % r["cj_s"] if "cj_s" in r else "-", "%.0f" % r["cj_mib"] if "cj_s" in r else "-",
            r["py_s"], r["align_s"], r["load_s"],
            r["stats_s"], r["py_mib"],
            "%.2f" % r["dask_s"] if "dask_s" in r else "-",
            "%.0f" % r["dask_client_mib"] if "dask_s" in r else "-",
            ", ".join("%.0f" % m for m in r["dask_worker_mib"]) if "dask_s" in r else "-",
            "yes" if r["same_py"] and r.get("same_dask", True) and r.get("same_j", True) else "NO"))


if __name__ == "__main__":
    main()
