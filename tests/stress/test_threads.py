# SPDX-License-Identifier: Apache-2.0
"""Threads that come and go keep every record; a thread that starts while
every state is taken attaches once one frees (thread churn and late
threads). Runs in the stress suite, also under TSan."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

churn_exe, plugin, cli = sys.argv[1:4]
n_threads, n_events = 10000, 10
d = tempfile.mkdtemp(prefix="nsc-threads-")
env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MAX_THREADS="4", NCCLSCOPE_EVENTS="all")
p = subprocess.run([churn_exe, "--plugin", plugin, "--churn", str(n_threads), "--events", str(n_events)],
                   env=env, capture_output=True, text=True, timeout=600)
if p.returncode != 0:
    print("FAIL: thread_churn exited %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    sys.exit(1)
late_tid = int(re.search(r"late_tid (\d+)", p.stdout).group(1))
files = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".nsc")]
info = subprocess.run([cli, "info", *files], capture_output=True, text=True).stdout
failed = passed = 0


def check(cond, msg):
    global failed, passed
    print(("ok: " if cond else "FAIL: ") + msg)
    failed += not cond
    passed += bool(cond)


starts = int(re.search(r"GroupApi=(\d+)", info).group(1))
# churners + one event per sleeper + the late thread's kept events
check(starts == n_threads * n_events + 3 + n_events,
      "%d GroupApi events kept of %d" % (starts, n_threads * n_events + 3 + n_events))
m = re.search(r"dropped\s+(\d+) records \((\d+) from threads over the limit\)", info)
check(m and int(m.group(1)) == 10 and int(m.group(2)) == 10,
      "only the late thread's 5 events before a state freed are dropped: %s" % (m.group(0) if m else info))
late = re.search(r"tid %d \S+: (\d+) records in file" % late_tid, info)
check(late and int(late.group(1)) >= 2 * n_events + 1, "the late thread attached: %s" % (late.group(0) if late else info))
check(len(re.findall(r"^  #\d+ tid", info, re.M)) <= 4, "at most 4 thread states")
# 1,100 sessions in one process (init/finalize cycles): every one initialises
# and leaves its own complete file (the old naming stopped at 1,000)
d2 = tempfile.mkdtemp(prefix="nsc-cycles-")
p = subprocess.run([churn_exe, "--plugin", plugin, "--cycles", "1100"], capture_output=True, text=True,
                   env=dict(os.environ, NCCLSCOPE_DIR=d2), timeout=600)
files = [f for f in os.listdir(d2) if f.endswith(".nsc")]
check(p.returncode == 0 and "initialised 1100" in p.stdout, "1100 init/finalize cycles: %s%s" % (p.stdout, p.stderr[-500:]))
check(len(files) == 1100, "one file per session: %d" % len(files))
last = max(files, key=lambda f: os.path.getmtime(os.path.join(d2, f)))
info2 = subprocess.run([cli, "info", os.path.join(d2, last)], capture_output=True, text=True).stdout
check("closed cleanly  yes" in info2 and "GroupApi=1" in info2, "the last session's file: %s" % info2)
print("%d passed, %d failed" % (passed, failed))
if not failed:  # kept for a post-mortem when something failed
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(d2, ignore_errors=True)
sys.exit(1 if failed else 0)
