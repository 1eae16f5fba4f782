# SPDX-License-Identifier: Apache-2.0
"""70,000 distinct marks (marks_flood.c) do not take the string table's
room for NCCL's own names: collectives whose function, datatype, algorithm
and protocol the table first sees after the flood are named in the trace,
not "?". The marks past the user's part read "?", each is counted in
STATS (string_overflow, `ncclscope info`'s "strings" line), and the log
says so once.

usage: test_string_reserve.py MARKS_FLOOD"""
import os
import re
import subprocess
import sys

from nsctest import *

NMARKS = 70000
USER_IDS = 65536 - 2 - 8192  # the ids marks may take (intern.h)


def main():
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_EVENTS="Coll,KernelCh")
    p = subprocess.run([sys.argv[1], plugin, str(NMARKS)], env=env, capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0 and "done" in p.stdout, "driver: %s %s" % (p.stdout, p.stderr[-2000:]))
    check("marks %d ok %d" % (NMARKS, NMARKS) in p.stdout, "every mark is recorded: %s" % p.stdout)
    n = p.stderr.count("room for marks and Python names is full")
    check(n == 1, "the refusal is logged once, not %d times:\n%s" % (n, p.stderr[-2000:]))
    files = trace_files(d)
    check(len(files) == 1, files)
    info = run([cli, "info", files[0]]).stdout
    m = re.search(r"strings\s+(\d+) past the plugin's table", info)
    refused = int(m.group(1)) if m else -1
    # the marks past the user's part, and nothing else (NCCL's names fit)
    check(NMARKS - USER_IDS - 4 <= refused <= NMARKS - USER_IDS,
          "refused marks counted in STATS: %d (want about %d):\n%s" % (refused, NMARKS - USER_IDS, info))
    doc, _ = convert(files, os.path.join(d, "t.json"))
    rs = [e for e in events(doc) if e["name"].startswith("ReduceScatter")]
    check(len(rs) == 3, "3 ReduceScatter named in the trace: %s" %
          sorted({e["name"] for e in events(doc)})[:10])
    for e in rs:
        a = e["args"]
        check(a.get("datatype") == "ncclBfloat16" and a.get("algo") == "NVLS" and a.get("proto") == "LL128",
              "NCCL's names after the flood: %s" % a)
    marks = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "i" and e["name"].startswith("flood ")]
    q = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e["name"] == "?"]
    check(len(marks) + refused == NMARKS and len(q) >= refused,
          "marks kept %d, refused %d, shown ? %d" % (len(marks), refused, len(q)))
    print("ok: %d marks, %d refused and counted; NCCL's names after them intact" % (NMARKS, refused))


main()
