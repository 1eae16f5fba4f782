"""Medians and ratios of bench/gpu/run_cost.sh's cost.tsv (kind, config, round, µs per op).

    python3 cost_report.py COST.TSV [COST.TSV ...]     # several device calls: pooled

With every event NCCL 2.28 runs at one of two speeds per process (docs/benchmarks.md
§5b: its progress thread spinning, or sleeping once per operation), so a median over
separate processes jumps with how many of them drew the slow one. Besides the
medians this prints, per configuration, the mean with a 95 % bootstrap interval of
its ratio to the reference (the reference's rounds from the same files: calls differ
in how often the slow mode comes), how many rounds ran in the slow mode (over SLOW times
the fastest round of any configuration of that kind: the two modes are ~7.3 and
~10 µs apart at 64 B on H200), and the medians within each mode."""
import random
import statistics
import sys
from collections import defaultdict

SLOW = 1.15


def boot(ref, v, stat, n=2000):
    """95 % bootstrap interval of stat(v) / stat(ref), rounds resampled."""
    rnd = random.Random(7)
    rs = sorted(stat(rnd.choices(v, k=len(v))) / stat(rnd.choices(ref, k=len(ref))) for _ in range(n))
    return rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def modes(kind, runs):
    """The slow-mode threshold of a kind, and per configuration its rounds split."""
    fastest = min(x for (k, _), v in runs.items() if k == kind for x in v)
    cut = SLOW * fastest
    return cut, {c: ([x for x in v if x <= cut], [x for x in v if x > cut])
                 for (k, c), v in runs.items() if k == kind}


def median_or_nan(v):
    return statistics.median(v) if v else float("nan")


def main(paths):
    runs = defaultdict(list)
    by_round = defaultdict(dict)  # (kind, file, round) -> config -> µs
    for i, path in enumerate(paths):
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if len(f) == 4 and f[3] not in ("NA", ""):
                runs[(f[0], f[1])].append(float(f[3]))
                by_round[(f[0], i, f[2])][f[1]] = float(f[3])
    for kind in sorted({k for k, _ in runs}):
        med = {c: statistics.median(v) for (k, c), v in runs.items() if k == kind}
        print("\n%s, 64 B all_reduce, median µs per operation over %d rounds\n" %
              (kind, max(len(v) for (k, _), v in runs.items() if k == kind)))
        print("| configuration | µs | rounds (min..max) |")
        print("|---|---|---|")
        for c, m in med.items():
            v = runs[(kind, c)]
            print("| %s | %.2f | %.2f..%.2f |" % (c, m, min(v), max(v)))
        def ratio(a, b):
            return "%.3f" % (med[a] / med[b]) if a in med and b in med else "n/a"
        print("\nncclscope every event / empty plugin every event: %s; ncclscope default / no plugin: %s; "
              "empty every event / no plugin: %s" % (ratio("scope_all", "empty_all"),
                                                    ratio("scope_default", "none"), ratio("empty_all", "none")))
        extra = [c for c in ("floor_all", "scope_lazy", "scope_flight", "scope_nowatch", "scope_metrics") if c in med]
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
        cut, split = modes(kind, runs)
        print("\nNCCL's two speeds: a round over %.2f µs (%.2f x the fastest) counts as slow\n" % (cut, SLOW))
        print("| configuration | rounds | slow rounds | mean µs | mean / %s (95 %% interval) | "
              "median fast | median slow | fast / %s | slow / %s |" % (ref, ref, ref))
        print("|---|---|---|---|---|---|---|---|---|")
        for c in med:
            v = runs[(kind, c)]
            f, sl = split[c]
            # the reference's rounds from the files (calls) that ran c: calls
            # differ in how often NCCL drew its slow mode
            calls = {i for (k, i, _), r in by_round.items() if k == kind and c in r}
            rv = [r[ref] for (k, i, _), r in by_round.items() if k == kind and i in calls and ref in r]
            rf, rs_ = [x for x in rv if x <= cut], [x for x in rv if x > cut]
            lo, hi = boot(rv, v, statistics.mean)
            print("| %s | %d | %d | %.2f | %.3f (%.3f-%.3f) | %.2f | %.2f | %.3f | %.3f |" % (
                c, len(v), len(sl), statistics.mean(v), statistics.mean(v) / statistics.mean(rv),
                lo, hi, median_or_nan(f), median_or_nan(sl), median_or_nan(f) / median_or_nan(rf),
                median_or_nan(sl) / median_or_nan(rs_)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: cost_report.py COST.TSV [COST.TSV ...]")
    main(sys.argv[1:])
