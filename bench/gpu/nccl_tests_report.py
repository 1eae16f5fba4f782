#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Offered vs kept, per run and per event type, from bench/gpu/run_nccl_tests.sh.

    nccl_tests_report.py RUNS_DIR [-o report.md]

RUNS_DIR holds <case>/<plugin>/ folders: `counting` (what NCCL offered: the
counting reference plugin's <host>-<pid>.counts.json files under counts/)
and `ncclscope` (what it kept: `ncclscope info` of each trace in info.txt),
each with a `status` line ("ok SECONDS", "failed SECONDS (exit N)",
"timeout SECONDS ..."). The two are separate runs of the same command, so
types NCCL produces a variable number of (ProxyCtrl, KernelCh's double
stops) may differ by a little without anything lost; the drop counters in
ncclscope's trace are what decide.

Writes a markdown report (stdout, and -o FILE). Exit status: 1 when any
record was dropped, else 2 when a run failed or left no data, else 0.
"""
import argparse
import glob
import json
import os
import re
import sys

TYPES = ["GroupApi", "CollApi", "P2pApi", "KernelLaunch", "Group", "Coll", "P2p", "ProxyOp",
         "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin", "CeColl", "CeSync", "CeBatch", "KernelPhase"]
TESTS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv",
         "gather", "scatter", "hypercube"]
PATHS = {"nvlink": "NVLink", "net": "network"}
# Types whose count depends on timing (the proxy thread's sleeps and wakeups):
# two runs of one command differ there without anything lost. Every other
# type is one per operation, channel or step: a difference is a loss.
VARIABLE = {"ProxyCtrl", "NetPlugin"}
# KernelCh: one per channel and kernel, but NCCL 2.28.9 starts a handful more or
# fewer from run to run (measured on 4 x H200: -5..+10 of 200,000-600,000 per
# run, in both directions, with nothing dropped): within this fraction it is
# run-to-run variation; the drop counters decide about losses.
NEAR = {"KernelCh": 1e-4}


def num(n):
    return "{:,}".format(n) if isinstance(n, int) else str(n)


def read_status(d):
    try:
        with open(os.path.join(d, "status")) as f:
            line = f.read().strip()
    except OSError:
        return "missing", "no run"
    word = line.split(" ", 1)[0] if line else "missing"
    return word, line


def read_counting(d):
    """Starts per type and stop/state totals summed over the run's processes,
    or None when no counts file was written."""
    files = sorted(glob.glob(os.path.join(d, "counts", "*.counts.json")))
    if not files:
        return None
    out = {"types": {}, "stop": 0, "state": 0, "processes": 0, "finalized": True, "bad": []}
    for path in files:
        try:
            with open(path) as f:
                c = json.load(f)
        except (OSError, ValueError) as e:
            out["bad"].append("%s: %s" % (os.path.basename(path), e))
            continue
        out["processes"] += 1
        out["finalized"] = out["finalized"] and c.get("written_at") == "finalize"
        for t, n in c.get("start", {}).items():
            out["types"][t] = out["types"].get(t, 0) + n
        out["stop"] += c.get("totals", {}).get("stop", 0)
        out["state"] += c.get("totals", {}).get("state", 0)
    return out


def parse_info(text):
    """`ncclscope info` of one or more traces (blank-line separated), summed.
    Every counter line that names a loss ("dropped ...", "lost ...") adds to
    the drops, so later trace formats' extra loss lines count too."""
    out = {"types": {}, "start": 0, "stop": 0, "state": 0, "dropped": 0, "events_lost": 0,
           "files": 0, "unclean": 0, "damaged": 0}
    for line in text.splitlines():
        if line.startswith("file "):
            out["files"] += 1
        m = re.match(r"records\s+\d+ \(start (\d+), stop (\d+), state (\d+)\)", line)
        if m:
            out["start"] += int(m.group(1))
            out["stop"] += int(m.group(2))
            out["state"] += int(m.group(3))
        if line.startswith("events by type"):
            for t, n in re.findall(r"(\w+)=(\d+)", line):
                out["types"][t] = out["types"].get(t, 0) + int(n)
        m = re.match(r"(dropped|lost\w*)\s+(\d+)", line)
        if m:
            out["dropped"] += int(m.group(2))
        m = re.search(r"\((\d+) events lost\)", line)
        if m:
            out["events_lost"] += int(m.group(1))
        if line.startswith("closed cleanly") and "yes" not in line:
            out["unclean"] += 1
        if line.startswith("damage") and "none" not in line:
            out["damaged"] += 1
    return out


def read_scope(d):
    path = os.path.join(d, "info.txt")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    info = parse_info(text)
    if info["files"] == 0:
        return None
    try:
        with open(os.path.join(d, "trace_bytes")) as f:
            info["bytes"] = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        info["bytes"] = None
    return info


def case_order(name):
    base, _, path = name.rpartition("-")
    t = TESTS.index(base) if base in TESTS else len(TESTS)
    return (0 if path == "nvlink" else 1 if path == "net" else 2, t, name)


def label(name):
    base, _, path = name.rpartition("-")
    if base == "nccl_bench_procs":
        base = "nccl-bench --procs"
    return base or name, PATHS.get(path, path)


def collect(root):
    cases = []
    for name in sorted(os.listdir(root), key=case_order):
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            continue
        c = {"name": name}
        c["cstatus"] = read_status(os.path.join(d, "counting"))
        c["sstatus"] = read_status(os.path.join(d, "ncclscope"))
        c["offered"] = read_counting(os.path.join(d, "counting"))
        c["kept"] = read_scope(os.path.join(d, "ncclscope"))
        cases.append(c)
    return cases


def verdict(c):
    """(text, lost?, failed?) for a run: lost when ncclscope counted drops
    or kept fewer events of a type that does not vary between runs."""
    problems = []
    failed = False
    for who, (word, line) in (("counting", c["cstatus"]), ("ncclscope", c["sstatus"])):
        if word != "ok":
            problems.append("%s %s" % (who, line))
            failed = True
    if c["offered"] is None:
        problems.append("no counts")
        failed = True
    elif c["offered"]["bad"]:
        problems.append("unreadable counts: " + "; ".join(c["offered"]["bad"]))
        failed = True
    if c["kept"] is None:
        problems.append("no trace")
        failed = True
    dropped = bool(c["kept"] and (c["kept"]["dropped"] or c["kept"]["events_lost"]))
    if dropped:
        problems.insert(0, "**DROPPED %s records**" % num(c["kept"]["dropped"]))
    if c["kept"] and c["kept"]["unclean"]:
        problems.append("%d trace(s) not closed cleanly" % c["kept"]["unclean"])
    if c["kept"] and c["kept"]["damaged"]:
        problems.append("%d trace(s) damaged" % c["kept"]["damaged"])
        failed = True
    if c["offered"] and c["kept"] and not c["offered"]["bad"]:
        ot, kt = c["offered"]["types"], c["kept"]["types"]
        diff = {t: kt.get(t, 0) - ot.get(t, 0) for t in set(ot) | set(kt) if kt.get(t, 0) != ot.get(t, 0)}
        fixed = {t: d for t, d in diff.items() if t not in VARIABLE and
                 not (t in NEAR and abs(d) <= NEAR[t] * max(1, ot.get(t, 0)))}
        if fixed:
            problems.append("**kept ≠ offered** (%s) with %s drop counted" % (
                ", ".join("%s %s" % (t, "{:+,}".format(d)) for t, d in sorted(fixed.items())),
                "a" if dropped else "no"))
            if any(d < 0 for d in fixed.values()):
                dropped = True
            else:
                failed = True
        elif diff:
            problems.append("%s differ%s by run-to-run variation" % (", ".join(sorted(diff)), "s" if len(diff) == 1 else ""))
    if not any(p for p in problems if not p.endswith("run-to-run variation")) and not failed and not dropped:
        return ("ok" + ("; " + problems[0] if problems else "")), False, False
    return "; ".join(problems), dropped, failed


def secs(status):
    parts = status[1].split()
    return parts[1] + " s" if len(parts) > 1 and parts[0] in ("ok", "failed", "timeout") else "-"


def report(cases):
    lines = ["# Offered vs kept: nccl-tests and nccl-bench under the counting plugin and ncclscope", "",
             "Offered: the counting reference plugin's startEvent counts (summed over the run's processes);",
             "kept: START records in ncclscope's traces (`ncclscope info`); dropped: ncclscope's own drop",
             "counters. Both runs: `NCCLSCOPE_EVENTS=all`, every other setting at its default.", "",
             "| run | path | counting | ncclscope | events offered | events kept | stops + states offered | kept | "
             "dropped records | trace | result |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    any_drop = any_fail = False
    for c in cases:
        text, dropped, failed = verdict(c)
        any_drop |= dropped
        any_fail |= failed
        o, k = c["offered"], c["kept"]
        run, path = label(c["name"])
        trace = "-"
        if k:
            trace = "%s file(s)" % k["files"]
            if k.get("bytes") is not None:
                trace += ", %.1f MB" % (k["bytes"] / 1e6)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            run, path, c["cstatus"][0] + " " + secs(c["cstatus"]), c["sstatus"][0] + " " + secs(c["sstatus"]),
            num(sum(o["types"].values())) if o else "-", num(k["start"]) if k else "-",
            num(o["stop"] + o["state"]) if o else "-", num(k["stop"] + k["state"]) if k else "-",
            num(k["dropped"]) if k else "-", trace, text))
    lines += ["", "## Per event type", "",
              "| run | path | type | offered | kept | kept − offered |", "|---|---|---|---|---|---|"]
    for c in cases:
        o, k = c["offered"], c["kept"]
        if not o and not k:
            continue
        ot, kt = (o or {}).get("types", {}), (k or {}).get("types", {})
        names = [t for t in TYPES if t in ot or t in kt] + sorted((set(ot) | set(kt)) - set(TYPES))
        run, path = label(c["name"])
        for t in names:
            a, b = ot.get(t), kt.get(t)
            diff = "-" if a is None or b is None else ("0" if a == b else "{:+,}".format(b - a))
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                run, path, t, num(a) if a is not None else "-", num(b) if b is not None else "-", diff))
    n = len(cases)
    lines += ["", "%d runs; %s; %s." % (
        n, "records DROPPED" if any_drop else "nothing dropped",
        "some runs failed or left no data (see result)" if any_fail else
        "no runs found" if n == 0 else "every run completed")]
    return "\n".join(lines) + "\n", (1 if any_drop else 2 if any_fail or n == 0 else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", help="the runs folder run_nccl_tests.sh wrote ($OUT/runs)")
    ap.add_argument("-o", "--output", help="also write the report here")
    a = ap.parse_args()
    if not os.path.isdir(a.runs):
        print("nccl_tests_report: %s: not a folder" % a.runs, file=sys.stderr)
        return 2
    text, rc = report(collect(a.runs))
    sys.stdout.write(text)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())
