# SPDX-License-Identifier: Apache-2.0
"""Flight dumps are bounded: the dump signal sent in a loop gives at most
one dump per second (the requests in between merged into the next dump,
said in its log line), and NCCLSCOPE_MAX_MB holds the dumps' total:
a dump that would pass it is refused, logged once, and the session's end
says how many were refused.

usage: test_dump_limits.py THREAD_CHURN"""
import os
import signal
import subprocess
import sys
import time

from nsctest import *

churn = sys.argv[1]


def signal_loop(d, seconds, **kw):
    """A job recording for `seconds` + 1 while SIGUSR2 comes every 20 ms
    for `seconds`; returns (dump files, stderr)."""
    _, plugin, _ = env_paths()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", NCCLSCOPE_FLIGHT_MB="1",
               NCCLSCOPE_DUMP_SIGNAL="USR2", NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HOST_LOG="1", **kw)
    err = os.path.join(d, "stderr")
    p = subprocess.Popen([churn, "--plugin", plugin, "--stream", str(seconds + 1)], env=env,
                         stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    time.sleep(0.5)  # the plugin is up (the signal's handler installed)
    t0 = time.time()
    n = 0
    while time.time() - t0 < seconds:
        p.send_signal(signal.SIGUSR2)
        n += 1
        time.sleep(0.02)
    took = time.time() - t0
    p.communicate(timeout=60)
    check(p.returncode == 0, "job exit %d" % p.returncode)
    with open(err) as f:
        text = f.read()
    return [f for f in trace_files(d)], text, n, took


def rate_limit():
    d = tmpdir()
    files, text, n, took = signal_loop(d, 3)
    # one dump a second while the signals come (the first at once), then
    # the merged rest, then the session's end
    most = int(took) + 3
    check(2 <= len(files) <= most, "%d signals in %.1f s gave %d dumps (at most %d): %s"
          % (n, took, len(files), most, files[:5]))
    check("merged into it: at most one dump per second" in text,
          "the merged requests are said in the log:\n%s" % text[-3000:])
    print("ok: %d dump signals in %.1f s: %d dumps" % (n, took, len(files)))


def size_cap():
    d = tmpdir()
    files, text, n, took = signal_loop(d, 4, NCCLSCOPE_MAX_MB="2")
    total = sum(os.path.getsize(f) for f in files)
    sizes = sorted(os.path.getsize(f) for f in files)
    # the cap, but for the growth of the window between two dumps
    check(files and total <= (2 << 20) + sizes[-1] // 2,
          "dumps take %d bytes for NCCLSCOPE_MAX_MB=2: %s" % (total, sizes))
    check(text.count("NCCLSCOPE_MAX_MB=2 reached") == 1,
          "the first refusal is logged once:\n%s" % text[-3000:])
    check(text.count("refused by NCCLSCOPE_MAX_MB=2 (the session's end included)") == 1,
          "the session's end says how many were refused:\n%s" % text[-3000:])
    print("ok: NCCLSCOPE_MAX_MB=2: %d dumps, %d bytes" % (len(files), total))


rate_limit()
size_cap()
