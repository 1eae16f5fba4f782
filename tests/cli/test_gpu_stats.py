# SPDX-License-Identifier: Apache-2.0
"""ncclscope stats on GPU time, on the real 4-process H200 trace with KernelCh
(tests/data/h200x4_procs). Every number is recomputed here from the converted
JSON, not from stats' code path: convert draws each KernelCh at GPU time on
its channel track (GPU clock mapped to the host's), so per operation the GPU
time is the first channel slice's start to the last one's end, the queue
time its enqueue (the completion slice's start) to that GPU start, and the
rank whose first channel started last in a collective is its straggler.
In the collectives whose data moves only once every rank arrived
(AllReduce, AllGather, ReduceScatter), a rank's wait is its GPU start to
the last rank's, its transfer the rest of its GPU time; bandwidth comes
from the transfer p50 there (bw_from "transfer"), from GPU time elsewhere."""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, convert, data_dir, env_paths, run, tmpdir  # noqa: E402

CHANNEL_TRACKS = 0x40001000  # tids of the converter's "GPU channel N" tracks
DTYPE = {"ncclInt8": 1, "ncclUint8": 1, "ncclFloat32": 4, "ncclFloat16": 2, "ncclBfloat16": 2,
         "ncclInt32": 4, "ncclInt64": 8, "ncclFloat64": 8}


def bucket(nbytes):
    b = 0
    while b < 63 and (1 << b) < nbytes:
        b += 1
    return 1 << b


def near_quantile(v, q, xs):
    """v is within the histogram's 1.6 % (plus rounding) of a sample next to
    quantile q of xs."""
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))
    cands = xs[max(0, i - 1):i + 2]
    return any(abs(v - c) <= 0.02 * c + 0.002 for c in cands)


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()
    doc, _ = convert([src], os.path.join(d, "t.json"))
    ev = doc["traceEvents"]
    rank_of = {}
    for e in ev:
        if e["ph"] == "M" and e["name"] == "process_name":
            m = re.search(r"rank (\d+)/(\d+)", e["args"]["name"])
            if m:
                rank_of[e["pid"]] = int(m.group(1))
    ops = {}  # (pid, op id) -> completion slice
    chans = {}  # (pid, parent op id) -> [start, end] over channel slices
    for e in ev:
        if e.get("cat") == "completion" and e["ph"] in ("X", "b"):  # b: an async slice
            ops[(e["pid"], e["args"]["id"])] = e
        elif e.get("ph") == "X" and e.get("cat") == "KernelCh" and e["tid"] >= CHANNEL_TRACKS:
            k = (e["pid"], e["args"]["parent"])
            s, t = e["ts"], e["ts"] + e["dur"]
            c = chans.setdefault(k, [s, t])
            c[0], c[1] = min(c[0], s), max(c[1], t)
    check(len(chans) > 1000, "channel slices joined to operations: %d" % len(chans))

    gpu, queue, nbytes = {}, {}, {}
    colls = {}  # (func, seq) -> [(gpu start, enqueue, rank)]
    for k, (s, t) in chans.items():
        op = ops.get(k)
        check(op is not None, "a channel slice without its operation: %s" % (k,))
        a = op["args"]
        n = a["count"] * DTYPE[a["datatype"]]
        if op["name"] in ("AllGather", "ReduceScatter"):
            n *= 4
        key = (op["name"], a["datatype"], bucket(n))
        gpu.setdefault(key, []).append(t - s)
        queue.setdefault(key, []).append(max(0.0, s - op["ts"]))
        nbytes.setdefault(key, []).append(n)
        if "seqNumber" in a:
            colls.setdefault((op["name"], a["seqNumber"]), []).append((s, op["ts"], rank_of[k[0]], t, key))
    split = ("AllReduce", "AllGather", "ReduceScatter")
    wait_of, xfer_of = {}, {}
    for (name, _), parts in colls.items():
        if name not in split or len(parts) != 4:
            continue
        s_last = max(p[0] for p in parts)
        for s, _, _, t, key in parts:
            w = min(max(0.0, s_last - s), t - s)
            wait_of.setdefault(key, []).append(w)
            xfer_of.setdefault(key, []).append(t - s - w)

    st = json.loads(run([cli, "stats", src, "--json", "--top", "1000"]).stdout)
    rows = {(r["op"], r["dtype"], r["size_max_bytes"]): r for r in st["rows"]}
    check(set(rows) == set(gpu), "rows: stats %s, here %s" % (sorted(rows), sorted(gpu)))
    factor = {"AllReduce": 2 * 3 / 4, "AllGather": 3 / 4, "ReduceScatter": 3 / 4}
    for key, r in rows.items():
        check(r["timing"] == "gpu" and r["gpu_ops"] == r["rank_ops"] == len(gpu[key]), "%s: %s" % (key, r))
        for name, q in (("gpu_p50_us", 0.5), ("gpu_p99_us", 0.99)):
            check(near_quantile(r[name], q, gpu[key]), "%s %s %.3f, recomputed %s" %
                  (key, name, r[name], sorted(gpu[key])))
        check(abs(r["gpu_max_us"] - max(gpu[key])) < 0.01, "%s gpu max %s vs %s" % (key, r, max(gpu[key])))
        check(near_quantile(r["queue_p50_us"], 0.5, queue[key]), "%s queue_p50 %.3f, recomputed %s" %
              (key, r["queue_p50_us"], sorted(queue[key])))
        avg = sum(nbytes[key]) / len(nbytes[key])
        if key[0] in split:
            check(r["split_ops"] == r["rank_ops"] == len(wait_of[key]) and r["bw_from"] == "transfer",
                  "%s: every rank has GPU times, the split covers the row: %s" % (key, r))
            for name, q, xs in (("wait_p50_us", 0.5, wait_of[key]), ("wait_p99_us", 0.99, wait_of[key]),
                                ("transfer_p50_us", 0.5, xfer_of[key]),
                                ("transfer_p99_us", 0.99, xfer_of[key])):
                check(near_quantile(r[name], q, xs), "%s %s %.3f, recomputed %s" % (key, name, r[name], sorted(xs)))
            check(r["transfer_p50_us"] <= r["gpu_p50_us"] * 1.02 and r["wait_p50_us"] <= r["gpu_p50_us"] * 1.02,
                  "%s: wait and transfer are parts of the GPU time: %s" % (key, r))
            t50 = r["transfer_p50_us"]
        else:
            check(r["split_ops"] == 0 and r["wait_p50_us"] is None and r["transfer_p50_us"] is None
                  and r["bw_from"] == "gpu", "%s: no split for %s: %s" % (key, key[0], r))
            t50 = r["gpu_p50_us"]
        algbw = avg / (t50 * 1e3)
        busbw = algbw * factor.get(key[0], 1.0)
        check(abs(r["busbw_GBps"] - busbw) <= 0.002 * busbw + 0.002,
              "%s busbw %.3f, from the %s p50 %.3f" % (key, r["busbw_GBps"], r["bw_from"], busbw))
        # the host figure is still there, and is larger: it includes the queueing
        check(r["p50_us"] >= r["gpu_p50_us"] and r["host_busbw_GBps"] <= r["busbw_GBps"] + 1e-3,
              "%s: host p50 %s below GPU p50" % (key, r))

    # stragglers by GPU start
    last, wait, host_late = {}, {}, {}
    for parts in colls.values():
        if len(parts) != 4:
            continue
        s_last, enq_last, rk = max(parts)[:3]
        lag = s_last - min(p[0] for p in parts)
        host = max(0.0, enq_last - min(p[1] for p in parts))
        last[rk] = last.get(rk, 0) + 1
        wait[rk] = wait.get(rk, 0.0) + lag
        host_late[rk] = host_late.get(rk, 0) + (host * 2 >= lag)
    gs = {g["rank"]: g for g in st["gpu_stragglers"]}
    check(set(gs) == set(last), "straggling ranks: stats %s, here %s" % (sorted(gs), sorted(last)))
    for rk, g in gs.items():
        check(g["last"] == last[rk] and g["collectives"] == sum(1 for p in colls.values() if len(p) == 4),
              "rank %d: %s vs last %d" % (rk, g, last[rk]))
        check(abs(g["wait_us"] - wait[rk]) <= 0.01 * last[rk] + 0.01, "rank %d wait %s vs %.3f" % (rk, g, wait[rk]))
        check(g["host_late"] + g["gpu_late"] == g["last"] and abs(g["host_late"] - host_late[rk]) <= 1,
              "rank %d host-late %s vs %d" % (rk, g, host_late[rk]))
    top = max(gs.values(), key=lambda g: g["wait_us"])
    txt = run([cli, "stats", src]).stdout
    check("stragglers by GPU start" in txt and re.search(r"\n\S+ +%d +\d+ +%d " % (top["rank"], top["last"]), txt),
          txt)
    check(" gpu " in txt and "queue p50" in txt and "wait p50" in txt and "xfer p50" in txt, txt)
    ar = rows[("AllReduce", "ncclFloat32", 1 << 20)]
    check(re.search(r"\n\S+ +4 AllReduce +ncclFloat32 +1M .* %.2f +%.2f .* transfer" %
                    (ar["wait_p50_us"], ar["transfer_p50_us"]), txt), "text row of %s:\n%s" % (ar, txt))
    print("ok: stats GPU time on %d rows and %d collectives match the converted trace; rank %d made "
          "others wait %.0f us in %d collectives" % (len(rows), len(colls), top["rank"], top["wait_us"],
                                                    top["last"]))


if __name__ == "__main__":
    main()
