# SPDX-License-Identifier: Apache-2.0
"""NCCL's two speeds at 64 B, per block of an in-process A/B (nccl-bench --ab with NB_TASKS).

With KernelCh in the mask, NCCL 2.28 gives every collective a profiler proxy op per channel,
and its proxy progress thread polls them. When the issuing thread keeps ahead of the GPU the
progress thread always has an op to poll and spins ("spin" blocks); when the GPU catches up,
it runs out of ops, sleeps on a condition variable, and every next op's post must wake it
(a futex wake on the issuing thread, a wake-up on the progress thread): the "sleep" blocks,
one sleep per operation and several µs slower. A block's mode is the most sleeps per
operation of any NCCL thread in it (from /proc/self/task, nccl-bench's NB_TASKS).

    python3 ab_modes.py DIR [DIR...]    (each holds LAYOUT.ROUND.tsv and LAYOUT.ROUND.tasks.RANK)

Prints, per layout: blocks of each arm (scope, pass, floor, noslab) in each mode with their
median µs and enqueue µs, and the per-repeat ratios of each arm to pass where both ran in the
same mode, with a 95 % bootstrap interval of their median. Several DIRs (separate runs of one
build) are pooled: their blocks pair only within their own DIR.
"""
import glob
import os
import random
import statistics
import sys
from collections import defaultdict


def mode_of(sleeps_per_op):
    return "spin" if sleeps_per_op < 0.05 else "sleep" if sleeps_per_op > 0.5 else "mixed"


def load(d, tag=""):
    blocks = {}  # (layout, round, repeat, arm) -> dict; round carries the DIR's tag
    for tsv in sorted(glob.glob(os.path.join(d, "*.tsv"))):
        layout, rnd = os.path.basename(tsv)[:-4].rsplit(".", 1)
        rnd = tag + rnd
        for line in open(tsv):
            f = line.rstrip("\n").split("\t")
            if len(f) < 8:
                continue
            arm = f[0].rsplit("+", 1)[-1]
            blocks[(layout, rnd, f[3], arm)] = {"us": float(f[5]), "iters": int(f[4]),
                                               "enq": float(f[8]) if len(f) > 8 else None,
                                               "sleeps": 0.0}
        for tasks in glob.glob(tsv[:-4] + ".tasks.*"):
            for line in open(tasks):
                f = line.rstrip("\n").split("\t")
                if len(f) < 11 or f[4] == "minflt" or f[4].startswith(("ncclscope", "cuda")):
                    continue
                b = blocks.get((layout, rnd, f[0], f[1]))
                if b:
                    b["sleeps"] = max(b["sleeps"], int(f[9]) / b["iters"])
    return blocks


def median_interval(v, n=2000):
    """95 % bootstrap interval of the median of v (a fixed seed: the same
    files print the same interval)."""
    rng = random.Random(1)
    m = sorted(statistics.median(rng.choices(v, k=len(v))) for _ in range(n))
    return m[int(0.025 * n)], m[int(0.975 * n) - 1]


def main(dirs):
    blocks = {}
    for i, d in enumerate(dirs):
        blocks.update(load(d, "%d:" % i if len(dirs) > 1 else ""))
    for layout in sorted({k[0] for k in blocks}):
        mine = {k: v for k, v in blocks.items() if k[0] == layout}
        print("\n%s: %d blocks\n" % (layout, len(mine)))
        print("| arm | mode | blocks | median µs | µs range | median enqueue µs |")
        print("|---|---|---|---|---|---|")
        arms = sorted({k[3] for k in mine}, key=lambda a: (a != "pass", a))
        for arm in arms:
            for mode in ("spin", "mixed", "sleep"):
                v = [b for k, b in mine.items() if k[3] == arm and mode_of(b["sleeps"]) == mode]
                if not v:
                    continue
                us = [b["us"] for b in v]
                enq = [b["enq"] for b in v if b["enq"] is not None]
                print("| %s | %s | %d | %.2f | %.2f..%.2f | %s |" % (
                    arm, mode, len(v), statistics.median(us), min(us), max(us),
                    "%.2f" % statistics.median(enq) if enq else "-"))
        print()
        for arm in arms[1:]:
            for mode in ("spin", "sleep", "any"):
                rs, es = [], []
                for k, b in mine.items():
                    if k[3] != arm:
                        continue
                    p = mine.get(k[:3] + ("pass",))
                    if not p or (mode != "any" and not (mode_of(b["sleeps"]) == mode_of(p["sleeps"]) == mode)):
                        continue
                    rs.append(b["us"] / p["us"])
                    if b["enq"] and p["enq"]:
                        es.append(b["enq"] / p["enq"])
                if rs:
                    lo, hi = median_interval(rs)
                    print("%s/pass, repeats with both in mode %s: %d, median %.3f (%.3f..%.3f)%s; "
                          "95%% interval of the median %.3f..%.3f" % (
                              arm, mode, len(rs), statistics.median(rs), min(rs), max(rs),
                              "; enqueue median %.3f" % statistics.median(es) if es else "", lo, hi))

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: ab_modes.py DIR [DIR...]")
    main(sys.argv[1:])
