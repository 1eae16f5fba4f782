#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ratios from nccl-bench runs (bench/gpu/run_overhead.sh).

Input: TSV lines "tag op bytes repeat iters us algbw busbw", one measurement
per line, configurations interleaved over rounds. For each (configuration,
operation, size) the median over rounds is used; "noise" is the largest
(max - min) / median of the no-plugin rounds at that point, i.e. what the
same configuration differs from itself.
"""
import statistics
import sys
from collections import defaultdict


def load(path):
    d = defaultdict(list)
    bw = defaultdict(list)
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return d, bw
    for line in lines:
        f = line.rstrip("\n").split("\t")
        if len(f) < 8:  # nccl-bench's lines (a 9th column, enq_us, since --burst)
            continue
        key = (f[0], f[1], int(f[2]))
        d[key].append(float(f[5]))
        bw[key].append(float(f[7]))
    return d, bw


def fmt_size(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d%s" % (b // div, unit)
    return "%dB" % b


def med(d, key):
    v = d.get(key)
    return statistics.median(v) if v else None


def spread(d, key):
    v = d.get(key)
    if not v or len(v) < 2:
        return None
    m = statistics.median(v)
    return (max(v) - min(v)) / m if m else None


def table(title, d, bw, pairs, extra_cols=()):
    tags = sorted({k[0] for k in d})
    ops = sorted({k[1] for k in d})
    sizes = sorted({k[2] for k in d})
    print("\n### %s" % title)
    print("configurations (median us over %s rounds): %s" % (
        max((len(v) for v in d.values()), default=0), ", ".join(tags)))
    for op in ops:
        print("\n%s" % op)
        head = ["size"] + ["%s us" % t for t in tags] + ["%s/%s" % p for p in pairs] + \
            [c[0] for c in extra_cols] + ["noise", "busbw none GB/s"]
        print("  " + " | ".join(head))
        for s in sizes:
            row = [fmt_size(s)]
            for t in tags:
                m = med(d, (t, op, s))
                row.append("%.2f" % m if m is not None else "-")
            for a, b in pairs:
                x, y = med(d, (a, op, s)), med(d, (b, op, s))
                row.append("%.3f" % (x / y) if x and y else "-")
            for _, fn in extra_cols:
                row.append(fn(d, op, s))
            n = spread(d, ("none", op, s))
            row.append("%.3f" % n if n is not None else "-")
            b = med(bw, ("none", op, s))
            row.append("%.1f" % b if b is not None else "-")
            print("  " + " | ".join(row))


def kch_cost(d, op, s):
    x, y = med(d, ("empty_default_kch", op, s)), med(d, ("empty_default", op, s))
    return "%+.2f" % (x - y) if x is not None and y is not None else "-"


def main():
    sweep, sweep_bw = load(sys.argv[1])
    pairs = [("scope_all", "empty_all"), ("scope_default", "none"),
             ("scope_default", "empty_default"), ("empty_all", "none")]
    table("NVLink (one thread per GPU)", sweep, sweep_bw, pairs,
          [("KernelCh us (empty)", kch_cost)])
    if len(sys.argv) > 2:
        net, net_bw = load(sys.argv[2])
        if net:
            table("network path (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)", net, net_bw,
                  [("scope_all", "empty_all"), ("scope_default", "none"), ("empty_all", "none")])


if __name__ == "__main__":
    main()
