# SPDX-License-Identifier: Apache-2.0
"""Flight mode with NCCLSCOPE_DRAIN_US=10 s: the drainer sleeps 10 s between
passes when the rings are quiet, yet every way of asking for a dump wakes
it: dump-now (the watcher), the dump signal (its handler pokes an eventfd)
and the control file's "dump" (the control API) are each served within
about a second, not at the drainer's next pass. The job records little (a
burst, then one event every 50 ms), so the drainer does sleep.

usage: test_flight_wake.py THREAD_CHURN"""
import os
import signal
import subprocess
import sys
import time

from nsctest import *

LIMIT = 1.5  # seconds: a watcher period (100 ms) and a dump, on a loaded machine


def main():
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", NCCLSCOPE_FLIGHT_MB="1",
               NCCLSCOPE_DUMP_SIGNAL="USR2", NCCLSCOPE_FLUSH_MS="100", NCCLSCOPE_DRAIN_US="10000000")
    p = subprocess.Popen([sys.argv[1], "--plugin", plugin, "--trickle", "6"], env=env, stdout=subprocess.PIPE,
                         text=True)
    check(p.stdout.readline().strip() == "ready", "the driver did not start")
    time.sleep(0.5)

    def served(n, what):
        t0 = time.time()
        while len(trace_files(d)) < n and time.time() - t0 < 12:
            time.sleep(0.02)
        took = time.time() - t0
        check(len(trace_files(d)) >= n and took < LIMIT,
              "%s with NCCLSCOPE_DRAIN_US=10 s: dump %d after %.1f s (%s)" % (what, n, took, trace_files(d)))
        time.sleep(1.2)  # past the gap of one dump per second
        return took

    open(os.path.join(d, "dump-now"), "w").close()
    a = served(1, "dump-now")
    p.send_signal(signal.SIGUSR2)
    b = served(2, "the dump signal")
    with open(os.path.join(d, "control"), "a") as c:
        c.write("dump\n")
    c_ = served(3, "the control file's dump")
    out, _ = p.communicate(timeout=60)
    check("finalized" in out, out)
    check(p.returncode == 0, "job exit %d" % p.returncode)
    print("ok: dumps served in %.2f s (dump-now), %.2f s (signal), %.2f s (control) with a 10 s drain sleep"
          % (a, b, c_))


main()
