# SPDX-License-Identifier: Apache-2.0
"""Medians and ratios of bench/gpu/run_cost.sh's cost.tsv (kind, config, round, µs per op).

    python3 cost_report.py COST.TSV [COST.TSV ...]     # several runs: pooled

With every event NCCL 2.28 runs at one of two speeds per process (docs/benchmarks.md
§5b: its progress thread spinning, or sleeping once per operation), so a median over
separate processes jumps with how many of them drew the slow one. Besides the
medians this prints, per configuration, the mean with a 95 % bootstrap interval of
its ratio to the reference, how many rounds ran in the slow mode (over SLOW times
the fastest round of any configuration of that kind: the two modes are ~7.3 and
~10 µs apart at 64 B on H200, with some rounds between), and the medians within
each mode. Each file is one run of run_cost.sh, and runs differ in how often the slow
mode comes: every ratio compares a configuration with the reference's rounds of the
files that ran it, and the bootstrap resamples rounds within each file."""
import random
import statistics
import sys
from collections import defaultdict

SLOW = 1.15


def fmt(x, spec="%.3f"):
    return "n/a" if x is None else spec % x


def ratio_of(f, a, b):
    """f(a) / f(b), None when either is empty."""
    return f(a) / f(b) if a and b else None


def boot(ref_by_file, v_by_file, stat, n=2000):
    """95 % bootstrap interval of stat(v) / stat(ref), rounds resampled within
    each file (call)."""
    rnd = random.Random(7)

    def draw(by_file):
        return [x for v in by_file.values() for x in rnd.choices(v, k=len(v))]

    rs = sorted(stat(draw(v_by_file)) / stat(draw(ref_by_file)) for _ in range(n))
    return rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def main(paths):
    # (kind, config) -> file -> [µs]; (kind, file, round) -> config -> µs
    per_file = defaultdict(lambda: defaultdict(list))
    by_round = defaultdict(dict)
    for i, path in enumerate(paths):
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if len(f) == 4 and f[3] not in ("NA", ""):
                per_file[(f[0], f[1])][i].append(float(f[3]))
                by_round[(f[0], i, f[2])][f[1]] = float(f[3])
    runs = {k: [x for v in byf.values() for x in v] for k, byf in per_file.items()}
    for kind in sorted({k for k, _ in runs}):
        cfgs = [c for (k, c) in runs if k == kind]
        med = {c: statistics.median(runs[(kind, c)]) for c in cfgs}
        print("\n%s, 64 B all_reduce, median µs per operation over %d rounds\n" %
              (kind, max(len(runs[(kind, c)]) for c in cfgs)))
        print("| configuration | µs | rounds (min..max) |")
        print("|---|---|---|")
        for c in cfgs:
            v = runs[(kind, c)]
            print("| %s | %.2f | %.2f..%.2f |" % (c, med[c], min(v), max(v)))

        def same_calls(a, b):
            """b's rounds from the files that ran a, by file."""
            return {i: v for i, v in per_file.get((kind, b), {}).items() if i in per_file[(kind, a)]}

        def ratio(a, b):
            """median(a) / median(b's rounds of the same files)."""
            if a not in med or b not in med:
                return "n/a"
            rv = [x for v in same_calls(a, b).values() for x in v]
            return fmt(ratio_of(statistics.median, runs[(kind, a)], rv))

        print("\nncclscope every event / empty plugin every event: %s; ncclscope default / no plugin: %s; "
              "empty every event / no plugin: %s" % (ratio("scope_all", "empty_all"),
                                                    ratio("scope_default", "none"), ratio("empty_all", "none")))
        # every other configuration with every event (scope_default is
        # compared with no plugin above; pass_all is an A/B reference)
        extra = [c for c in cfgs if c not in ("empty_all", "scope_all", "none", "scope_default", "pass_all")]
        if extra:
            print("every event, vs the empty plugin: " +
                  "; ".join("%s %s" % (c, ratio(c, "empty_all")) for c in ["scope_all"] + extra))
        # Paired: the ratio within each round (the configurations of a round
        # ran back to back), then the median over rounds; robust to a round
        # that ran in another speed mode for every configuration.
        paired = []
        # the reference: the empty plugin, or in an A/B run (nccl-bench --ab)
        # ncclscope's own passthrough measured in the same process
        ref = "empty_all" if "empty_all" in med else "pass_all"
        for c in ["scope_all"] + extra:
            rs = [r[c] / r[ref] for (k, _, _), r in by_round.items()
                  if k == kind and c in r and ref in r]
            if rs:
                paired.append("%s %.3f (%d rounds, %.3f..%.3f)" %
                              (c, statistics.median(rs), len(rs), min(rs), max(rs)))
        if paired:
            print("per-round ratios over %s, median: %s" % (
                "the empty plugin" if ref == "empty_all" else "ncclscope's passthrough (same process)",
                "; ".join(paired)))
        if ref not in med:
            continue
        cut = SLOW * min(x for c in cfgs for x in runs[(kind, c)])

        def fast(v):
            return [x for x in v if x <= cut]

        def slow(v):
            return [x for x in v if x > cut]

        print("\nNCCL's two speeds: a round over %.2f µs (%.2f x the fastest) counts as slow\n" % (cut, SLOW))
        print("| configuration | rounds | slow rounds | mean µs | mean / %s (95 %% interval) | "
              "median fast | median slow | fast / %s | slow / %s |" % (ref, ref, ref))
        print("|---|---|---|---|---|---|---|---|---|")
        for c in cfgs:
            v = runs[(kind, c)]
            rbf = same_calls(c, ref)
            rv = [x for r in rbf.values() for x in r]
            m = ratio_of(statistics.mean, v, rv)
            if c == ref:
                interval = "1"
            elif rv:
                interval = "%.3f (%.3f-%.3f)" % ((m,) + boot(rbf, per_file[(kind, c)], statistics.mean))
            else:
                interval = "n/a"
            mf, ms = fast(v), slow(v)
            print("| %s | %d | %d | %.2f | %s | %s | %s | %s | %s |" % (
                c, len(v), len(ms), statistics.mean(v), interval,
                fmt(statistics.median(mf) if mf else None, "%.2f"),
                fmt(statistics.median(ms) if ms else None, "%.2f"),
                fmt(ratio_of(statistics.median, mf, fast(rv))), fmt(ratio_of(statistics.median, ms, slow(rv)))))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: cost_report.py COST.TSV [COST.TSV ...]")
    main(sys.argv[1:])
