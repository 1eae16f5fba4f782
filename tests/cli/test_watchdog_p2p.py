# SPDX-License-Identifier: Apache-2.0
"""A Send whose KernelCh stop was lost (NCCLSCOPE_HANG_SECONDS=1).

p2p-lost: four Sends of one comm, each a launch of its own; Send 0's
channel 0 stop never comes, Sends 1..3 finish. A comm's kernels run in
order, so Send 0 finished too: through the idle gap after them the
watchdog must stay silent (no log line, no HANG block) and `ncclscope hang`
must find nothing (the converter's rule is the watchdog's).

p2p-group: two Sends of one launch, Send 0's channel 0 stop lost, Send 1
finished: that proves nothing (a launch's channels run independently), so
the watchdog fires once and `hang` names Send 0.

usage: test_watchdog_p2p.py WATCHDOG_DRIVER"""
import json
import os
import subprocess
import sys

from nsctest import *
from test_watchdog import WATCHDOG_LINE, hang_blocks, wait_lines


def drive(mode):
    """Runs watchdog_driver in a mode; returns the CLI, the trace and the stderr text."""
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HANG_SECONDS="1",
               NCCLSCOPE_EVENTS="Coll,P2p,KernelCh,ProxyOp,ProxyStep")
    err = os.path.join(d, "stderr")
    p = subprocess.Popen([sys.argv[1], "--plugin", plugin, "--mode", mode], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    out = []
    for line in p.stdout:
        out.append(line)
        if line.strip() == "stalled":
            wait_lines([err], 1)
            p.stdin.write("go\n")
            p.stdin.flush()
    p.stdin.close()
    rc = p.wait(timeout=60)
    p.stdout.close()
    with open(err) as f:
        text = f.read()
    check(rc == 0 and out and out[-1].strip() == "done", "driver %s: %s %s" % (mode, out, text))
    files = trace_files(d)
    check(len(files) == 1, files)
    return cli, files[0], text


def main():
    cli, f, err = drive("p2p-lost")
    check(err.count(WATCHDOG_LINE) == 0,
          "a Send overtaken by later finished Sends of its comm is not hung:\n" + err)
    check(hang_blocks(f) == [], "no HANG block")
    r = run([cli, "hang", f, "--json"], ok=(0,))
    doc = json.loads(r.stdout)
    check(doc["hangs"] == [] and doc["overtaken"] == 1, "hang: %s" % doc)

    cli, f, err = drive("p2p-group")
    check(err.count(WATCHDOG_LINE) == 1, "a Send of the same launch proves nothing:\n" + err)
    hb = hang_blocks(f)
    check(len(hb) == 1 and len(hb[0][2]) == 1 and hb[0][2][0][4] == 0b10,
          "the HANG block holds Send 0, channel 1 done: %s" % [b[2] for b in hb])
    r = run([cli, "hang", f, "--json"], ok=(4,))
    doc = json.loads(r.stdout)
    check(len(doc["hangs"]) == 1 and doc["overtaken"] == 0, "hang: %s" % doc)
    print("ok: a lost KernelCh stop overtaken by later launches; none within one launch")


if __name__ == "__main__":
    main()
