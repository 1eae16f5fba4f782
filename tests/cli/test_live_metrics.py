# SPDX-License-Identifier: Apache-2.0
"""Live metrics' file, read directly (test_metrics.py goes through
node-exporter and Prometheus):

- operations: watchdog_driver's metrics mode records KernelCh and issues a
  Send to its own rank, a Recv of zero bytes and a Send of zero bytes to
  itself (NCCL gives these no KernelCh), then 50 AllReduces whose channels
  stop. While the process runs, the file must show nothing in flight (the
  three leave by the host rule, nccl/op_rules.h, with no latency: nothing
  but their enqueue was seen, and that is no latency), AllReduce's last
  enqueued and completed seqNumber 49, a last completion time of now, the
  AllReduces in the 1 us latency bucket, build info, and no
  ncclscope_seconds_since_last_completion;
- the file itself: links planted at the temporary and the final name in the
  metrics directory (writable by others, for node-exporter) are never
  followed, and under umask 077 the file is still readable by others (0644);
- a frozen metrics directory (stall_shim.so: open, mkostemp and rename
  block there) leaves the control files working: control_driver's stop and
  start through them are applied and its mark reaches the trace."""
import os
import re
import socket
import stat
import subprocess
import sys
import time

from nsctest import *


def parse(text):
    """{(name, frozenset(labels)): value} of a Prometheus text file."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
        check(m, "not a sample line: %r" % line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def pick(samples, name, **want):
    return [v for (n, l), v in samples.items()
            if n == name and all((k, str(x)) in l for k, x in want.items())]


def operations(driver, plugin):
    d = tmpdir()
    mdir = os.path.join(d, "metrics")
    os.makedirs(mdir)
    victim, victim2 = os.path.join(d, "victim"), os.path.join(d, "victim2")
    for v in (victim, victim2):
        with open(v, "w") as f:
            f.write("not yours\n")
    host = socket.gethostname()[:63]

    def plant():  # in the child, before exec: the pid is the driver's
        os.umask(0o077)
        stem = os.path.join(mdir, "%s-%d.prom" % (host, os.getpid()))
        os.symlink(victim, stem + ".tmp")
        os.symlink(victim2, stem)

    env = dict(os.environ, NCCLSCOPE_DIR=os.path.join(d, "trace"), NCCLSCOPE_EVENTS="all",
               NCCLSCOPE_METRICS_DIR=mdir, NCCLSCOPE_METRICS_SECONDS="1",
               NCCLSCOPE_METRICS_KEEP="1")
    p = subprocess.Popen([driver, "--plugin", plugin, "--mode", "metrics"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         preexec_fn=plant)
    try:
        line = p.stdout.readline()
        check(line.strip() == "waiting", "driver said %r" % line)
        prom = os.path.join(mdir, "%s-%d.prom" % (host, p.pid))
        deadline = time.time() + 20
        samples = {}
        while time.time() < deadline:
            if os.path.isfile(prom) and not os.path.islink(prom):
                samples = parse(open(prom).read())
                if (pick(samples, "ncclscope_operations_in_flight") == [0.0] and
                        pick(samples, "ncclscope_last_completed_seq", op="AllReduce") == [49.0]):
                    break
            time.sleep(0.1)
        now = time.time()
        p.stdin.write("go\n")
        p.stdin.flush()
    finally:
        out, _ = p.communicate(timeout=60)
    check(p.returncode == 0 and "done" in out, "driver exited %d: %s" % (p.returncode, out))
    check(samples, "no metrics file %s: %s" % (prom, os.listdir(mdir)))
    flight = pick(samples, "ncclscope_operations_in_flight")
    check(flight == [0.0], "in flight while the process runs: %s (a Send to itself and two "
          "zero-byte operations have no KernelCh)" % flight)
    check(pick(samples, "ncclscope_last_enqueued_seq", op="AllReduce") == [49.0] and
          pick(samples, "ncclscope_last_completed_seq", op="AllReduce") == [49.0],
          "seqNumbers: %s" % [k for k in samples if "seq" in k[0]])
    ts = pick(samples, "ncclscope_last_completion_timestamp_seconds")
    check(len(ts) == 1 and now - 30 < ts[0] <= now + 1, "last completion at %s, now %.0f" % (ts, now))
    check(not [k for k in samples if k[0] == "ncclscope_seconds_since_last_completion"],
          "ncclscope_seconds_since_last_completion is gone")
    # KernelCh 1000 -> 2000 ns: a microsecond on the GPU, told apart from
    # 10 us by the buckets from 1 us
    b = {le: pick(samples, "ncclscope_latency_seconds_bucket", op="AllReduce", timing="gpu", le=le)
         for le in ("1e-06", "2.5e-06", "1e-05")}
    check(len(b["1e-06"]) == 1 and b["2.5e-06"] == [50.0] and b["1e-05"] == [50.0],
          "AllReduce's buckets: %s" % b)
    host_done = sum(pick(samples, "ncclscope_latency_seconds_count", timing="host"))
    check(host_done == 0, "Send/Recv without KernelCh or ProxyOps given a latency: %s" % host_done)
    gs = pick(samples, "ncclscope_gpu_seconds_total", op="AllReduce")
    gb = pick(samples, "ncclscope_gpu_bus_bytes_total", op="AllReduce")
    # one rank: AllReduce's bus factor 2(n-1)/n is 0
    check(len(gs) == 1 and abs(gs[0] - 50e-6) < 1e-12 and gb == [0.0], "gpu counters %s %s" % (gs, gb))
    info = [l for (n, l) in samples if n == "ncclscope_build_info"]
    check(len(info) == 1 and dict(info[0]).get("version"), "build info: %s" % info)
    check(not [l for (n, l) in samples if n.startswith("ncclscope_operations") and
               dict(l).get("pid")], "a pid label on per-comm series")
    # the links were replaced, never followed
    for v in (victim, victim2):
        check(open(v).read() == "not yours\n", "%s was written through a link" % v)
    st = os.lstat(prom)
    check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644,
          "the file is %o under umask 077" % st.st_mode)
    left = [f for f in os.listdir(mdir) if not f.endswith(".prom") and f != os.path.basename(prom) + ".tmp"]
    check(not left, "temporary files left: %s" % left)


def frozen_dir(control_driver, shim, plugin):
    d = tmpdir()
    frozen = os.path.join(d, "frozen")
    release = os.path.join(d, "release")
    os.makedirs(os.path.join(d, "trace"))  # control_driver appends to its control file
    env = {"NCCLSCOPE_DIR": os.path.join(d, "trace"), "NCCLSCOPE_FLUSH_MS": "50",
           "NCCLSCOPE_METRICS_DIR": frozen, "NCCLSCOPE_METRICS_SECONDS": "1",
           "NCCLSCOPE_EXIT_WAIT_MS": "300", "STALL_DIR": frozen, "STALL_RELEASE": release,
           "LD_PRELOAD": shim, "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
           ":verify_asan_link_order=0"}
    t0 = time.time()
    p = run([control_driver, plugin], env=env, ok=(0, 1))
    took = time.time() - t0
    open(release, "w").close()
    check(p.returncode == 0, "with the metrics directory frozen, the control files did not act:\n%s%s"
          % (p.stdout, p.stderr))
    check("phase 5 mask 0x0 delivered 0" in p.stdout and "phase 6" in p.stdout, p.stdout)
    check(took < 30, "the process took %.1f s to end" % took)
    files = trace_files(os.path.join(d, "trace"))
    check(len(files) == 1, "one trace: %s" % files)
    info = run([env_paths()[0], "info", files[0]]).stdout
    check("from a file" in info, "the control file's mark is not in the trace: %s" % info)


def main():
    driver, control_driver, shim = sys.argv[1:4]
    _, plugin, _ = env_paths()
    operations(driver, plugin)
    frozen_dir(control_driver, shim, plugin)
    print("ok: live metrics' in flight, seqNumbers, timestamps, buckets; links not followed; "
          "control files alive under a frozen metrics directory")


main()
