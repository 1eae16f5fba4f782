# SPDX-License-Identifier: Apache-2.0
"""Flight mode's trigger files against a hostile machine: a directory whose
stat and unlink stall (an LD_PRELOAD shim) must not cost records, since
only the watcher thread looks at it; a dangling dump-all link is never
followed when the watchdog touches dump-all; dump-now written in a loop
gives at most one dump per 10 s."""
import os
import re
import signal
import subprocess
import sys
import time

from nsctest import *

churn, hang_rank, shim = sys.argv[1], sys.argv[2], sys.argv[3]


def flight_env(d, **kw):
    return dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", **kw)


def kept_of(cli, f):
    out = run([cli, "info", f]).stdout
    check("closed cleanly  yes" in out and "damage          none" in out, "%s:\n%s" % (f, out))
    m = re.search(r"GroupApi=(\d+)", out)
    return int(m.group(1)) if m else 0


def one_run(cli, plugin, stall_ms):
    d = tmpdir()
    os.makedirs(d, exist_ok=True)
    # A sanitized build's runtime must come first (the shim only wraps
    # libc). With the stall, the session's end leaves the watcher behind in
    # the stalled directory, its state with it, by design: no leak report.
    asan = os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    if stall_ms:
        asan += ":detect_leaks=0"
    env = flight_env(d, NCCLSCOPE_FLIGHT_MB="256", NCCLSCOPE_FLUSH_MS="50", NSC_STALL_DIR=d,
                     NSC_STALL_MS=str(stall_ms), LD_PRELOAD=shim, ASAN_OPTIONS=asan)
    p = subprocess.run([churn, "--plugin", plugin, "--stream", "3"], env=env, capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr[-2000:]))
    total = int(re.search(r"events (\d+)", p.stdout).group(1))
    files = trace_files(d)
    check(len(files) == 1, "the end-of-session dump: %s" % files)
    return kept_of(cli, files[0]), total


def stalled_directory(cli, plugin):
    kept0, total0 = one_run(cli, plugin, 0)
    kept, total = one_run(cli, plugin, 4000)
    check(kept0 == total0, "no stall: %d of %d records" % (kept0, total0))
    check(kept == total, "stat/unlink of the directory stalling 4 s: %d of %d records (%.1f %% lost)"
          % (kept, total, 100.0 * (total - kept) / max(total, 1)))
    print("ok: a stalling directory costs no records (%d of %d; %d of %d without the stall)"
          % (kept, total, kept0, total0))


def dangling_dump_all(cli, plugin):
    d = tmpdir()
    os.makedirs(d, exist_ok=True)
    target = os.path.join(d, "planted-target")
    os.symlink(target, os.path.join(d, "dump-all"))
    env = flight_env(d, NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HANG_SECONDS="1",
                     NCCLSCOPE_EVENTS="Coll,P2p,KernelCh,ProxyOp,ProxyStep")
    p = subprocess.Popen([hang_rank, "--plugin", plugin, "--rank", "0", "--nranks", "2", "--ops", "6",
                          "--mode", "p2p"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    check(p.stdout.readline().strip() == "hung", "the rank did not reach its hang")
    deadline = time.time() + 20
    while not trace_files(d) and time.time() < deadline:  # the watchdog's dump
        time.sleep(0.1)
    time.sleep(1.0)  # the watcher's touch of dump-all comes with it
    p.send_signal(signal.SIGKILL)
    p.wait()
    check(trace_files(d), "the watchdog fired and dumped: %s" % os.listdir(d))
    check(not os.path.exists(target) and not os.path.lexists(target),
          "touching dump-all created the dangling link's target %s" % target)
    check(os.path.islink(os.path.join(d, "dump-all")), "dump-all link left as it was")
    print("ok: a dangling dump-all link is not followed")


def dump_now_loop(cli, plugin):
    d = tmpdir()
    os.makedirs(d, exist_ok=True)
    env = flight_env(d, NCCLSCOPE_FLIGHT_MB="1", NCCLSCOPE_FLUSH_MS="20")
    p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "6"], env=env, stdout=subprocess.PIPE,
                         text=True)
    t0 = time.time()
    n = 0
    while time.time() - t0 < 5:
        try:
            open(os.path.join(d, "dump-now"), "w").close()
            n += 1
        except OSError:
            pass
        time.sleep(0.03)
    p.communicate(timeout=60)
    check(p.returncode == 0, "exit %d" % p.returncode)
    files = trace_files(d)
    # a dump at once, the merged rest 10 s later or at the end of the session
    check(2 <= len(files) <= 3, "%d dump-now files in 5 s gave %d dumps: %s" % (n, len(files), files))
    print("ok: %d dump-now files in 5 s: %d dumps" % (n, len(files)))


def main():
    cli, plugin, _ = env_paths()
    cases = sys.argv[4:] or ["dangling_dump_all", "dump_now_loop", "stalled_directory"]
    for c in cases:
        globals()[c](cli, plugin)


main()
