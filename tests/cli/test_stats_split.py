# SPDX-License-Identifier: Apache-2.0
"""stats' wait/transfer split, --skip-first and --time.

1. A synthetic 4-rank job with known GPU times (tests/cli/split_rank.c: rank
   R's kernel starts R*W after rank 0's, every rank's ends X after the last
   one started): stats must give rank R a wait of (3-R)*W and every rank a
   transfer of X in AllReduce, bandwidth from the transfer p50
   (bw_from "transfer"), and no split for Broadcast (bw from GPU time). The
   first AllReduce is a slow warm-up: --skip-first 2 leaves it (and the
   first Broadcast) out of every rank.
2. The shipped real traces: per row, wait and transfer are parts of the GPU
   time (per operation wait + transfer = GPU time: --by-caller's sums),
   bw_from is set wherever there is a completion, the nccl-tests-like H200
   traces (both GPUs of one process started together) spend their GPU time
   transferring, not waiting.
3. --time keeps the operations convert --time keeps (its completion slices),
   --skip-first counts what it leaves out, -j does not change the output.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir, trace_files  # noqa: E402

W_US, X_US, FIRST_US, N, OPS = 2000, 3000, 20000, 4, 16


def stats(cli, paths, *extra):
    return json.loads(run([cli, "stats", "--json", *extra, *paths]).stdout)


def near(v, want, tol):
    return v is not None and abs(v - want) <= tol


def synthetic(cli, plugin, driver, d):
    out = os.path.join(d, "split")
    base = time.monotonic_ns() + 700_000_000  # every process up by then
    env = dict(os.environ, NCCLSCOPE_DIR=out, NCCLSCOPE_EVENTS="default,KernelCh")
    procs = [subprocess.Popen([driver, "--plugin", plugin, "--rank", str(r), "--nranks", str(N),
                               "--ops", str(OPS), "--base", str(base), "--step-us", str(W_US),
                               "--xfer-us", str(X_US), "--first-xfer-us", str(FIRST_US)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(N)]
    for p in procs:
        o, e = p.communicate(timeout=120)
        check(p.returncode == 0 and o.startswith("done"), "split_rank: %d %s %s" % (p.returncode, o, e))
    files = trace_files(out)
    check(len(files) == N, "one trace per rank: %s" % files)
    # Mapping error: the least (host stop - GPU end) of a rank, its scheduling
    # delay; on a loaded machine tens to hundreds of microseconds.
    tol = 400.0
    s = stats(cli, files)
    rows = {r["op"]: r for r in s["rows"]}
    check(set(rows) == {"AllReduce", "Broadcast"}, "rows: %s" % sorted(rows))
    ar, bc = rows["AllReduce"], rows["Broadcast"]
    n_ar = N * OPS // 2
    check(ar["rank_ops"] == ar["gpu_ops"] == ar["split_ops"] == n_ar and ar["bw_from"] == "transfer",
          "AllReduce: every rank-op split, bandwidth from transfer: %s" % ar)
    # waits 0, W, 2W, 3W, each a quarter of the rank-ops: p50 is 2W (the
    # lower half ends at W), p99 3W; transfer X but the warm-up's F
    check(near(ar["wait_p50_us"], 2 * W_US, tol) and near(ar["wait_p99_us"], 3 * W_US, tol),
          "AllReduce wait p50 %s (want %d), p99 %s (want %d)" % (ar["wait_p50_us"], 2 * W_US,
                                                              ar["wait_p99_us"], 3 * W_US))
    check(near(ar["transfer_p50_us"], X_US, tol) and near(ar["transfer_p99_us"], FIRST_US, tol * 2),
          "AllReduce transfer p50 %s (want %d), p99 %s (the warm-up, %d)" % (
              ar["transfer_p50_us"], X_US, ar["transfer_p99_us"], FIRST_US))
    check(near(ar["gpu_p50_us"], 2 * W_US + X_US, tol * 1.2), "AllReduce GPU p50 %s" % ar["gpu_p50_us"])
    nbytes = 4 << 20
    want_bus = nbytes / (ar["transfer_p50_us"] * 1e3) * 2 * (N - 1) / N
    check(abs(ar["busbw_GBps"] - want_bus) <= 0.002 * want_bus + 0.002 and ar["avg_bytes"] == nbytes,
          "AllReduce busbw %s from transfer p50 %s: %s" % (ar["busbw_GBps"], ar["transfer_p50_us"], want_bus))
    check(bc["split_ops"] == 0 and bc["wait_p50_us"] is None and bc["transfer_p50_us"] is None
          and bc["bw_from"] == "gpu", "Broadcast: no split, bandwidth from GPU time: %s" % bc)
    check(near(bc["busbw_GBps"], nbytes / (bc["gpu_p50_us"] * 1e3), 0.002 * bc["busbw_GBps"] + 0.002),
          "Broadcast busbw from GPU p50: %s" % bc)
    # --by-caller: per operation wait + transfer = GPU time (sums equal)
    bc_rows = json.loads(run([cli, "stats", "--by-caller", "--json", *files]).stdout)
    check(bc_rows["time_basis"] == "gpu", "by-caller: shares of GPU time: %s" % bc_rows)
    arc = [c for c in bc_rows["callers"] if c["op"] == "AllReduce"][0]
    check(arc["split_ops"] == arc["gpu_ops"] == n_ar
          and abs(arc["wait_us"] + arc["transfer_us"] - arc["gpu_us"]) < 0.01,
          "by-caller AllReduce: wait + transfer = GPU time: %s" % arc)
    want_wait = (OPS // 2) * W_US * (0 + 1 + 2 + 3)
    check(abs(arc["wait_us"] - want_wait) <= n_ar * tol, "by-caller wait %s, want %d" % (arc["wait_us"], want_wait))
    text = run([cli, "stats", "--by-caller", *files]).stdout
    check("waiting for the last rank's kernel to start" in text and "wait ms" in text, text)
    # the warm-up: --skip-first 2 leaves out operations 0 and 1 of every rank
    k = stats(cli, files, "--skip-first", "2")
    kar = {r["op"]: r for r in k["rows"]}["AllReduce"]
    check(k["skipped_first"] == 2 * N and k["operations"] == s["operations"] - 2 * N,
          "--skip-first 2: %d left out (want %d)" % (k["skipped_first"], 2 * N))
    check(kar["split_ops"] == n_ar - N and near(kar["transfer_p99_us"], X_US, tol)
          and kar["gpu_max_us"] < FIRST_US / 2, "--skip-first: the warm-up is gone: %s" % kar)
    # report shows the split and what was left out
    html = os.path.join(d, "split.html")
    run([cli, "report", "--skip-first", "2", "-o", html, *files])
    page = open(html).read()
    check("%d rank-operations left out as warm-up" % (2 * N) in page and "<th>wait p50</th>" in page,
          "report: the split and the warm-up left out")
    print("ok: synthetic 4 ranks: wait p50 %.0f us (want %d), transfer p50 %.0f us (want %d), "
          "busbw from transfer; Broadcast not split; --skip-first drops the warm-up"
          % (ar["wait_p50_us"], 2 * W_US, ar["transfer_p50_us"], X_US))


def shipped(cli):
    data = data_dir()
    for name in ("h200x4_procs", "h200x2_mixed_64KiB.nsc", "h200x2_net_1MiB.nsc"):
        path = os.path.join(data, name)
        s = stats(cli, [path])
        for r in s["rows"]:
            where = "%s %s %s %d" % (name, r["op"], r["dtype"], r["size_max_bytes"])
            check(r["bw_from"] in ("transfer", "gpu"), "%s: bw_from %s" % (where, r["bw_from"]))
            if r["split_ops"]:
                check(r["op"] in ("AllReduce", "AllGather", "ReduceScatter"), "%s: split" % where)
                check(r["split_ops"] <= r["gpu_ops"] and r["transfer_p99_us"] <= r["gpu_max_us"] + 1e-3
                      and r["wait_p99_us"] <= r["gpu_max_us"] + 1e-3
                      and r["transfer_p50_us"] <= r["gpu_max_us"] + 1e-3,
                      "%s: wait and transfer within GPU time: %s" % (where, r))
                check((r["bw_from"] == "transfer") == (r["split_ops"] == r["rank_ops"]), "%s: %s" % (where, r))
            else:
                check(r["wait_p50_us"] is None and r["bw_from"] == "gpu", "%s: no split: %s" % (where, r))
            if name.startswith("h200x2") and r["split_ops"]:
                # nccl-tests-like: both GPUs of the process started together
                check(r["transfer_p50_us"] >= 0.8 * r["gpu_p50_us"] and r["wait_p50_us"] < 0.2 * r["gpu_p50_us"],
                      "%s: GPUs started together, transfer ~ GPU time: %s" % (where, r))
        by = json.loads(run([cli, "stats", "--by-caller", "--json", path]).stdout)
        for c in by["callers"]:
            if c["split_ops"] == c["gpu_ops"] and c["split_ops"]:
                check(abs(c["wait_us"] + c["transfer_us"] - c["gpu_us"]) < 0.01 * c["rank_ops"],
                      "%s %s: wait + transfer = GPU time: %s" % (name, c["op"], c))
    print("ok: shipped traces: wait and transfer inside GPU time, bw_from set, nccl-tests-like traces transfer")


def filters(cli):
    job = os.path.join(data_dir(), "h200x4_procs")
    whole = stats(cli, [job])
    d = tmpdir()
    for w in ("0.342:0.344", "0.344:0.348", "0.33:0.34", "5:6"):
        s = stats(cli, [job], "--time", w)
        run([cli, "convert", "--detail", job, "--time", w, "-o", os.path.join(d, "w.json")])
        doc = json.load(open(os.path.join(d, "w.json")))
        kept = sum(1 for e in doc["traceEvents"] if e.get("cat") == "completion" and e["ph"] in ("X", "b"))
        check(s["operations"] == kept and s["operations"] + s["outside_window"] == whole["operations"],
              "--time %s: stats keeps %d, convert %d; %d outside" % (w, s["operations"], kept, s["outside_window"]))
        text = run([cli, "stats", job, "--time", w]).stdout
        check("%d outside %s s from the job's start" % (s["outside_window"], w) in text, text[:300])
    k = stats(cli, [job], "--skip-first", "5")
    # one comm, 4 ranks: 5 each
    check(k["skipped_first"] == 20 and k["operations"] == whole["operations"] - 20, "--skip-first 5: %s" % k["skipped_first"])
    ar = {(r["op"], r["size_max_bytes"]): r for r in k["rows"]}[("AllReduce", 1024)]
    war = {(r["op"], r["size_max_bytes"]): r for r in whole["rows"]}[("AllReduce", 1024)]
    check(war["gpu_max_us"] > 1000 and ar["gpu_max_us"] < 100,
          "--skip-first 5: the warm-up AllReduce (%.0f us) is left out: max %.2f us" % (war["gpu_max_us"], ar["gpu_max_us"]))
    for extra in (["--skip-first", "5"], ["--time", "0.342:0.346"], []):
        a = run([cli, "stats", "--json", "-j", "1", *extra, job]).stdout
        b = run([cli, "stats", "--json", "-j", "4", *extra, job]).stdout
        check(a == b, "-j 1 and -j 4 give the same output (%s)" % extra)
    for bad in (["--time", "2:1"], ["--time", "x"], ["--skip-first", "-1"], ["--skip-first", "1.5"]):
        p = run([cli, "stats", *bad, job], ok=(1,))
        check(p.stderr.count("\n") == 1 and bad[0] in p.stderr, "%s: one line: %s" % (bad, p.stderr))
    print("ok: --time keeps what convert --time keeps; --skip-first 5 leaves out 20 and the warm-up; -j same")


def main():
    cli, plugin, _ = env_paths()
    driver = sys.argv[1]
    d = tmpdir()
    shipped(cli)
    filters(cli)
    synthetic(cli, plugin, driver, d)


if __name__ == "__main__":
    main()
