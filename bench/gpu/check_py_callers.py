# SPDX-License-Identifier: Apache-2.0
"""Checks a Python run's traces: every CollApi/P2pApi event should carry the
Python caller that issued it (py_caller). Prints the share, the callers,
and, when the script marks its lines with "# LINE:<name>", whether the
callers are those lines.

    check_py_callers.py CLI TRACE_DIR SCRIPT [--min-share 1.0] [--json out.json]

Exit 1 when the share of API events with a py_caller is below --min-share.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("trace_dir")
    ap.add_argument("script")
    ap.add_argument("--min-share", type=float, default=1.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.json")
        subprocess.run([a.cli, "convert", a.trace_dir, "-o", out], check=True)
        with open(out) as f:
            doc = json.load(f)
    marked = {}
    with open(a.script) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"# LINE:(\w+)", line)
            if m:
                marked[i] = m.group(1)
    base = os.path.basename(a.script)
    api = [e for e in doc["traceEvents"]
           if e.get("cat") in ("CollApi", "P2pApi") and e["ph"] in ("X", "b")]
    callers = collections.Counter()
    origin = collections.Counter()
    marked_hits = collections.Counter()
    without = collections.Counter()
    for e in api:
        c = e["args"].get("py_caller")
        if not c:
            without[e["name"]] += 1
            continue
        callers[(c, e["name"])] += 1
        origin[e["args"].get("py_caller_from", "thread")] += 1
        m = re.match(r"(.*):(\d+) ", c)
        if m and os.path.basename(m.group(1)) == base and int(m.group(2)) in marked:
            marked_hits[marked[int(m.group(2))]] += 1
    n = len(api)
    share = (n - sum(without.values())) / n if n else 0.0
    print("%s: %d CollApi/P2pApi events, %.1f%% with a py_caller (%s)"
          % (a.trace_dir, n, 100 * share, dict(origin)))
    for (c, name), k in callers.most_common(20):
        print("  %6d  %-14s %s" % (k, name, c))
    if without:
        print("  without a caller: %s" % dict(without))
    if marked:
        print("  marked lines hit: %s; not hit: %s"
              % (dict(marked_hits), sorted(set(marked.values()) - set(marked_hits))))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"events": n, "share": share, "origin": origin, "without": without,
                       "marked": marked_hits,
                       "callers": [[c, nm, k] for (c, nm), k in callers.most_common()]}, f, indent=1)
    return 0 if share >= a.min_share else 1


if __name__ == "__main__":
    sys.exit(main())
