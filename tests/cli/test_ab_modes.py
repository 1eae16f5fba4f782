# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/ab_modes.py on one real A/B/C/D process (tests/bench_data/ab_modes: 2 x H200,
NCCL 2.28.9, every event, nccl-bench --arms scope,pass,floor,noslab with NB_TASKS).
The blocks' modes and medians are recomputed here from the raw files, independently
of the script, and must match its tables; the pairing must only pair blocks of one
repeat, both in the mode named."""
import os
import re
import statistics
import subprocess
import sys

from nsctest import check

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "bench_data", "ab_modes")
SCRIPT = os.path.join(HERE, "..", "..", "bench", "gpu", "ab_modes.py")


def blocks():
    """{(repeat, arm): (us, sleeps per op)} from the TSV and the task samples."""
    out = {}
    for line in open(os.path.join(DATA, "threads.2.tsv")):
        f = line.rstrip("\n").split("\t")
        out[(f[3], f[0].split("+")[1])] = [float(f[5]), 0.0, int(f[4])]
    for line in open(os.path.join(DATA, "threads.2.tasks.0")):
        f = line.rstrip("\n").split("\t")
        if f[4] == "minflt" or f[4].startswith(("ncclscope", "cuda")):
            continue
        b = out[(f[0], f[1])]
        b[1] = max(b[1], int(f[9]) / b[2])
    return out


def mode(s):
    return "spin" if s < 0.05 else "sleep" if s > 0.5 else "mixed"


def main():
    p = subprocess.run([sys.executable, SCRIPT, DATA], capture_output=True, text=True)
    check(p.returncode == 0, "ab_modes.py ran: %s" % p.stderr)
    rows = {(m.group(1), m.group(2)): (int(m.group(3)), float(m.group(4)))
            for m in re.finditer(r"^\| (\w+) \| (spin|mixed|sleep) \| (\d+) \| ([\d.]+) \|", p.stdout, re.M)}
    b = blocks()
    check(len(b) == 48 and "threads: 48 blocks" in p.stdout, "48 blocks:\n" + p.stdout)
    want = {}
    for (_, arm), (us, s, _) in b.items():
        want.setdefault((arm, mode(s)), []).append(us)
    check(set(want) == set(rows), "the same (arm, mode) cells: %s vs %s" % (sorted(want), sorted(rows)))
    for k, v in want.items():
        check(rows[k][0] == len(v) and abs(rows[k][1] - statistics.median(v)) < 0.006,
              "%s: %d blocks, median %.3f; the script says %s" % (k, len(v), statistics.median(v), rows[k]))
    # the data holds both of NCCL's modes, and a slow sleeping block is slow
    check(("pass", "sleep") in rows and ("pass", "spin") in rows and
          rows[("pass", "sleep")][1] > rows[("pass", "spin")][1] + 2, "both modes, sleep slower")
    for arm in ("scope", "floor", "noslab"):
        for m in ("spin", "sleep"):
            pairs = [b[(r, arm)][0] / b[(r, "pass")][0] for (r, a) in b
                     if a == arm and mode(b[(r, arm)][1]) == mode(b[(r, "pass")][1]) == m]
            got = re.search(r"^%s/pass, repeats with both in mode %s: (\d+), median ([\d.]+)" % (arm, m),
                            p.stdout, re.M)
            check(bool(pairs) == bool(got), "%s %s: pairs %s, line %s" % (arm, m, pairs, got))
            if pairs:
                check(int(got.group(1)) == len(pairs) and
                      abs(float(got.group(2)) - statistics.median(pairs)) < 0.0006,
                      "%s/pass in %s: %d pairs, median %.4f; script: %s" % (
                          arm, m, len(pairs), statistics.median(pairs), got.group(0)))
    # two DIRs pool: every pair twice (pairs stay within their DIR), the same
    # medians, and the median inside its printed 95 % interval
    p2 = subprocess.run([sys.executable, SCRIPT, DATA, DATA], capture_output=True, text=True)
    check(p2.returncode == 0 and "threads: 96 blocks" in p2.stdout, "pooled:\n" + p2.stdout + p2.stderr)
    one = {m.group(1): (int(m.group(2)), m.group(3)) for m in re.finditer(
        r"^(\w+/pass, repeats with both in mode \w+): (\d+), median ([\d.]+)", p.stdout, re.M)}
    two = {m.group(1): (int(m.group(2)), m.group(3), float(m.group(4)), float(m.group(5)))
           for m in re.finditer(r"^(\w+/pass, repeats with both in mode \w+): (\d+), median ([\d.]+)"
                                r".*95% interval of the median ([\d.]+)\.\.([\d.]+)$", p2.stdout, re.M)}
    check(one and set(one) == set(two), "the same ratio lines pooled: %s vs %s" % (sorted(one), sorted(two)))
    for k, (n, med) in one.items():
        n2, med2, lo, hi = two[k]
        check(n2 == 2 * n and med2 == med and lo <= float(med) <= hi,
              "%s: %d pairs median %s; pooled %s" % (k, n, med, two[k]))
    print("ok")


if __name__ == "__main__":
    main()
