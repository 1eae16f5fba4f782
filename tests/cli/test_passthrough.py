# SPDX-License-Identifier: Apache-2.0
"""ncclscope_bench_passthrough: the switch nccl-bench --ab flips. While it is
on (1: the empty plugin's behaviour; 2: the floor plugin's, a timestamp and
a private line per call), starts record nothing and their token's stop/state
return without recording; 3 records as usual without the watchdog's slab;
out-of-range values are refused; an
event started before it keeps its stop; switched off, recording goes on.
The trace must hold exactly the three Colls and the ProxyOp started outside
it (or under 3), each with its stop, and no invalid-handle count."""
import os
import re
import subprocess
import sys

from nsctest import check, convert, env_paths, events, run, tmpdir, trace_files


def main():
    cli, plugin, _ = env_paths()
    d = tmpdir()
    # KernelCh in the mask (none is started): without it a Coll of a comm
    # that has shown no ProxyOp takes no slab slot, and the driver checks
    # that mode 0 gives one and mode 3 does not
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_EVENTS="Coll,ProxyOp,KernelCh")
    p = subprocess.run([sys.argv[1], "--plugin", plugin], env=env, capture_output=True, text=True)
    check(p.returncode == 0 and "handles ok" in p.stdout, "driver: %s %s" % (p.stdout, p.stderr))
    files = trace_files(d)
    check(len(files) == 1, "one trace file: %s" % files)
    info = run([cli, "info", files[0]]).stdout
    check(re.search(r"^events by type\s+Coll=3\s+ProxyOp=1\s*$", info, re.M),
          "three Coll and the ProxyOp kept:\n" + info)
    check(re.search(r"\(start 4, stop 4, state 0\)", info), "four starts, four stops:\n" + info)
    doc, _ = convert(files, os.path.join(d, "t.json"))
    po = [e for e in events(doc) if e["name"] == "ProxyOp"]
    check(len(po) == 1 and po[0]["args"].get("parent") in (None, 0),
          "the ProxyOp under a passthrough parent has no parent: %s" % po)
    check(re.search(r"^invalid calls\s+0 unknown contexts, 0 unknown handles", info, re.M),
          "the token's stop and state are not counted as unknown handles:\n" + info)
    print("ok")


if __name__ == "__main__":
    main()
