# SPDX-License-Identifier: Apache-2.0
"""The Perfetto protobuf writer against the JSON writer, on the real
4-process H200 trace: the same slices (names, times, durations, tracks'
processes and threads), instants, counters and flows, with typed arguments;
the protobuf is checked with a wire-format reader (pftrace_read.py), since
Perfetto's own tools are not available offline."""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402
import pftrace_read  # noqa: E402


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()
    js, pf = os.path.join(d, "t.json"), os.path.join(d, "t.pftrace")
    run([cli, "convert", src, "-o", js])
    run([cli, "convert", src, "-o", pf])
    doc = json.load(open(js))
    tracks, events = pftrace_read.read(pf)

    # slices: JSON X and b events vs protobuf SLICE_BEGIN/END pairs
    jslices = collections.Counter()
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            jslices[(e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))] += 1
    ends = {e["id"]: e["ts"] for e in doc["traceEvents"] if e["ph"] == "e"}
    for e in doc["traceEvents"]:
        if e["ph"] == "b":
            jslices[(e["name"], round(e["ts"] * 1000), round((ends[e["id"]] - e["ts"]) * 1000))] += 1
    open_by_track = collections.defaultdict(list)
    pslices = collections.Counter()
    for e in events:
        if e.get("type") == 1:
            open_by_track[e["track"]].append(e)
        elif e.get("type") == 2:
            b = open_by_track[e["track"]].pop()
            check(e["ts"] >= b["ts"], "slice ends after it begins")
            pslices[(b["name"], b["ts"], e["ts"] - b["ts"])] += 1
    check(not any(open_by_track.values()), "every SLICE_BEGIN has its END")
    # JSON times are microseconds with 3 decimals: compare to the ns
    check(sum(jslices.values()) == sum(pslices.values()), "slice counts %d vs %d"
          % (sum(jslices.values()), sum(pslices.values())))
    diff = jslices - pslices
    check(len(diff) <= sum(jslices.values()) // 1000, "same slices: %s" % list(diff.items())[:5])

    # every slice's track belongs to a named process/thread
    def thread_of(uuid):
        t = tracks[uuid]
        while t["kind"] == "child":
            t = tracks[t["parent"]]
        return t
    for e in events:
        if e.get("type") in (1, 3):
            t = thread_of(e["track"])
            check(t["kind"] == "thread", "events sit on thread tracks (or their lanes)")
    pnames = {t["pid"]: t["name"] for t in tracks.values() if t["kind"] == "process" and t["name"]}
    jpnames = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
               if e["ph"] == "M" and e["name"] == "process_name"}
    check(pnames == jpnames, "process names: %s vs %s" % (pnames, jpnames))

    # typed arguments, counters, flows
    colls = [e for e in events if e.get("type") == 1 and e.get("cat") == "Coll"]
    check(colls and all(isinstance(e["args"]["seqNumber"], int) and isinstance(e["args"]["algo"], str)
                        for e in colls), "Coll args typed: %s" % colls[0]["args"])
    counters = [e for e in events if e.get("type") == 4]
    jcounters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    check(len(counters) == len(jcounters), "counters %d vs %d" % (len(counters), len(jcounters)))
    outs = collections.Counter(f for e in events for f in e["flows_out"])
    ins = collections.Counter(f for e in events for f in e["flows_in"])
    check(outs and set(outs) == set(ins) and len(outs) == doc["metadata"]["ncclscope"]["flows"],
          "flows: %d out, %d in, %d in JSON" % (len(outs), len(ins), doc["metadata"]["ncclscope"]["flows"]))
    meta = [e for e in events if e.get("name") == "ncclscope metadata"]
    check(len(meta) == 1 and "files" in meta[0]["args"], "run metadata carried")
    sj, sp = os.path.getsize(js), os.path.getsize(pf)
    check(sp * 3 < sj * 2, "protobuf smaller than JSON: %d vs %d bytes" % (sp, sj))
    print("ok: %d slices, %d counters, %d flows identical in JSON and protobuf; %d vs %d bytes (%.0f %%)"
          % (sum(pslices.values()), len(counters), len(outs), sj, sp, 100.0 * sp / sj))


if __name__ == "__main__":
    main()
