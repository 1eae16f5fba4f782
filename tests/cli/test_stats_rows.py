# SPDX-License-Identifier: Apache-2.0
"""ncclscope stats' count and bandwidth columns where a review found them
wrong. count is the number of distinct collectives (comm, op, seqNumber) in
the files given, not rank-operations / ranks (0 or a fraction of the truth
when not every rank's file is given). No bandwidth comes from an
enqueue-only operation (no KernelCh or ProxyOp child: its time ends at the
Coll's own stop, which moves no data; the default mask on NVLink gave
316,066 GB/s): such rows have null (JSON) and "-" (text), rows with some get
the bandwidth of the operations with a completion only. Nor any latency:
their p50/p99/max are null (JSON) and "-" (text), the timing says
enqueue-only and the text says how to record a completion. report shows
the same counts."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir, trace_files  # noqa: E402


def stats(cli, paths, *extra):
    return json.loads(run([cli, "stats", "--json", *extra, *paths]).stdout)


def key(r):
    return (r["comm"], r["p2p"], r["op"], r["dtype"], r["size_max_bytes"])


def main():
    cli, plugin, fake = env_paths()
    data = data_dir()

    # one rank's file of a 2-rank DDP job, default mask: every operation
    # enqueue only
    ddp = os.path.join(data, "torch_ddp_2rank.nsc")
    s = stats(cli, [ddp])
    for r in s["rows"]:
        check(r["enqueue_only"] == r["rank_ops"], "ddp: all enqueue only: %s" % r)
        check(r["timing"] == "enqueue-only" and r["bw_from"] is None, "ddp: enqueue-only: %s" % r)
        for k in ("algbw_GBps", "busbw_GBps", "host_algbw_GBps", "host_busbw_GBps", "p50_us", "p99_us",
                  "max_us", "gpu_p50_us", "wait_p50_us", "transfer_p50_us"):
            check(r[k] is None, "ddp %s %d: %s = %s, expected null" % (r["op"], r["size_max_bytes"], k, r[k]))
        # one rank's file: each of its operations is another collective
        check(r["count"] == r["rank_ops"], "ddp: count %d for %d rank-ops of one rank"
              % (r["count"], r["rank_ops"]))
    text = run([cli, "stats", ddp]).stdout
    big = [ln for ln in text.splitlines() if " AllReduce " in ln and " 128M " in ln]
    check(len(big) == 1, "ddp: one AllReduce 128M row: %s" % big)
    f = big[0].split()
    # ... count rank-ops clock p50 p99 max wait xfer queue host algbw busbw bw-from note
    check(f[5:7] == ["10", "10"] and f[7:18] == ["-"] * 11
          and big[0].endswith(" no completion recorded (enqueue only)"),
          "ddp text row: count 10, no time, no bandwidth: %s" % big[0])
    check("no completion recorded (enqueue only) for 34 rank-operation(s)" in text
          and "NCCLSCOPE_EVENTS=default,KernelCh (docs/config.md)" in text, "ddp: the hint:\n" + text)
    print("ok: enqueue-only rows: no bandwidth (null, -); one rank's file counts its collectives")

    # one process of a 4-process job: its counts are the job's
    job = os.path.join(data, "h200x4_procs")
    files = trace_files(job)
    whole = {key(r): r for r in stats(cli, files)["rows"]}
    one = stats(cli, files[:1])
    for r in one["rows"]:
        w = whole[key(r)]
        want = w["count"] if not r["p2p"] else r["rank_ops"]
        check(r["count"] == want, "%s: count %d of one file, %d of the job" % (key(r), r["count"], w["count"]))
        if not r["p2p"]:
            check(w["count"] * 4 == w["rank_ops"], "job: %s count %d x 4 ranks = %d rank-ops"
                  % (key(r), w["count"], w["rank_ops"]))
    ag = [r for r in one["rows"] if r["op"] == "AllGather" and r["size_max_bytes"] == 1024]
    check(ag and ag[0]["count"] == 22, "vm-2367 AllGather 1K: count 22: %s" % ag)
    # report draws the same numbers
    d = tmpdir()
    html = os.path.join(d, "r.html")
    run([cli, "report", "-o", html, files[0]])
    page = open(html).read()
    cells = re.findall(r"<tr[^>]*><td>([0-9a-f]{16})</td><td>([^<]*)</td><td>([^<]*)</td>"
                       r"<td>([^<]*)</td><td>(\d+)</td>", page)
    check(len(cells) == len(one["rows"]), "report: %d rows, stats %d" % (len(cells), len(one["rows"])))
    got = sorted((c[0], c[1], c[2], int(c[4])) for c in cells)
    want = sorted((r["comm"], r["op"], r["dtype"], r["count"]) for r in one["rows"])
    check(got == want, "report counts = stats counts: %s vs %s" % (got, want))
    print("ok: count = distinct collectives: one of 4 files counts 22 AllGathers (was 5); report the same")

    # rows with some enqueue-only operations: two synthetic runs of the same
    # comm, one without children (Coll only), one with ProxyOp completions
    runs = {}
    for name, events in (("eo", "Coll"), ("done", "Coll,ProxyOp")):
        out = os.path.join(d, name)
        run([fake, "--plugin", plugin, "--synthetic", "200"],
            env={"NCCLSCOPE_DIR": out, "NCCLSCOPE_EVENTS": events})
        runs[name] = trace_files(out)[0]
    eo = {key(r): r for r in stats(cli, [runs["eo"]])["rows"]}
    done = {key(r): r for r in stats(cli, [runs["done"]])["rows"]}
    for jobs in ("1", "2"):
        mixed = stats(cli, [runs["eo"], runs["done"]], "-j", jobs)["rows"]
        check(len(mixed) == len(done) and len(mixed) >= 3, "mixed: %d rows" % len(mixed))
        for r in mixed:
            k, e, c = key(r), eo[key(r)], done[key(r)]
            check(e["algbw_GBps"] is None and c["enqueue_only"] == 0, "%s: runs as meant" % (k,))
            check(0 < r["enqueue_only"] < r["rank_ops"] and r["timing"] == "host-only"
                  and r["bw_from"] == "host", "%s: some enqueue only: %s" % (k, r))
            # host time of the completed operations only, as their own file's
            for t in ("p50_us", "p99_us", "max_us"):
                check(r[t] == c[t], "-j %s %s: %s %s, of completions only %s" % (jobs, k, t, r[t], c[t]))
            # the completed operations' p50 alone, as the file holding only them
            for b in ("algbw_GBps", "busbw_GBps", "host_algbw_GBps", "host_busbw_GBps"):
                check(r[b] == c[b], "-j %s %s: %s %s, from completions only %s" % (jobs, k, b, r[b], c[b]))
            # the same collectives (same comm and seqNumbers) in both files
            check(r["count"] == c["count"] == e["count"] and r["rank_ops"] == 2 * c["rank_ops"],
                  "-j %s %s: count %d (files %d, %d), rank-ops %d" % (jobs, k, r["count"], e["count"],
                                                                   c["count"], r["rank_ops"]))
    print("ok: some enqueue only: bandwidth from the completed operations; count of distinct collectives (-j 1, 2)")


if __name__ == "__main__":
    main()
