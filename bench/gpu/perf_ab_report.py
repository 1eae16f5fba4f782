#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Medians of bench/gpu/run_perf_ab.sh's results, as markdown tables.

    perf_ab_report.py DIR      (DIR holds cost.tsv, cold.json, rate.json)
"""
import json
import os
import statistics
import sys


def plugin_of(path):
    base = os.path.basename(path)
    if "empty" in base:
        return "empty"
    if "floor" in base:
        return "tsc" if base.endswith("?tsc") else "floor"
    return "base" if path.startswith("/tmp/base-src") else "new"


def cost(d):
    p = os.path.join(d, "cost.tsv")
    if not os.path.exists(p):
        return
    vals = {}
    for line in open(p):
        f = line.rstrip("\n").split("\t")
        if len(f) != 4 or f[3] in ("", "NA"):
            continue
        vals.setdefault((f[0], f[1]), []).append(float(f[3]))
    phases = sorted({k[0] for k in vals})
    configs = ["none", "empty", "tsc", "floor", "base", "new"]
    print("\n| phase | " + " | ".join(configs) + " | tsc/empty | floor/empty | base/empty | new/empty | rounds |")
    print("|---" * (len(configs) + 6) + "|")
    for ph in phases:
        med = {c: statistics.median(vals[(ph, c)]) for c in configs if (ph, c) in vals}
        n = max((len(vals[(ph, c)]) for c in configs if (ph, c) in vals), default=0)
        cells = [f"{med[c]:.2f}" if c in med else "-" for c in configs]
        ratio = [f"{med[c] / med['empty']:.3f}" if c in med and "empty" in med else "-"
                 for c in ("tsc", "floor", "base", "new")]
        print(f"| {ph} | " + " | ".join(cells) + " | " + " | ".join(ratio) + f" | {n} |")
    for ph in phases:
        for c in configs:
            if (ph, c) in vals:
                print(f"  {ph} {c}: " + " ".join(f"{v:.2f}" for v in vals[(ph, c)]))


def cold(d):
    p = os.path.join(d, "cold.json")
    if not os.path.exists(p):
        return
    rows = [r for r in json.load(open(p)) if r]
    acc = {}
    for r in rows:
        k = (r["cold_kib"], plugin_of(r["plugin_path"]), r["kind"])
        acc.setdefault(k, []).append((r["single_mean99_ns"], r["p50_ns"]))
    print("\n| cold KiB | plugin | start mean99 / p50 ns | stop | state |")
    print("|---|---|---|---|---|")
    for kib in sorted({k[0] for k in acc}):
        for pl in ("empty", "tsc", "floor", "base", "new"):
            cells = []
            for kind in ("start", "stop", "state"):
                v = acc.get((kib, pl, kind))
                if v:
                    cells.append(f"{statistics.median(x[0] for x in v):.1f} / "
                                 f"{statistics.median(x[1] for x in v):.1f}")
                else:
                    cells.append("-")
            if any(c != "-" for c in cells):
                print(f"| {kib} | {pl} | " + " | ".join(cells) + " |")


def rate(d):
    p = os.path.join(d, "rate.json")
    if not os.path.exists(p):
        return
    rows = [r for r in json.load(open(p)) if r and r.get("kind") == "start"]
    print("\n| mix | writers | config | callbacks/s per process | kept / offered callbacks | zero drop | sustained | drain ms | bg cores |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['threads']} | {r.get('config', '?')} | "
              f"{r['callbacks_per_s'] * r['threads'] / 1e6:.2f} M | "
              f"{r['callbacks_kept']}/{r['callbacks_offered']} | {r['zero_drop']} | "
              f"{r['sustained']} | {r['drain_ms']:.1f} | {r['background_cores']:.2f} |")


if __name__ == "__main__":
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    cost(d)
    cold(d)
    rate(d)
