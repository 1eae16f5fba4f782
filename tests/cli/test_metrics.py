# SPDX-License-Identifier: Apache-2.0
"""Live metrics with the real thing: the 4-process H200 job (tests/data/
h200x4_procs) is replayed through ncclscope with NCCLSCOPE_METRICS_DIR set,
one process per rank; Debian's prometheus-node-exporter serves the files
through its textfile collector and prometheus scrapes it (both on
127.0.0.1, random free ports, temporary directories); the values read back
through Prometheus's HTTP API must equal what the traces hold: operations
per operation name, all of them completed with a GPU latency, none in
flight, no drops. `promtool check metrics` must pass on every file, and a
process without NCCLSCOPE_METRICS_KEEP leaves no file behind.

Installs the two packages with apt-get when they are missing (root only);
skips with a message when that is impossible."""
import collections
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from nsctest import *

TOOLS = ("prometheus", "promtool", "prometheus-node-exporter")


def have_tools():
    return all(shutil.which(t) for t in TOOLS)


def ensure_tools():
    if have_tools():
        return True
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus",
                    "prometheus-node-exporter"], env=env, capture_output=True)
    if not have_tools():
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus",
                        "prometheus-node-exporter"], env=env, capture_output=True)
    return have_tools()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q}))
    with urllib.request.urlopen(url, timeout=5) as r:
        doc = json.load(r)
    check(doc.get("status") == "success", "query %s: %s" % (q, doc))
    return doc["data"]["result"]


def by_label(result, label):
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def trace_ops(files):
    """Coll and P2p operations per name in the traces."""
    d = tmpdir()
    doc, _ = convert(files, os.path.join(d, "t.json"))
    c = collections.Counter()
    for e in events(doc):
        if e["cat"] in ("Coll", "P2p"):
            c[e["args"]["func"]] += 1
    return c


def stop(p):
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    if not ensure_tools():
        print("SKIP: prometheus, promtool and prometheus-node-exporter are not installed and "
              "cannot be (Debian packages prometheus, prometheus-node-exporter; needs root)")
        sys.exit(SKIP)
    cli, plugin, _ = env_paths()
    work = tmpdir()
    textdir = os.path.join(work, "textfile")
    tracedir = os.path.join(work, "trace")
    sources = sorted(glob.glob(os.path.join(data_dir(), "h200x4_procs", "*.nsc")))
    check(len(sources) == 4, "the 4-process job: %s" % sources)

    # One replay per rank, each its own process and metrics file.
    started = time.time()
    for src in sources:
        run([cli, "replay", "--plugin", plugin, src],
            env={"NCCLSCOPE_DIR": tracedir, "NCCLSCOPE_EVENTS": "all",
                 "NCCLSCOPE_METRICS_DIR": textdir, "NCCLSCOPE_METRICS_SECONDS": "1",
                 "NCCLSCOPE_METRICS_KEEP": "1"})
    proms = sorted(glob.glob(os.path.join(textdir, "*.prom")))
    check(len(proms) == 4, "one metrics file per process: %s" % os.listdir(textdir))
    check(not glob.glob(os.path.join(textdir, "*.tmp")), "a temporary file was left behind")
    for f in proms:
        p = subprocess.run(["promtool", "check", "metrics"], stdin=open(f), capture_output=True, text=True)
        check(p.returncode == 0, "promtool check metrics %s: %s%s" % (f, p.stdout, p.stderr))

    # Without NCCLSCOPE_METRICS_KEEP the file is there while the process
    # runs (rewritten every second) and goes with it.
    gone = os.path.join(work, "gone")
    p = subprocess.Popen([env_paths()[2], "--plugin", plugin, "--synthetic", "3000000"],
                         env=dict(os.environ, NCCLSCOPE_DIR=os.path.join(work, "trace2"),
                                  NCCLSCOPE_EVENTS="coll", NCCLSCOPE_METRICS_DIR=gone,
                                  NCCLSCOPE_METRICS_SECONDS="1"),
                         stdout=subprocess.DEVNULL)
    seen = None
    while p.poll() is None and not seen:
        seen = glob.glob(os.path.join(gone, "*.prom"))
        time.sleep(0.05)
    p.wait()
    check(p.returncode == 0, "fake_nccl exited %d" % p.returncode)
    check(seen, "no metrics file appeared while the process ran")
    check(not glob.glob(os.path.join(gone, "*")), "metrics file left without KEEP: %s" % os.listdir(gone))

    want = trace_ops(trace_files(tracedir))
    check(sum(want.values()) == 4 * 352, "the traces hold %s" % want)

    ne = prom = None
    try:
        ne_port, prom_port = free_port(), free_port()
        ne = subprocess.Popen(["prometheus-node-exporter", "--web.listen-address=127.0.0.1:%d" % ne_port,
                               "--collector.disable-defaults", "--collector.textfile",
                               "--collector.textfile.directory=" + textdir],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "ne.log"), "w"))
        cfg = os.path.join(work, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: ncclscope\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % ne_port)
        prom = subprocess.Popen(["prometheus", "--config.file=" + cfg,
                                 "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
                                 "--web.listen-address=127.0.0.1:%d" % prom_port],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prom.log"), "w"))
        got = {}
        deadline = time.time() + 60
        while time.time() < deadline:
            check(ne.poll() is None and prom.poll() is None,
                  "an exporter exited: %s" % open(os.path.join(work, "ne.log")).read()[-2000:] +
                  open(os.path.join(work, "prom.log")).read()[-2000:])
            try:
                got = by_label(query(prom_port, "sum by (op) (ncclscope_operations_total)"), "op")
                if sum(got.values()) >= sum(want.values()):
                    break
            except OSError:
                pass  # not listening yet
            time.sleep(0.5)
        check(got == {k: float(v) for k, v in want.items()},
              "Prometheus says %s, the traces %s" % (got, dict(want)))
        # every operation completed with a GPU latency (KernelCh recorded)
        done = by_label(query(prom_port, "sum by (timing) (ncclscope_latency_seconds_count)"), "timing")
        check(done == {"gpu": float(sum(want.values()))}, "latency counts %s" % done)
        inf = by_label(query(prom_port, 'sum by (op) (ncclscope_latency_seconds_bucket{le="+Inf"})'), "op")
        check(inf == {k: float(v) for k, v in want.items()}, "+Inf buckets %s" % inf)
        ranks = by_label(query(prom_port, "sum by (rank) (ncclscope_operations_total)"), "rank")
        check(sorted(ranks) == ["0", "1", "2", "3"], "ranks %s" % ranks)
        flight = query(prom_port, "sum(ncclscope_operations_in_flight)")
        check(len(flight) == 1 and float(flight[0]["value"][1]) == 0, "in flight %s" % flight)
        drops = query(prom_port, "sum(ncclscope_dropped_records_total)")
        check(len(drops) == 1 and float(drops[0]["value"][1]) == 0, "drops %s" % drops)
        # bus bandwidth over any window from two counters; every operation
        # here has a GPU latency, so the bus bytes are the bytes times
        # nccl-tests' factors (4 ranks: AllReduce 2(n-1)/n = 1.5, AllGather
        # n x (n-1)/n = 3, Broadcast 1)
        bw = query(prom_port, "ncclscope_gpu_bus_bytes_total / ncclscope_gpu_seconds_total")
        check(bw and all(float(r["value"][1]) > 0 for r in bw), "bus bandwidth %s" % bw[:3])
        ratio = query(prom_port, "ncclscope_gpu_bus_bytes_total / ncclscope_bytes_total")
        factors = {"AllReduce": 1.5, "AllGather": 3.0, "ReduceScatter": 3.0, "Broadcast": 1.0,
                   "Reduce": 1.0, "Send": 1.0, "Recv": 1.0}
        check(ratio and all(abs(float(r["value"][1]) - factors[r["metric"]["op"]]) < 1e-9
                            for r in ratio if float(r["value"][1]) == float(r["value"][1])),
              "bus bytes / bytes %s" % [(r["metric"]["op"], r["value"][1]) for r in ratio])
        # the small operations of this job take microseconds on the GPU:
        # buckets from 1 us tell them apart
        small = query(prom_port, 'sum(ncclscope_latency_seconds_bucket{le="1e-06"})')
        check(small, "no 1 us bucket")
        # everything enqueued completed, per comm, rank and operation
        enq = query(prom_port, "ncclscope_last_enqueued_seq")
        behind = query(prom_port, "ncclscope_last_enqueued_seq - ncclscope_last_completed_seq != 0")
        check(enq and not behind, "seqNumbers: enqueued %s, not completed %s" % (enq[:3], behind))
        now = time.time()
        ts = query(prom_port, "ncclscope_last_completion_timestamp_seconds")
        check(ts and all(started - 5 <= float(r["value"][1]) <= now for r in ts),
              "completion timestamps %s, the replays ran from %.0f to %.0f" % (ts[:3], started, now))
        info = query(prom_port, "ncclscope_build_info")
        check(len(info) == 4 and all(r["metric"].get("version") for r in info), "build info %s" % info)
        errs = query(prom_port, "node_textfile_scrape_error")
        check(errs and float(errs[0]["value"][1]) == 0, "node-exporter could not read the files: %s" % errs)
    finally:
        stop(prom)
        stop(ne)
    print("ok: %d operations through node-exporter and Prometheus equal the traces" % sum(want.values()))


main()
