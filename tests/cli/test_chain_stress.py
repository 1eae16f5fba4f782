# SPDX-License-Identifier: Apache-2.0
"""Chaining, metrics and the ops thread under many threads (suite stress,
run under TSan by tests/run.sh): 8 threads, each its own communicator, run
fake_nccl's synthetic operations through ncclscope with a chained counting
plugin and metrics every second, while a shell keeps appending stop, start,
mask and mark commands to the control file. The chained plugin must receive
every event the generator made (7 per operation) with valid handles and
parents, whatever ncclscope recorded, kept or dropped."""
import json
import os
import re
import sys
import threading
import time

from nsctest import *

OPS, THREADS = 20000, 8


def main():
    counter = sys.argv[1]
    cli, plugin, fake = env_paths()
    d = tmpdir()
    out = os.path.join(d, "counts.json")
    done = threading.Event()

    def shell():
        while not done.is_set():
            with open(os.path.join(d, "control"), "a") as f:
                f.write("stop\nmark toggled\nstart\nmask all,-kernelch\nmask all\n")
            time.sleep(0.05)

    t = threading.Thread(target=shell)
    t.start()
    try:
        run([fake, "--plugin", plugin, "--synthetic", str(OPS), "--threads", str(THREADS)],
            env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_CHAIN": counter,
                 "CHAIN_COUNTER_OUT": out, "NCCLSCOPE_METRICS_DIR": os.path.join(d, "m"),
                 "NCCLSCOPE_METRICS_SECONDS": "1", "NCCLSCOPE_METRICS_KEEP": "1",
                 "NCCLSCOPE_EXIT_WAIT_MS": "120000"})  # TSan is slow: never abandon here
    finally:
        done.set()
        t.join()
    c = json.load(open(out))
    n = OPS * THREADS
    want = {k: n for k in ("GroupApi", "CollApi", "Group", "Coll", "KernelCh", "ProxyOp", "ProxyStep")}
    check(c["start"] == want, "chained plugin got %s" % c["start"])
    # A stop or state whose handle the table lost (counted in the trace's
    # STATS) is not forwarded: what is missing must be counted.
    missing = 7 * n - sum(c["stop"].values()) + 3 * n - sum(c["state"].values())
    lost = 0
    for f in trace_files(d):
        m = re.search(r"chained plugin\s+(\d+) calls", run([cli, "info", f]).stdout)
        lost += int(m.group(1)) if m else 0
    check(0 <= missing <= lost, "%d stops/states missing at the chained plugin, %d counted lost" % (missing, lost))
    for k in ("bad_handle", "double_stop", "bad_parent", "full"):
        check(c[k] == 0, "%s: %d" % (k, c[k]))
    check(c["inits"] == c["finalizes"] == THREADS, "inits/finalizes %s" % c)
    prom = [f for f in os.listdir(os.path.join(d, "m")) if f.endswith(".prom")]
    check(len(prom) == 1, "metrics file: %s" % prom)
    print("ok: %d events through the chained plugin from %d threads" % (7 * n, THREADS))


main()
