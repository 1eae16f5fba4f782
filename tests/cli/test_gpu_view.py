# SPDX-License-Identifier: Apache-2.0
"""GPU time and completion in convert --detail's layout (test_layout.py: the
default one).

Real 4-process H200 trace: every collective and p2p operation gets an
enqueue-to-completion slice on its rank's GPU lanes; every KernelCh is
placed on its channel's GPU track by mapping %globaltimer to the host clock
(per rank: the minimum of host stop - GPU end); the check of that mapping
against the CPU's timestamps is that GPU intervals fall inside their
operation's enqueue-to-completion window. Synthetic stream: KernelCh whose
GPU stop is not after its start are flagged, not drawn."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir, trace_files  # noqa: E402


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    src = os.path.join(data_dir(), "h200x4_procs")
    out = os.path.join(d, "p4.json")
    r = run([cli, "convert", "--detail", "-v", src, "-o", out])
    doc = json.load(open(out))
    files = doc["metadata"]["ncclscope"]["files"]
    check(len(files) == 4, "4 files")
    ev = doc["traceEvents"]
    # completion slices: X on a lane, or b/e (async) when no lane was free
    comp = {e["args"]["id"]: dict(e) for e in ev if e.get("cat") == "completion" and e["ph"] in ("X", "b")}
    for e in ev:
        if e.get("cat") == "completion" and e["ph"] == "e":
            comp[e["id"]]["dur"] = e["ts"] - comp[e["id"]]["ts"]
    colls = [e for e in ev if e.get("cat") in ("Coll", "P2p") and e.get("ph") in ("X", "b")]
    check(len(comp) == len(colls) == sum(f["operations_drawn"] for f in files),
          "one completion slice per operation: %d slices, %d operations" % (len(comp), len(colls)))
    for f in files:
        g = f["gpu_clocks"]
        check(len(g) == 1 and g[0]["kernels"] == 1844 and g[0]["median_notice_delay_ns"] < 50_000,
              "GPU clock of %s: %s" % (f["file"], g))
        check(f["gpu_starts_before_enqueue"] <= 4 and f["gpu_impossible_intervals"] == 0, str(f))
    gpu = [e for e in ev if e.get("cat") == "KernelCh" and e.get("ph") == "X" and e["tid"] >= 0x40001000]
    check(len(gpu) == 4 * 1844, "every KernelCh on a GPU channel track: %d" % len(gpu))
    outside = 0
    for e in gpu:
        c = comp.get(e["args"]["parent"])
        check(c is not None, "KernelCh %s has its operation" % e["args"])
        if e["ts"] < c["ts"] - 5 or e["ts"] + e["dur"] > c["ts"] + c["dur"] + 5:
            outside += 1
    check(outside <= len(gpu) // 100, "GPU intervals inside their operation's window: %d outside" % outside)
    check(all(c["dur"] >= 0 and c["args"]["completion"] in ("last KernelCh", "last ProxyOp",
              "unknown (no KernelCh/ProxyOp recorded): enqueue only") for c in comp.values()),
          "completion slices well formed")
    check("GPU %globaltimer" in r.stderr, r.stderr)
    print("ok: %d completion slices, %d GPU channel slices, %d outside their window"
          % (len(comp), len(gpu), outside))

    # flows: every arrow has both ends; parent arrows stay in a rank, the
    # collective chains cross ranks (one fewer arrow than ranks per collective)
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    check(starts and set(starts) == set(ends), "flow ends pair up: %d s, %d f" % (len(starts), len(ends)))
    chains = [i for i, e in starts.items() if e["name"] in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast")]
    check(all(starts[i]["pid"] != ends[i]["pid"] for i in chains), "chains cross ranks")
    lane_colls = [c for c in comp.values() if c["ph"] == "X" and c["name"] != "Send" and c["name"] != "Recv"]
    check(len(chains) >= len(lane_colls) * 3 // 4 - 50, "about 3 arrows per collective of 4 ranks: %d for %d"
          % (len(chains), len(lane_colls)))
    parents = [i for i, e in starts.items() if e["name"] in ("Coll", "CollApi", "KernelLaunch")]
    check(parents and all(starts[i]["pid"] == ends[i]["pid"] for i in parents), "parent arrows within a rank")
    # counters: operations in flight never negative and back to 0 per rank
    last = {}
    for e in sorted((e for e in ev if e["ph"] == "C" and e["name"] == "NCCL operations in flight"),
                    key=lambda e: e["ts"]):
        check(e["args"]["operations"] >= 0, "counter >= 0")
        last[e["pid"]] = e["args"]["operations"]
    check(len(last) == 4 and all(v == 0 for v in last.values()), "in flight returns to 0: %s" % last)
    print("ok: %d flows (%d collective chains), in-flight counters on %d ranks" % (len(starts), len(chains), len(last)))

    # impossible GPU intervals are flagged where they happened, not drawn
    td = os.path.join(d, "fake")
    run([fake, "--plugin", plugin, "--synthetic", "1000", "--bad-gpu-every", "10"],
        env={"NCCLSCOPE_DIR": td, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_RING_KB": "8192"})  # no drops
    out2 = os.path.join(d, "fake.json")
    run([cli, "convert", "--detail"] + trace_files(td) + ["-o", out2])
    doc = json.load(open(out2))
    m = doc["metadata"]["ncclscope"]["files"][0]
    flagged = [e for e in doc["traceEvents"] if e.get("name") == "impossible GPU interval"]
    drawn = [e for e in doc["traceEvents"] if e.get("cat") == "KernelCh" and e.get("ph") == "X"
             and e["tid"] >= 0x40001000]
    # ops 10, 20, ..., 990 end where they start (op 0 has both timers 0: unknown)
    check(len(flagged) == 99 and m["gpu_impossible_intervals"] == 99, "flagged: %d %s" % (len(flagged), m))
    check(len(drawn) == 900 and all(e["dur"] > 0 for e in drawn), "drawn: %d" % len(drawn))
    check(m["operations_drawn"] == 1000, str(m))
    print("ok: 99 impossible GPU intervals flagged, 900 drawn")


if __name__ == "__main__":
    main()
