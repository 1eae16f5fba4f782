# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/cost_report.py on five real runs (tests/bench_data/cost: 2 x H200,
NCCL 2.28.9, 64 B all_reduce, every event). The numbers it prints are recomputed here
from the raw rounds, independently of the script: per configuration the rounds, how many
ran in NCCL's slow mode (over 1.15 x the kind's fastest round), the mean and its ratio
to the empty plugin's rounds of the same files, the medians within each mode; pooled over
the five files, rounds of one file never paired with another's."""
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

from nsctest import check

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "bench_data", "cost")
SCRIPT = os.path.join(HERE, "..", "..", "bench", "gpu", "cost_report.py")
FILES = [os.path.join(DATA, f) for f in ("call1.tsv", "call3.tsv", "call4.tsv", "call5.tsv", "call6.tsv")]


def rounds(files):
    runs, by_round, calls = defaultdict(list), defaultdict(dict), defaultdict(set)
    for i, f in enumerate(files):
        for line in open(f):
            kind, cfg, r, us = line.rstrip("\n").split("\t")
            runs[(kind, cfg)].append(float(us))
            by_round[(kind, i, r)][cfg] = float(us)
            calls[(kind, cfg)].add(f)
    return runs, by_round, calls


def ref_rounds(files, kind, cfg, calls):
    """The empty plugin's rounds of the files that ran cfg."""
    return [float(us) for f in files if f in calls[(kind, cfg)] for line in open(f)
            for k, c, _, us in [line.rstrip("\n").split("\t")] if k == kind and c == "empty_all"]


def section(out, kind):
    m = re.search(r"^%s, 64 B all_reduce.*?(?=^\S+, 64 B all_reduce|\Z)" % re.escape(kind), out, re.M | re.S)
    check(m is not None, "a section for %s:\n%s" % (kind, out))
    return m.group(0)


def main():
    p = subprocess.run([sys.executable, SCRIPT, *FILES], capture_output=True, text=True)
    check(p.returncode == 0, "cost_report.py ran: %s" % p.stderr)
    runs, by_round, calls = rounds(FILES)
    for kind in ("nccl-tests", "procs", "threads"):
        text = section(p.stdout, kind)
        fastest = min(x for (k, _), v in runs.items() if k == kind for x in v)
        cut = 1.15 * fastest
        check("a round over %.2f µs" % cut in text, "%s: the threshold %.2f:\n%s" % (kind, cut, text))
        cfgs = [c for (k, c) in runs if k == kind]
        check(len(cfgs) >= 3, "%s: configurations %s" % (kind, cfgs))
        for c in cfgs:
            ref = ref_rounds(FILES, kind, c, calls)
            ref_fast = statistics.median([x for x in ref if x <= cut])
            ref_slow = statistics.median([x for x in ref if x > cut])
            v = runs[(kind, c)]
            fast, slow = [x for x in v if x <= cut], [x for x in v if x > cut]
            if c == "empty_all":  # the reference's own row: ratio 1, no interval
                row = re.search(r"^\| %s \| (\d+) \| (\d+) \| ([\d.]+) \| (1)() ?()\| "
                                r"([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$" % c, text, re.M)
            else:
                row = re.search(r"^\| %s \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \(([\d.]+)-([\d.]+)\) \| "
                                r"([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$" % c, text, re.M)
            check(row is not None, "%s %s: a row in the modes table:\n%s" % (kind, c, text))
            g = row.groups()
            if c == "empty_all":
                g = g[:4] + (g[3], g[3]) + g[6:]
            check(int(g[0]) == len(v) and int(g[1]) == len(slow), "%s %s: %d rounds, %d slow; the script: %s"
                  % (kind, c, len(v), len(slow), g))
            ratio = statistics.mean(v) / statistics.mean(ref)
            check(abs(float(g[2]) - statistics.mean(v)) < 0.006 and abs(float(g[3]) - ratio) < 0.0006,
                  "%s %s: mean %.3f, ratio %.4f; the script: %s" % (kind, c, statistics.mean(v), ratio, g))
            check(float(g[4]) <= float(g[3]) <= float(g[5]), "%s %s: the interval holds the ratio: %s" % (kind, c, g))
            check(abs(float(g[6]) - statistics.median(fast)) < 0.006 and
                  abs(float(g[7]) - statistics.median(slow)) < 0.006 and
                  abs(float(g[8]) - statistics.median(fast) / ref_fast) < 0.0006 and
                  abs(float(g[9]) - statistics.median(slow) / ref_slow) < 0.0006,
                  "%s %s: medians per mode; the script: %s" % (kind, c, g))
        # the medians' ratio: the reference's rounds of the same files
        line = re.search(r"^every event, vs the empty plugin: (.*)$", text, re.M)
        check(line is not None, "%s: the medians' ratios:\n%s" % (kind, text))
        for c in cfgs:
            if c == "empty_all":
                continue
            want = statistics.median(runs[(kind, c)]) / statistics.median(ref_rounds(FILES, kind, c, calls))
            got = re.search(r"\b%s ([\d.]+)" % c, line.group(1))
            check(got is not None and abs(float(got.group(1)) - want) < 0.0006,
                  "%s %s: median ratio %.4f; the script: %s" % (kind, c, want, line.group(1)))
        # per-round ratios pair configurations of one round of one file
        pr = [r["scope_all"] / r["empty_all"] for (k, _, _), r in by_round.items()
              if k == kind and "scope_all" in r and "empty_all" in r]
        got = re.search(r"per-round ratios over the empty plugin, median: scope_all ([\d.]+) \((\d+) rounds", text)
        check(got is not None and int(got.group(2)) == len(pr) == len(runs[(kind, "scope_all")]) and
              abs(float(got.group(1)) - statistics.median(pr)) < 0.0006,
              "%s: per-round ratio %.4f over %d rounds; the script: %s" %
              (kind, statistics.median(pr), len(pr), got and got.groups()))
    # a configuration of one call only is compared with that call's rounds
    check(len(calls[("nccl-tests", "scope_lazy")]) == 1 and len(calls[("nccl-tests", "empty_all")]) == 4,
          "scope_lazy ran in one call, the empty plugin in four")
    # the data has both of NCCL's speeds, far apart
    v = runs[("nccl-tests", "empty_all")]
    check(max(v) > 1.4 * min(v), "both speeds in the data")
    # a file whose configuration has no reference rounds beside it: n/a, no crash
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        lone = os.path.join(d, "lone.tsv")
        with open(lone, "w") as f:
            f.write("nccl-tests\tscope_metrics\t1\t7.40\nnccl-tests\tscope_metrics\t2\t10.10\n")
        p = subprocess.run([sys.executable, SCRIPT, FILES[0], lone], capture_output=True, text=True)
        check(p.returncode == 0, "a configuration without reference rounds: %s" % p.stderr)
        check(re.search(r"^\| scope_metrics \| 2 \| 1 \| 8\.75 \| n/a \| 7\.40 \| 10\.10 \| n/a \| n/a \|$",
                        p.stdout, re.M) and "scope_metrics n/a" in p.stdout, p.stdout)
    print("ok: cost_report.py's rounds, slow rounds, means, ratios and per-mode medians recomputed")


if __name__ == "__main__":
    main()
