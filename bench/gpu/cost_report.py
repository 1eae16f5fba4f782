"""Medians and ratios of bench/gpu/run_cost.sh's cost.tsv (kind, config, round, µs per op)."""
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(list)
    by_round = defaultdict(dict)  # (kind, round) -> config -> µs
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) == 4 and f[3] not in ("NA", ""):
            runs[(f[0], f[1])].append(float(f[3]))
            by_round[(f[0], f[2])][f[1]] = float(f[3])
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
            rs = [r[c] / r[ref] for (k, _), r in by_round.items()
                  if k == kind and c in r and ref in r]
            if rs:
                paired.append("%s %.3f (%d rounds, %.3f..%.3f)" %
                              (c, statistics.median(rs), len(rs), min(rs), max(rs)))
        if paired:
            print("per-round ratios over %s, median: %s" % (
                "the empty plugin" if ref == "empty_all" else "ncclscope's passthrough (same process)",
                "; ".join(paired)))


if __name__ == "__main__":
    main(sys.argv[1])
