# SPDX-License-Identifier: Apache-2.0
"""Run-time control (include/ncclscope.h, the control files): stop records
nothing until start, even a call NCCL makes just after the stop; set_mask
and "mask" change what NCCL is asked for through the pointer it gave init;
marks reach the trace with their text, from the API and from a file; dump
says there is no flight mode. control_driver.c does the calls and checks
the mask NCCL re-reads; here the trace it leaves is checked."""
import collections
import re
import sys

from nsctest import *

N = 50


def main():
    driver = sys.argv[1]
    cli, plugin, _ = env_paths()
    d = tmpdir()
    out = run([driver, plugin], env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_FLUSH_MS": "50"}).stdout
    phases = {int(m.group(1)): (int(m.group(2), 16), int(m.group(3)))
              for m in re.finditer(r"phase (\d) mask (0x[0-9a-f]+) delivered (\d+)", out)}
    check(sorted(phases) == [1, 2, 3, 4, 5, 6] and "done" in out, out)
    check(phases[2] == (0, 0) and phases[5] == (0, 0), "stopped phases delivered events: %s" % out)
    check(phases[4] == (0x2, N), "set_mask(Coll): %s" % (phases[4],))
    check(phases[1] == phases[3] == phases[6] and phases[1][1] == 5 * N, out)

    files = trace_files(d)
    check(len(files) == 1, "one trace: %s" % files)
    info = run([cli, "info", files[0]]).stdout
    types = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", info.split("events by type")[1].split("\n")[0]))
    want = {"Coll": 4 * N, "CollApi": 3 * N, "GroupApi": 3 * N, "Group": 3 * N, "ProxyOp": 3 * N}
    check(types == want, "events by type %s, want %s" % (types, want))
    # one stop per event: NCCL stops its last CollApi handle again at every
    # call while CollApi is out of the mask (control_driver.c), which must
    # not reach the trace
    rec = re.search(r"records\s+\d+ \(start (\d+), stop (\d+)", info)
    check(rec and rec.group(1) == rec.group(2) == str(sum(want.values())), "starts and stops: %s" % info)
    m = re.search(r"marks\s+(\d+)\n((?:  #.*\n)*)", info)
    check(m and m.group(1) == "3", "marks: %s" % info)
    check(m.group(2) == '  #1 "phase one"\n  #2 "phase three"\n  #3 "from a file"\n', m.group(2))

    doc, _ = convert(files, os.path.join(d, "t.json"))
    names = collections.Counter(e["args"].get("func") for e in events(doc) if e["cat"] == "Coll")
    check(names == {"AllReduce": 4 * N}, "Coll events: %s (the straggler after stop must not be recorded)" % names)
    marks = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "i" and e["name"] in
             ("phase one", "phase three", "from a file")]
    check(marks == ["phase one", "phase three", "from a file"], "marks in the JSON: %s" % marks)
    print("ok: stop/start, set_mask, marks and control files")


main()
