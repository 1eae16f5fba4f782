"""Smoke run of the callback-latency harness (a benchmark, not a timed test):
it loads both plugins the way NCCL does, drives every mix, writes the JSON
the issue asks for, reads ncclscope's own drop counters back from its
trace, and refuses bad arguments. No timing is asserted."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, run, tmpdir  # noqa: E402

FIELDS = ("p50_ns", "p99_ns", "p999_ns", "max_ns", "events_per_s", "drops", "floor_ns")


def main():
    bench, empty = os.environ["NSC_BENCH"], os.environ["NSC_EMPTY"]
    scope = os.environ["NSC_PLUGIN"]
    d = tmpdir()
    js = os.path.join(d, "b.json")
    # A low rate and rings large enough for a slow machine's hiccups (this runs
    # under ASan and TSan too): the flusher keeps up, so ncclscope must keep
    # every event and its trace must be intact.
    r = run([bench, "--plugin", empty, "--plugin", scope, "--mix", "allreduce64,allreduce1m,network",
             "--thread-counts", "1,2", "--seconds", "0.2", "--rate", "20000", "--json", js],
            env={"NCCLSCOPE_RING_KB": "8192"})
    rows = json.load(open(js))
    check(len(rows) == 2 * 3 * 2 * 3, "rows: %d" % len(rows))
    for row in rows:
        for f in FIELDS:
            check(f in row, "field %s missing in %s" % (f, row))
        check(row["floor_ns"] > 0 and row["p50_ns"] > 0, "timings present: %s" % row)
        check(row["events_offered"] > 0, "events offered: %s" % row)
        check(row["drops"] == 0 and row["events_kept"] == row["events_offered"],
              "every event kept at a low rate: %s" % row)
        if row["plugin"] == "ncclscope":
            check(row["trace_bytes"] > 0 and row["trace_damage"] == 0,
                  "ncclscope wrote an intact trace: %s" % row)
            check(0 < row["bytes_per_event"] < 64, "bytes per event: %s" % row)
    check("p50/tsc" in r.stdout and "empty" in r.stdout and "ncclscope" in r.stdout,
          "table printed:\n" + r.stdout)
    print("ok: %d JSON rows, every event kept" % len(rows))

    # Drops are counted, not hidden: a tiny ring with a stalled flusher.
    js2 = os.path.join(d, "d.json")
    run([bench, "--plugin", scope, "--mix", "allreduce64", "--thread-counts", "1", "--seconds", "0.2",
         "--json", js2], env={"NCCLSCOPE_RING_KB": "4", "NCCLSCOPE_DRAIN_US": "1000000"})
    rows = json.load(open(js2))
    check(all(x["drops"] > 0 and x["events_kept"] < x["events_offered"] for x in rows),
          "drops reach the report: %s" % rows)
    print("ok: drops reported (%d of %d events)" % (rows[0]["drops"], rows[0]["events_offered"]))

    # Recorded streams through a forced older API version.
    r = run([bench, "--plugin", scope, "--replay", data_dir(), "--version", "v4", "--seconds", "0.1"])
    check("v4" in r.stdout or " 4 " in r.stdout, "forced v4:\n" + r.stdout)
    check("LOSS" not in r.stdout, "replays keep every event:\n" + r.stdout)
    print("ok: replay of tests/data through v4")

    # Bad arguments: a clear message and a non-zero exit.
    r = run([bench, "--plugin", os.path.join(d, "missing.so"), "--mix", "allreduce64",
             "--thread-counts", "1", "--seconds", "0.1"], ok=(3,))
    check("missing.so" in r.stderr, r.stderr)
    r = run([bench, "--mix", "nosuchmix"], ok=(1,))
    check("unknown mix" in r.stderr, r.stderr)
    print("ok: bad arguments refused")


if __name__ == "__main__":
    main()
