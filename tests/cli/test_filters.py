# SPDX-License-Identifier: Apache-2.0
"""convert's filters, --split and gzip output on the 4-process H200 trace."""
import glob
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, events, run, tmpdir  # noqa: E402


def names(doc):
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    return procs, threads


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()

    def conv(args, out):
        run([cli, "convert", src, "-o", out] + args)
        op = gzip.open if out.endswith(".gz") else open
        return json.load(op(out, "rt"))

    full = conv([], os.path.join(d, "full.json"))
    n_full = len(events(full))

    doc = conv(["--ranks", "1,3"], os.path.join(d, "r.json"))
    procs, _ = names(doc)
    slices = [e for e in doc["traceEvents"] if e["ph"] in ("X", "b")]
    check(slices and all(" rank 1/4 " in procs[e["pid"]] or " rank 3/4 " in procs[e["pid"]] for e in slices),
          "--ranks 1,3 keeps only those ranks")
    check(doc["metadata"]["ncclscope"]["filtered_out"] > 0, "filtered count reported")

    doc = conv(["--events", "coll"], os.path.join(d, "e.json"))
    cats = {e["cat"] for e in events(doc)}
    check(cats == {"Coll"}, "--events coll: %s" % cats)

    doc = conv(["--comm", "9b26a3b4"], os.path.join(d, "c.json"))
    check(len(events(doc)) == n_full, "--comm with the job's commHash keeps everything")
    doc = conv(["--comm", "ffff"], os.path.join(d, "c2.json"))
    check(len(events(doc)) == 0, "--comm of another communicator keeps nothing")

    doc = conv(["--time", "0:1000"], os.path.join(d, "t.json"))
    check(len(events(doc)) == n_full, "a window over the whole job keeps everything")
    ts = sorted(e["ts"] for e in events(full))
    doc = conv(["--time", "0.2:0.25"], os.path.join(d, "t2.json"))
    ev = events(doc)
    check(0 < len(ev) < n_full, "a 50 ms window keeps part: %d of %d" % (len(ev), n_full))
    span = max(e["ts"] for e in ev) - min(e["ts"] for e in ev)
    check(span < 60_000 + 20_000, "window width respected: %.0f us" % span)
    print("ok: --ranks, --events, --comm, --time")

    doc = conv([], os.path.join(d, "g.json.gz"))
    check(len(events(doc)) == n_full, "gzip output holds the same events")
    check(os.path.getsize(os.path.join(d, "g.json.gz")) * 5 < os.path.getsize(os.path.join(d, "full.json")),
          "gzip is much smaller")

    run([cli, "convert", src, "-o", os.path.join(d, "s.json"), "--split", "1"])
    parts = sorted(glob.glob(os.path.join(d, "s-*.json")))
    check(len(parts) >= 5, "--split 1 makes parts: %s" % parts)
    total = 0
    for p in parts:
        doc = json.load(open(p))
        check(os.path.getsize(p) < 1_100_000, "part under the limit: %s" % p)
        procs, threads = names(doc)
        for e in doc["traceEvents"]:
            if e["ph"] in ("X", "b"):
                check(e["pid"] in procs and (e["pid"], e["tid"]) in threads,
                      "every part names its processes and threads: %s in %s" % (e, p))
        total += len(events(doc))
    check(total == n_full, "parts hold every event once: %d vs %d" % (total, n_full))
    print("ok: gzip and %d split parts" % len(parts))
    r = run([cli, "convert", src, "-o", "-", "--split", "1"], ok=(1,))
    check("needs a file name" in r.stderr, r.stderr)
    r = run([cli, "convert", src, "-o", os.path.join(d, "x.json"), "--ranks", "a-b"], ok=(1,))
    check("--ranks" in r.stderr, r.stderr)


if __name__ == "__main__":
    main()
