# SPDX-License-Identifier: Apache-2.0
"""kill -9 in the middle of a run: every flushed block converts, and a torn
tail gives a clear error (file, offset) and a non-zero exit."""
import os
import signal
import subprocess
import time

from nsctest import *


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    # small chunks: the file holds many blocks when it is killed, so tearing
    # the last one leaves the others
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_EVENTS="all", NCCLSCOPE_FLUSH_MS="50",
               NCCLSCOPE_CHUNK_KB="64")
    p = subprocess.Popen([fake, "--plugin", plugin, "--synthetic", "-1", "--threads", "2"], env=env,
                         stdout=subprocess.DEVNULL)
    # until a few chunks are on disk; looked at often: the fake host writes
    # megabytes a second, and a file ten times the size proves no more but
    # takes seconds to convert and parse as JSON
    deadline = time.time() + 20
    while time.time() < deadline:
        time.sleep(0.005)
        fs = trace_files(d)
        if fs and os.path.getsize(fs[0]) > 200000:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    f = trace_files(d)[0]
    size = os.path.getsize(f)
    check(size > 200000, "trace too small after the kill: %d bytes" % size)
    # As killed: all complete blocks convert; no END block, so events still
    # open show as unfinished.
    doc, p1 = convert([f], os.path.join(d, "killed.json"), ok=(0, 2))
    n_killed = len(events(doc))
    check(n_killed > 1000, "only %d events recovered" % n_killed)
    check(doc["metadata"]["ncclscope"]["files"][0]["complete"] == 0, "a killed trace cannot be complete")
    info = run([cli, "info", f], ok=(0, 2)).stdout
    check("closed cleanly  no" in info, info)
    # Tear the last block, as a kill during write(2) would.
    with open(f, "r+b") as fh:
        fh.truncate(size - 37)
    doc2, p2 = convert([f], os.path.join(d, "torn.json"), ok=(2,))
    check("offset" in p2.stderr and "truncated" in p2.stderr and f in p2.stderr, p2.stderr)
    n_torn = len(events(doc2))
    check(n_torn > 1000 and n_torn <= n_killed, "torn: %d events, killed: %d" % (n_torn, n_killed))
    print("ok: %d events after kill -9, %d after tearing the tail; error: %s" % (n_killed, n_torn, p2.stderr.splitlines()[0]))


main()
