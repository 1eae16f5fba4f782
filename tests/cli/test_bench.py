# SPDX-License-Identifier: Apache-2.0
"""Smoke run of the callback-latency harness (a benchmark, not a timed test):
it loads the plugins the way NCCL does, drives every mix, writes its JSON
(the fields below), reads ncclscope's own drop counters back from its
trace and the counting plugin's counts from its file, runs a short knee
search and the NCCL thread pattern (empty, floor and ncclscope side by side),
and refuses bad arguments. No latency is asserted; one rate is: a
single writer at SUSTAINED_RATE callbacks/s with every event type must
keep every callback at default settings.

usage: test_bench.py [COUNTING_PLUGIN_SO]"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, run, tmpdir  # noqa: E402

FIELDS = ("p50_ns", "p99_ns", "p999_ns", "max_ns", "events_per_s", "drops", "floor_ns",
          "callbacks_per_s", "callbacks_offered", "callbacks_kept", "zero_drop", "sustained", "drain_ms")
KNEE_FIELDS = ("max_zero_drop_rate", "max_zero_drop_rate_per_thread", "flat_out_rate", "bound", "probes")

# Callbacks per second from one writer, every event type, default settings:
# a rate a loaded 2-core CI machine sustains with zero drops whatever else
# runs there (the rates a free machine keeps are docs/benchmarks.md's knee).
SUSTAINED_RATE = 1e6


def main():
    bench, empty = os.environ["NSC_BENCH"], os.environ["NSC_EMPTY"]
    scope = os.environ["NSC_PLUGIN"]
    counting = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(empty), "libnccl-profiler-counting.so")
    check(os.path.exists(counting), "counting plugin missing: %s" % counting)
    d = tmpdir()
    js = os.path.join(d, "b.json")
    # A low rate and rings large enough for a slow machine's hiccups (this runs
    # under ASan and TSan too): the flusher keeps up, so ncclscope must keep
    # every event and its trace must be intact.
    r = run([bench, "--plugin", empty, "--plugin", counting, "--plugin", scope, "--mix",
             "allreduce64,allreduce1m,network", "--thread-counts", "1,2", "--seconds", "0.2", "--rate", "20000",
             "--json", js], env={"NCCLSCOPE_RING_KB": "8192"})
    rows = json.load(open(js))
    check(len(rows) == 3 * 3 * 2 * 3, "rows: %d" % len(rows))
    for row in rows:
        for f in FIELDS:
            check(f in row, "field %s missing in %s" % (f, row))
        check(row["floor_ns"] > 0 and row["p50_ns"] > 0, "timings present: %s" % row)
        check(row["events_offered"] > 0, "events offered: %s" % row)
        check(row["drops"] == 0 and row["events_kept"] == row["events_offered"] and row["zero_drop"],
              "every event kept at a low rate: %s" % row)
        check(row["callbacks_kept"] == row["callbacks_offered"] > row["events_offered"],
              "every callback kept: %s" % row)
        # how "kept" was observed: ncclscope's trace, the counting plugin's
        # counts (2 threads counting at once), the empty plugin's handles
        seen = {"ncclscope": "trace", "counting": "counts", "empty": "handles"}[row["plugin"]]
        check(row["kept_seen_in"] == seen, "kept observed in %s, expected %s: %s" % (row["kept_seen_in"], seen, row))
        if row["plugin"] == "ncclscope":
            check(row["trace_bytes"] > 0 and row["trace_damage"] == 0,
                  "ncclscope wrote an intact trace: %s" % row)
            check(0 < row["bytes_per_event"] < 64, "bytes per event: %s" % row)
    check("p50/tsc" in r.stdout and "empty" in r.stdout and "ncclscope" in r.stdout,
          "table printed:\n" + r.stdout)
    print("ok: %d JSON rows, every event kept" % len(rows))

    # NCCL's threads: application threads and a proxy thread, the three
    # reference points in one run, two rounds; the shape of the report, not
    # its timings (this machine is shared). Before the timed checks below,
    # so that sanitizer builds, which may miss their rates, still run it
    # (two application threads initialise comms at once).
    floor = os.path.join(os.path.dirname(empty), "libnccl-profiler-floor.so")
    js5 = os.path.join(d, "p.json")
    r = run([bench, "--nccl-pattern", "--plugin", empty, "--plugin", floor, "--plugin", scope,
             "--threads", "2", "--seconds", "0.2", "--rounds", "2", "--json", js5])
    rows = json.load(open(js5))
    runs = [x for x in rows if x["kind"] == "nccl-pattern"]
    meds = [x for x in rows if x["kind"] == "nccl-pattern-median"]
    check(len(rows) == 9 and len(runs) == 6 and len(meds) == 3, "pattern rows: %s" % rows)
    check(sorted(x["plugin"] for x in meds) == ["empty", "floor", "ncclscope"]
          and sorted((x["round"], x["plugin"]) for x in runs)
          == [(k, p) for k in (1, 2) for p in ("empty", "floor", "ncclscope")], "every plugin ran: %s" % rows)
    for x in rows:
        check(x["app_threads"] == 2 and x["proxy_threads"] == 1, "threads: %s" % x)
        check(x["app_ops"] > 0 and x["proxy_ops"] > 0 and x["app_p50_ticks"] > 0 and x["proxy_p50_ticks"] > 0,
              "both sides timed: %s" % x)
        check(abs(x["total_p50_ticks"] - x["app_p50_ticks"] - x["proxy_p50_ticks"]) < 1 or x["kind"] != "nccl-pattern",
              "total is app + proxy: %s" % x)
        # NCCL's split: 12 calls on the application thread, 32 on the proxy's
        check(abs(x["app_calls_per_op"] - 12) < 0.01 and abs(x["proxy_calls_per_op"] - 32) < 0.5,
              "calls per side: %s" % x)
        check(x["total_x_floor"] is not None and x["total_x_floor"] > 0, "ratio to the floor: %s" % x)
        if x["plugin"] == "floor":
            check(x["total_x_floor"] == 1.0 and x["net_x_floor"] == 1.0, "the floor is its own unit: %s" % x)
        check("net_x_floor" in x and (x["net_x_floor"] is None or x["net_x_floor"] >= 0), "net ratio: %s" % x)
        check(x["callbacks_offered"] > 0 and x["callbacks_kept"] <= x["callbacks_offered"], "kept counted: %s" % x)
        seen = {"ncclscope": "trace", "floor": "handles", "empty": "handles"}[x["plugin"]]
        check(x["kept_seen_in"] == seen, "kept observed in %s: %s" % (seen, x))
        if x["plugin"] != "ncclscope":
            check(x["zero_drop"], "a reference plugin keeps every handle: %s" % x)
    for word in ("nccl-pattern", "app p50", "proxy p50", "x floor", "net x", "median of 2 rounds"):
        check(word in r.stdout, "%r in the table:\n%s" % (word, r.stdout))
    print("ok: nccl-pattern: %s" % ", ".join("%s %.0f+%.0f ticks (x%.2f)" % (
        x["plugin"], x["app_p50_ticks"], x["proxy_p50_ticks"], x["total_x_floor"]) for x in meds))
    r = run([bench, "--nccl-pattern", "--mix", "allreduce64"], ok=(1,))
    check("--nccl-pattern" in r.stderr, r.stderr)
    r = run([bench, "--nccl-pattern", "--rounds", "0"], ok=(1,))
    check("--rounds" in r.stderr, r.stderr)

    # Sustained rate: one writer, every event type, default settings (no
    # ring override), long enough that buffers alone cannot hide a flusher
    # that falls behind: every callback kept and the plugin drained at once.
    js3 = os.path.join(d, "s.json")
    r = run([bench, "--plugin", counting, "--plugin", scope, "--mix", "allreduce64,network", "--thread-counts", "1",
             "--seconds", "2", "--cb-rate", "%g" % SUSTAINED_RATE, "--json", js3])
    rows = [x for x in json.load(open(js3)) if x["kind"] == "start"]
    check(len(rows) == 4, "sustained rows: %s" % rows)
    for x in rows:
        got = x["callbacks_per_s"]
        check(got >= 0.9 * SUSTAINED_RATE, "%s %s: the writer reached only %.0f of %g callbacks/s" % (
            x["plugin"], x["workload"], got, SUSTAINED_RATE))
        check(x["zero_drop"] and x["callbacks_kept"] == x["callbacks_offered"] and x["drops"] == 0,
              "%s %s at %.2f M callbacks/s: kept %d of %d callbacks, %d events dropped" % (
                  x["plugin"], x["workload"], got / 1e6, x["callbacks_kept"], x["callbacks_offered"], x["drops"]))
        check(x["sustained"], "%s %s at %.2f M callbacks/s kept everything but needed %.0f ms to drain" % (
            x["plugin"], x["workload"], got / 1e6, x["drain_ms"]))
        print("ok: sustained %.2f M callbacks/s (%s, %s): %d callbacks, all kept, drained in %.1f ms" % (
            got / 1e6, x["plugin"], x["workload"], x["callbacks_offered"], x["drain_ms"]))

    # The knee: a short search per plugin; the counting plugin never loses
    # anything, so the writer's flat-out rate is its knee.
    js4 = os.path.join(d, "k.json")
    r = run([bench, "--plugin", counting, "--plugin", scope, "--mix", "allreduce64", "--thread-counts", "1",
             "--seconds", "0.2", "--knee", "4", "--json", js4])
    rows = json.load(open(js4))
    check(len(rows) == 2 and all(x["kind"] == "knee" for x in rows), "knee rows: %s" % rows)
    for x in rows:
        for f in KNEE_FIELDS:
            check(f in x, "knee field %s missing: %s" % (f, x))
        check(x["probes"] and x["max_zero_drop_rate"] > 0, "a rate was kept: %s" % x)
        # the knee is the confirmation run that passed, else the fastest
        # probe that kept everything
        passed = [p for p in x["probes"] if p["sustained"] and p["confirm"] == x["confirmed"]]
        check(passed, "no passing probe behind the knee: %s" % x)
        best = passed[-1] if x["confirmed"] else max(passed, key=lambda p: p["offered_rate"])
        check(abs(best["offered_rate"] - x["max_zero_drop_rate"]) < 1 and best["callbacks_kept"] == best["callbacks"]
              and best["zero_drop"], "the knee is a probe that kept everything: %s" % x)
        check(all(not p["sustained"] for p in x["probes"] if p["target_per_thread"] == 0) or x["bound"] == "writers",
              "a flat-out pass means the writers are the limit: %s" % x)
    cnt = [x for x in rows if x["plugin"] == "counting"][0]
    check(cnt["bound"] == "writers" and len(cnt["probes"]) == 1 and cnt["max_zero_drop_rate"] == cnt["flat_out_rate"],
          "counting plugin: the writer is the limit: %s" % cnt)
    check("max_zero_drop_rate" in r.stdout and "ncclscope" in r.stdout and "counting" in r.stdout,
          "knee table printed:\n" + r.stdout)
    print("ok: knee: %s" % ", ".join("%s %.2f M callbacks/s (%s)" % (x["plugin"], x["max_zero_drop_rate"] / 1e6, x["bound"])
                                     for x in rows))

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
    r = run([bench, "--replay", data_dir(), "--knee", "5"], ok=(1,))
    check("--knee" in r.stderr, r.stderr)
    r = run([bench, "--knee", "0"], ok=(1,))
    check("--knee" in r.stderr, r.stderr)
    print("ok: bad arguments refused")


if __name__ == "__main__":
    main()
