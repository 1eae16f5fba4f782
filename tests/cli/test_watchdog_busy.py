# SPDX-License-Identifier: Apache-2.0
"""The hang watchdog beside a busy communicator (NCCLSCOPE_HANG_SECONDS=1):
one comm keeps 4,200 operations in flight and progresses (its oldest
completes every 10 ms), another has one operation that never completes.
The watchdog must report the hung comm within seconds, once, and not the
busy one; the HANG block marks it stuck, holds its operation and counts
the busy comm's 4,200 in flight.

usage: test_watchdog_busy.py WATCHDOG_DRIVER"""
import os
import subprocess
import sys
import time

from nsctest import *
from test_watchdog import WATCHDOG_LINE, hang_blocks, wait_lines

HUNG_ID = 0x5744000B
BUSY = 4200


def main():
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HANG_SECONDS="1",
               NCCLSCOPE_EVENTS="Coll,KernelCh,ProxyOp,ProxyStep")
    err = os.path.join(d, "stderr")
    p = subprocess.Popen([sys.argv[1], "--plugin", plugin, "--mode", "busy"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    check(p.stdout.readline().strip() == "stalled", "the driver did not start its operations")
    t0 = time.time()
    # a second for the stall, up to 0.1 s for a scan; more on a loaded machine
    counts = wait_lines([err], 1, timeout=8)
    took = time.time() - t0
    time.sleep(1.2)  # the busy comm keeps going: it must not be reported
    p.stdin.write("go\n")
    p.stdin.flush()
    out, _ = p.communicate(timeout=60)
    with open(err) as f:
        text = f.read()
    check(p.returncode == 0 and "done" in out, "driver: %s %s" % (out, text))
    lines = [l for l in text.splitlines() if WATCHDOG_LINE in l]
    check(counts[0] >= 1, "the hung comm beside %d operations in flight was not reported in %.1f s:\n%s"
          % (BUSY, took, text))
    check(len(lines) == 1 and ("comm %016x" % HUNG_ID) in lines[0] and
          "1 operation(s) in flight" in lines[0] and "AllReduce seq 0" in lines[0],
          "one line, for the hung comm alone: %s" % lines)
    files = trace_files(d)
    check(len(files) == 1, files)
    hb = hang_blocks(files[0])
    check(len(hb) == 1, "one HANG block: %d" % len(hb))
    hd, comms, ops, _ = hb[0]
    stuck = [c for c in comms if c[11]]
    check(len(stuck) == 1 and stuck[0][2] == HUNG_ID and stuck[0][8] == 1,
          "the hung comm is the stuck one: %s" % comms)
    busy = [c for c in comms if not c[11]]
    # (the driver completes one and starts the next: a scan between sees one fewer)
    check(len(busy) == 1 and BUSY - 1 <= busy[0][8] <= BUSY, "the busy comm's operations counted: %s" % comms)
    check(any(o[5] == stuck[0][0] and o[1] == 0 for o in ops),
          "the hung comm's operation is in the block: %s" % [o[:6] for o in ops[:4]])
    check(hd["nops"] + hd["left_out"] >= BUSY, "every operation in flight seen: %s" % hd)
    print("ok: the hung comm reported in %.1f s beside %d operations in flight" % (took, BUSY))


main()
