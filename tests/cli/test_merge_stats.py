# SPDX-License-Identifier: Apache-2.0
"""ncclscope stats and multi-host merging, on the real 4-process H200 trace
(tests/data/h200x4_procs: 4 processes, one per GPU, one host).

Hosts are simulated by rewriting two of the files as if they came from
another machine: that machine's CLOCK_MONOTONIC runs 5 s ahead and its
CLOCK_REALTIME 3 ms ahead (an NTP error). The truth is the unmodified
files (one host: exact). The converter must find the 3 ms from the
collectives the hosts share, report it with a small uncertainty, and put
every event back where it was; with --align realtime the 3 ms error stays;
with an impossible uncertainty limit it refuses."""
import json
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402

MONO_AHEAD = 5_000_000_000
REAL_AHEAD = 3_000_000


def rewrite_host(src, dst, host):
    """Copies a trace, changing its host name and moving its clocks."""
    b = bytearray(open(src, "rb").read())
    off = 16
    while off + 24 <= len(b):
        magic, typ, flags, stored = struct.unpack_from("<IHHI", b, off)
        if magic != 0x4B4C4253:
            break
        p = off + 24
        if typ == 1 and not flags & 1:      # SESSION: start anchor at 24, host at 64
            t, mono, real = struct.unpack_from("<QQQ", b, p + 24)
            struct.pack_into("<QQQ", b, p + 24, t, mono + MONO_AHEAD, real + REAL_AHEAD)
            struct.pack_into("64s", b, p + 64, host.encode())
        elif typ == 4 and not flags & 1:    # ANCHOR
            t, mono, real = struct.unpack_from("<QQQ", b, p)
            struct.pack_into("<QQQ", b, p, t, mono + MONO_AHEAD, real + REAL_AHEAD)
        off = p + stored
    open(dst, "wb").write(bytes(b))


def first_ts(doc):
    """Earliest slice start per Perfetto process (pid)."""
    out = {}
    for e in doc["traceEvents"]:
        if e.get("ph") in ("X", "b") and "ts" in e:
            out[e["pid"]] = min(out.get(e["pid"], 1e30), e["ts"])
    return out


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    files = sorted(os.path.join(src, f) for f in os.listdir(src))
    check(len(files) == 4, "four processes: %s" % files)

    # ---- stats on the real trace ----
    r = run([cli, "stats", src, "--json"])
    st = json.loads(r.stdout)
    rows = {(x["op"], x["size_max_bytes"]): x for x in st["rows"]}
    # nccl-bench ran 20 iterations + 2 warm-up per size (1 MiB: 10 + 2), and one
    # 4-byte all_reduce barrier per (op, size) plus one at the end: 16.
    expect = {("AllReduce", 4): 16, ("AllReduce", 1024): 22, ("AllReduce", 32768): 22,
              ("AllReduce", 1 << 20): 12, ("ReduceScatter", 1024): 22, ("AllGather", 1 << 20): 12,
              ("Broadcast", 32768): 22}
    for k, n in expect.items():
        check(k in rows, "row %s missing: %s" % (k, sorted(rows)))
        x = rows[k]
        check(x["count"] == n and x["rank_ops"] == 4 * n and x["nranks"] == 4,
              "%s: count %d rank_ops %d (expected %d, %d)" % (k, x["count"], x["rank_ops"], n, 4 * n))
        check(0 < x["p50_us"] <= x["p99_us"] <= x["max_us"], "percentiles ordered: %s" % x)
    ar = rows[("AllReduce", 1 << 20)]
    check(abs(ar["busbw_GBps"] - ar["algbw_GBps"] * 2 * 3 / 4) < 1e-2 * ar["algbw_GBps"] + 1e-3,
          "all_reduce busbw = algbw x 2(n-1)/n: %s" % ar)
    ag = rows[("AllGather", 1 << 20)]
    check(abs(ag["avg_bytes"] - (1 << 20)) < 1, "all_gather counts the whole buffer: %s" % ag)
    check(abs(ag["busbw_GBps"] - ag["algbw_GBps"] * 3 / 4) < 1e-2 * ag["algbw_GBps"] + 1e-3, "ag busbw")
    check(st["stragglers"] and all(s["ranks"] == 4 for s in st["stragglers"]),
          "every straggler row joins the 4 ranks of one collective: %s" % st["stragglers"][:3])
    lags = [s["lag_us"] for s in st["stragglers"]]
    check(lags == sorted(lags, reverse=True), "stragglers sorted by lag")
    txt = run([cli, "stats", src]).stdout
    check("stragglers" in txt and "busbw" in txt, txt)
    print("ok: stats counts, bandwidth formulas and %d straggler rows" % len(lags))

    # ---- two simulated hosts ----
    d = tmpdir()
    merged = os.path.join(d, "job")
    os.makedirs(merged)
    for i, f in enumerate(files):
        dst = os.path.join(merged, os.path.basename(f))
        if i >= 2:
            rewrite_host(f, dst, "hostB")
        else:
            shutil.copy(f, dst)
    run([cli, "convert", src, "-o", os.path.join(d, "truth.json")])
    truth = first_ts(json.load(open(os.path.join(d, "truth.json"))))
    r = run([cli, "convert", "-v", merged, "-o", os.path.join(d, "merged.json")])
    check("hostB" in r.stderr and "shared collectives" in r.stderr, "alignment report:\n" + r.stderr)
    line = [x for x in r.stderr.splitlines() if "hostB" in x][0]
    refined_us = float(line.split("refined")[1].split("us")[0])
    unc_us = float(line.split("+-")[1].split("us")[0])
    check(abs(refined_us + 3000) < 50, "refinement finds the 3 ms NTP error: %s" % line)
    check(unc_us < 50, "uncertainty small: %s" % line)
    got = first_ts(json.load(open(os.path.join(d, "merged.json"))))
    worst = max(abs(got[p] - truth[p]) for p in truth)
    check(set(got) == set(truth) and worst < 50, "events back in place within 50 us (worst %.1f us)" % worst)
    print("ok: host B aligned: %s; worst event offset %.2f us" % (line.strip(), worst))

    # realtime only: the NTP error stays
    run([cli, "convert", merged, "--align", "realtime", "-o", os.path.join(d, "rt.json")])
    rt = first_ts(json.load(open(os.path.join(d, "rt.json"))))
    off = [rt[p] - truth[p] for p in truth if abs(rt[p] - truth[p]) > 1]
    check(len(off) == 2 and all(abs(o - 3000) < 1 for o in off),
          "--align realtime keeps hostB 3 ms late: %s" % off)
    # an impossible uncertainty limit: a clear refusal, no output
    out = os.path.join(d, "refused.json")
    r = run([cli, "convert", merged, "--max-uncertainty-us", "0.0001", "-o", out], ok=(2,))
    check("cannot align host hostB" in r.stderr and not os.path.exists(out), r.stderr)
    r = run([cli, "stats", merged, "--json"])
    st2 = json.loads(r.stdout)
    check(all(s["ranks"] == 4 for s in st2["stragglers"]), "stats joins ranks across hosts")
    print("ok: realtime-only placement and refusal")


if __name__ == "__main__":
    main()
