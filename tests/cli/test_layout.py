# SPDX-License-Identifier: Apache-2.0
"""convert's default layout (docs/converter.md, "What convert draws"), on the
real 4-process H200 trace, in both formats:

- few tracks per rank: the operations track (a second one only where
  operations overlap on the GPU), the host API thread, the counters; at most
  8 per rank, where --detail draws operation lanes and a track per channel;
- slices nest on every track (JSON: X slices and thread instants contained in
  the slice open around them; protobuf: the END that Perfetto pairs with each
  BEGIN, in time order with the written order for equal times, is the one
  written with it), as Perfetto's model needs;
- each operation once, at its GPU time (the same as --detail's gpu_start_ts_us
  and gpu_us), its nested channels the same KernelCh slices as --detail's
  channel tracks, the last one ending at the operation's end;
- without GPU timers (a trace without KernelCh) operations are estimated, on
  one track, still nested."""
import collections
import decimal
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402
import pftrace_read  # noqa: E402

GPU = 0x40000000
OPS_LANES = 4
MAX_TRACKS = 8


def ns(x):
    """A JSON time (microseconds, 3 decimals, read as Decimal) in ns."""
    return int(decimal.Decimal(x) * 1000)


def load(path):
    with open(path) as f:
        return json.load(f, parse_float=decimal.Decimal)


def rank_pids(doc):
    return {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name" and " rank " in e["args"]["name"]}


def json_tracks(doc):
    """Per process, the tracks Perfetto makes of it: a thread's track where a
    slice or instant is drawn, a counter track per name, and for async slices
    as many tracks per name as are open at once."""
    tracks = collections.defaultdict(set)
    spans = collections.defaultdict(list)
    ends = {(e["cat"], e["id"]): e for e in doc["traceEvents"] if e["ph"] == "e"}
    for e in doc["traceEvents"]:
        if e["ph"] == "X" or (e["ph"] == "i" and e.get("s") == "t"):
            tracks[e["pid"]].add(("thread", e["tid"]))
        elif e["ph"] == "C":
            tracks[e["pid"]].add(("counter", e["name"]))
        elif e["ph"] == "b":
            spans[(e["pid"], e["name"])].append((ns(e["ts"]), ns(ends[(e["cat"], e["id"])]["ts"])))
    for (pid, name), s in spans.items():
        points = sorted([(a, 1) for a, _ in s] + [(b, -1) for _, b in s])
        depth = most = 0
        for _, d in points:
            depth += d
            most = max(most, depth)
        for k in range(most):
            tracks[pid].add(("async", name, k))
    return tracks


def json_nesting(doc):
    """Slices (X) and thread instants on one (pid, tid): each inside the slice
    open around its start. Returns the count of slices checked."""
    by = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
        elif e["ph"] == "i" and e.get("s") == "t":
            by[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]), e["name"]))
    n = 0
    for key, s in by.items():
        s.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for a, b, name in s:
            while stack and stack[-1][1] <= a:
                stack.pop()
            if stack and b > stack[-1][1]:
                check(False, "track %s: %s [%d, %d] reaches past %s [%d, %d]"
                      % (key, name, a, b, stack[-1][2], stack[-1][0], stack[-1][1]))
            stack.append((a, b, name))
            n += 1
    return n


def pf_process(tracks, uuid):
    t = tracks[uuid]
    while t.get("pid") is None and t.get("parent"):
        t = tracks[t["parent"]]
    return t.get("pid")


def pf_nesting(events):
    """What each track's slices are as written (a BEGIN, then its END) and as
    Perfetto reads them (in time order, the written order kept for equal
    times; an END closes the slice opened last): the same, and nested."""
    written = collections.defaultdict(list)
    open_ = collections.defaultdict(list)
    timeline = collections.defaultdict(list)
    for i, e in enumerate(events):
        if e.get("type") not in (1, 2):
            continue
        timeline[e["track"]].append((e["ts"], i, e))
        if e["type"] == 1:
            open_[e["track"]].append(e)
        elif e["type"] == 2:
            b = open_[e["track"]].pop()
            written[e["track"]].append((b["ts"], e["ts"], b["name"]))
    n = 0
    for track, evs in timeline.items():
        evs.sort(key=lambda x: (x[0], x[1]))
        stack, read = [], []
        for ts, _, e in evs:
            if e["type"] == 1:
                stack.append(e)
            else:
                check(stack, "track %x: an END with no slice open at %d" % (track, ts))
                b = stack.pop()
                read.append((b["ts"], ts, b["name"]))
        check(not stack, "track %x: slices left open" % track)
        check(sorted(read) == sorted(written[track]),
              "track %x: Perfetto pairs BEGIN/END otherwise than written: %s"
              % (track, sorted(set(read) ^ set(written[track]))[:4]))
        n += len(read)
    return n


def pf_tracks(tracks, events):
    used = collections.defaultdict(set)
    for e in events:
        if "track" in e:
            used[pf_process(tracks, e["track"])].add(e["track"])
    return used


def main():
    cli, _, _ = env_paths()
    d = tmpdir()
    src = os.path.join(data_dir(), "h200x4_procs")
    js, pf, det = (os.path.join(d, n) for n in ("t.json", "t.pftrace", "detail.json"))
    run([cli, "convert", src, "-o", js])
    run([cli, "convert", src, "-o", pf])
    run([cli, "convert", "--detail", src, "-o", det])
    doc, ddoc = load(js), load(det)
    ranks = rank_pids(doc)
    check(len(ranks) == 4, "4 ranks: %s" % ranks)
    check(doc["metadata"]["ncclscope"]["layout"] == "default"
          and ddoc["metadata"]["ncclscope"]["layout"] == "detail", "layouts in the metadata")

    # ---- tracks per rank ----
    tr = json_tracks(doc)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for pid in ranks:
        t = tr[pid]
        check(len(t) <= MAX_TRACKS, "rank %s: %d tracks in the JSON: %s" % (ranks[pid], len(t), sorted(t, key=str)))
        gpu = sorted(k[1] for k in t if k[0] == "thread" and k[1] >= GPU)
        check(gpu and gpu[0] == GPU and names[(pid, GPU)] == "GPU: NCCL operations"
              and len(gpu) <= OPS_LANES, "rank %s: operations tracks %s" % (ranks[pid], gpu))
        host = [k for k in t if k[0] == "thread" and k[1] < GPU]
        check(len(host) == 1, "rank %s: one host thread track: %s" % (ranks[pid], host))
    dtr = json_tracks(ddoc)
    check(all(len(dtr[pid]) > 40 for pid in ranks), "--detail keeps the lanes and channel tracks: %s"
          % [len(dtr[pid]) for pid in ranks])
    ptracks, pevents = pftrace_read.read(pf)
    pused = pf_tracks(ptracks, pevents)
    for pid in ranks:
        n = len(pused[pid])
        check(n == len(tr[pid]), "rank %s: %d tracks in the .pftrace, %d in the JSON: %s"
              % (ranks[pid], n, len(tr[pid]), sorted(ptracks[u]["name"] or "" for u in pused[pid])))
    print("ok: tracks per rank: %s (JSON and .pftrace; --detail: %s)"
          % ([len(tr[p]) for p in sorted(ranks)], [len(dtr[p]) for p in sorted(ranks)]))

    # ---- nesting on every track ----
    nj = json_nesting(doc)
    npf = pf_nesting(pevents)
    print("ok: nesting on every track: %d JSON slices and instants, %d .pftrace slices" % (nj, npf))

    # ---- operations at their GPU time, channels from --detail ----
    ev = doc["traceEvents"]
    ops = {e["args"]["id"]: e for e in ev if e["ph"] in ("X", "b") and e.get("tid", 0) >= GPU
           and e.get("cat") in ("GPU", "estimated", "enqueue")}
    comp = {e["args"]["id"]: e for e in ddoc["traceEvents"] if e.get("cat") == "completion"
            and e["ph"] in ("X", "b")}
    check(ops.keys() == comp.keys() and len(ops) == 4 * 352,
          "each operation once: %d drawn, %d in --detail" % (len(ops), len(comp)))
    measured = 0
    for i, o in ops.items():
        c = comp[i]["args"]
        if o["cat"] == "GPU":
            measured += 1
            check(ns(o["ts"]) == ns(c["gpu_start_ts_us"]) and ns(o["dur"]) == ns(c["gpu_us"]),
                  "operation %s at its GPU time: %s %s vs %s %s" % (i, o["ts"], o["dur"],
                                                                   c["gpu_start_ts_us"], c["gpu_us"]))
    check(measured == len(ops), "every operation of this trace has GPU timers: %d of %d" % (measured, len(ops)))
    chans = {e["args"]["id"]: e for e in ddoc["traceEvents"] if e.get("cat") == "KernelCh"
             and e["ph"] == "X" and e["tid"] >= GPU + 0x1000}
    nested = [e for e in ev if e.get("cat") == "KernelCh" and e["ph"] == "X"]
    check(nested and all(e["tid"] >= GPU for e in nested), "KernelCh only on the operations tracks")
    last_end = {}
    for e in nested:
        c = chans.get(e["args"]["id"])
        check(c is not None and (c["ts"], c["dur"], c["args"]["parent"]) == (e["ts"], e["dur"], e["args"]["parent"]),
              "nested KernelCh %s is --detail's %s" % (e["args"], c and c["args"]))
        o = ops[e["args"]["parent"]]
        check(e["pid"] == o["pid"] and e["tid"] == o["tid"], "KernelCh on its operation's track")
        last_end[o["args"]["id"]] = max(last_end.get(o["args"]["id"], 0), ns(e["ts"]) + ns(e["dur"]))
    check(all(v == ns(ops[i]["ts"]) + ns(ops[i]["dur"]) for i, v in last_end.items()),
          "the last nested channel ends where its operation ends")
    check(len(last_end) == len([o for o in ops.values() if o["ph"] == "X"]),
          "every operation on a track has a channel nested: %d of %d" % (len(last_end), len(ops)))
    check(not [e for e in ev if e.get("cat") in ("ProxyCtrl", "ProxyOp", "ProxyStep")],
          "no proxy thread events in the default layout")
    print("ok: %d operations at their GPU time, %d channels nested (of %d)" % (len(ops), len(nested), len(chans)))

    # ---- flows: enqueue -> GPU within a rank, collective chains across ----
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    check(starts and starts.keys() == ends.keys(), "flow ends pair up")
    enq = [i for i, e in starts.items() if e["name"] == "enqueue"]
    check(len(enq) >= len(ops) // 2 and all(starts[i]["tid"] < GPU <= ends[i]["tid"]
                                            and starts[i]["pid"] == ends[i]["pid"] for i in enq),
          "enqueue arrows from the host to the operations track: %d" % len(enq))
    chains = [i for i, e in starts.items() if e["name"] in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast")]
    check(chains and all(starts[i]["pid"] != ends[i]["pid"] for i in chains), "collective chains cross ranks")
    print("ok: %d enqueue arrows, %d collective chain arrows" % (len(enq), len(chains)))

    # ---- no GPU timers: estimated, one track, nested ----
    t2 = os.path.join(d, "ddp.json")
    run([cli, "convert", os.path.join(data_dir(), "torch_ddp_2rank.nsc"), "-o", t2])
    doc2 = load(t2)
    ops2 = [e for e in doc2["traceEvents"] if e.get("tid", 0) >= GPU and e["ph"] == "X"]
    check(ops2 and all(e["cat"] in ("estimated", "enqueue") for e in ops2), "no GPU timers: estimated")
    check({e["tid"] for e in ops2} == {GPU}, "one operations track: %s" % {e["tid"] for e in ops2})
    json_nesting(doc2)
    print("ok: %d operations without GPU timers on one track" % len(ops2))

    # ---- impossible GPU intervals: flagged on the operations track, left out ----
    _, plugin, fake = env_paths()
    td = os.path.join(d, "fake")
    run([fake, "--plugin", plugin, "--synthetic", "1000", "--bad-gpu-every", "10"],
        env={"NCCLSCOPE_DIR": td, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_RING_KB": "8192"})
    t3 = os.path.join(d, "fake.json")
    run([cli, "convert"] + [os.path.join(td, f) for f in sorted(os.listdir(td)) if f.endswith(".nsc")]
        + ["-o", t3])
    doc3 = load(t3)
    m = doc3["metadata"]["ncclscope"]["files"][0]
    flagged = [e for e in doc3["traceEvents"] if e.get("name") == "impossible GPU interval"]
    check(len(flagged) == 99 == m["gpu_impossible_intervals"] and all(e["tid"] == GPU for e in flagged),
          "flagged on the operations track: %d %s" % (len(flagged), m))
    ops3 = [e for e in doc3["traceEvents"] if e.get("tid", 0) >= GPU and e["ph"] == "X"
            and e["cat"] in ("GPU", "estimated", "enqueue")]
    check(len(ops3) == m["operations_drawn"] == 1000, "every operation drawn: %d %s" % (len(ops3), m))
    check(all(e["dur"] > 0 for e in doc3["traceEvents"] if e.get("cat") == "KernelCh" and e["ph"] == "X"),
          "no impossible channel nested")
    json_nesting(doc3)
    print("ok: 99 impossible GPU intervals flagged on the operations track")


if __name__ == "__main__":
    main()
