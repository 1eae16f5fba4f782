# SPDX-License-Identifier: Apache-2.0
"""Communicators created and destroyed quickly: every comm's
description reaches the trace however many come and go between two flushes
(3,000 here; 2,048 were kept), and a second finalize of a dead context is
counted and harms no live comm, even one that now holds its slot.

Run A stalls the flusher (it takes descriptions only at the end: all 19,384
at once); run B makes it take every millisecond, concurrently with the
churn; run C holds 10,000 comms open at once (the comm table once held
1,024: the rest got no context and their events were lost). Each comm runs one AllReduce; `info` must list every comm, `stats`
must put each AllReduce under its own commHash, and (run A) in the converted
trace each must sit under its own comm's process, named with its name and
commHash."""
import os
import re
import sys

from nsctest import *

CHURN = 3000
LATE = 16383  # every slot of the comm table but the anchor's (comm_churn.c)


def expected(stale, churn):
    """commHash -> (name, rank) of every comm the driver creates."""
    e = {0xA11C0DE: ("anchor", 0)}
    for i in range(churn):
        e[0xC0000000 + i] = ("churn-%d" % i, i % 4)
    if stale:
        for j in range(LATE):
            e[0xD0000000 + j] = ("late-%d" % j, j % 4)
    return e


def check_run(driver, env, args, stale, converted, churn=CHURN):
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(env, NCCLSCOPE_DIR=d)
    out = run([driver, "--plugin", plugin, "--comms", str(churn), *args], env=env).stdout
    check("comms %d" % churn in out, out)
    files = trace_files(d)
    check(len(files) == 1, "one session, one file: %s" % files)
    want = expected(stale, churn)

    # info: every comm listed once, with its name, rank and commHash
    info = run([cli, "info", files[0]]).stdout
    listed = {}
    for m in re.finditer(r'#(\d+) rank (-?\d+) of 4, 1 node\(s\), commId ([0-9a-f]{16}) name "([^"]*)"', info):
        h = int(m.group(3), 16)
        check(h not in listed, "comm %x listed twice" % h)
        listed[h] = (m.group(4), int(m.group(2)))
    missing = sorted(set(want) - set(listed))
    check(not missing, "%d comm descriptions missing from the file, e.g. %s" %
          (len(missing), [want[h][0] for h in missing[:5]]))
    check(listed == want, "comm descriptions differ from what the driver created")
    # stale: every churn comm's second finalize, and the Coll of the comm
    # refused past the full table (comm_churn.c)
    m = re.search(r"invalid calls\s+(\d+) unknown contexts", info)
    check(m and int(m.group(1)) == (churn + 1 if stale else 0),
          "unknown contexts: %s (want %d)" % (m and m.group(1), churn + 1 if stale else 0))

    # convert: each comm's AllReduce under its own comm's process
    if converted:
        check_converted(files, d, want)

    # stats: no operation without its comm
    stats = run([cli, "stats", files[0]]).stdout
    check("0000000000000000" not in stats, "operations under comm 0000000000000000:\n" + stats[:2000])
    rows = [int(h, 16) for h in re.findall(r"^([0-9a-f]{16}) +4 AllReduce ", stats, re.M)]
    check(sorted(rows) == sorted(want), "stats: one row per comm")
    return len(want)


def check_converted(files, d, want):
    doc, _ = convert(files, os.path.join(d, "t.json"))
    pname = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    seen = {}
    for e in doc["traceEvents"]:
        if e["ph"] != "X" or e.get("cat") != "Coll":
            continue
        a = e["args"]
        check("commHash" in a, "a Coll without its comm: %s" % e)
        h = int(a["commHash"], 16)
        check(h in want, "Coll on an unknown comm %x" % h)
        name, rank = want[h]
        check(pname.get(e["pid"], "").endswith("rank %d/4 comm %s %016x" % (rank, name, h)),
              "Coll of %s under process %r" % (name, pname.get(e["pid"])))
        seen[h] = seen.get(h, 0) + 1
    lost = sorted(set(want) - set(seen))
    check(not lost, "%d comms' AllReduce missing (a second finalize closed them?), e.g. %s" %
          (len(lost), [want[h][0] for h in lost[:5]]))
    check(all(n == 1 for n in seen.values()), "a comm's AllReduce appears twice")


def check_metrics(driver, idle=0, flush_ms=None):
    """Live metrics keep a finalized comm's last counts for a while (a
    minute at least: a collector scraping less often than they are written
    still sees them): 40 comms each run an AllReduce and end, then the
    process lingers 2.5 s while the file is rewritten every second; the
    file left at the end (NCCLSCOPE_METRICS_KEEP) still counts all 40.
    idle: that many comms end without an operation first and are shown
    ended in a file (more than the 4,096 the metrics follow): they give way
    to the 40, which must all be counted still.
    flush_ms: the flusher takes comm descriptions that late (4 s: after the
    churn comms ended and a file showed them). The idle comms' finalize
    records came long before (their entries gave way to the 40, or found
    the table full), and their descriptions must not bring them back as
    live comms that never end: they filled the table and pushed the 40
    out (also what a loaded machine did now and then without the delay)."""
    _, plugin, _ = env_paths()
    for attempt in (1, 2):
        d, m = tmpdir(), tmpdir()
        env = {"NCCLSCOPE_DIR": d, "NCCLSCOPE_METRICS_DIR": m, "NCCLSCOPE_METRICS_SECONDS": "1",
               "NCCLSCOPE_METRICS_KEEP": "1"}
        if flush_ms:
            env["NCCLSCOPE_FLUSH_MS"] = str(flush_ms)
        p = run([driver, "--plugin", plugin, "--comms", "40", "--open-at-once", "5", "--linger-ms", "2500",
                 "--idle", str(idle)], env=env)
        proms = [os.path.join(m, f) for f in os.listdir(m) if f.endswith(".prom")]
        check(len(proms) == 1, "one metrics file: %s" % os.listdir(m))
        ops = {}
        for line in open(proms[0]):
            g = re.match(r'ncclscope_operations_total\{comm="([0-9a-f]+)".*\} (\d+)$', line)
            if g:
                ops[int(g.group(1), 16)] = ops.get(int(g.group(1), 16), 0) + int(g.group(2))
        churn = {k: v for k, v in ops.items() if 0xC0000000 <= k < 0xC0000000 + 40}
        check(len(churn) == 40 and set(churn.values()) == {1},
              "the ended comms' counts in the last file: %d of 40 comms, %s" % (len(churn), sorted(churn.items())[:5]))
        if ops.get(0xA11C0DE) == 1:
            return len(churn)
        # The anchor's one AllReduce comes right before the session's end:
        # in a full-suite run it was missing from the last file now and then
        # (2 of about 10), never alone; the file is then the one written
        # during the linger. Once more, and it must be there.
        check(attempt == 1, "the anchor's AllReduce in the last file: %s (twice)\n%s"
              % (ops.get(0xA11C0DE), getattr(p, "stderr", "")[-1500:]))
        print("note: the anchor's last AllReduce missing from the final metrics file (%s); once more"
              % ops.get(0xA11C0DE))


def main():
    driver = sys.argv[1]
    kept = check_metrics(driver)
    check_metrics(driver, idle=4200)
    check_metrics(driver, idle=4200, flush_ms=4000)
    n = check_run(driver, {"NCCLSCOPE_FLUSH_MS": "3600000", "NCCLSCOPE_DRAIN_US": "3600000000"},
                  ["--open-at-once", "100", "--stale-finalize"], True, True)
    m = check_run(driver, {"NCCLSCOPE_FLUSH_MS": "1", "NCCLSCOPE_DRAIN_US": "100"},
                  ["--open-at-once", "1000"], False, False)
    w = check_run(driver, {}, ["--open-at-once", "10000"], False, False, churn=10000)
    print("ok: %d comms with a stalled flusher (%d stale finalizes counted, no live comm harmed), "
          "%d with a flusher taking every millisecond, %d open at once; every description and "
          "operation in the trace; %d ended comms' counts still in the live metrics after 2.5 s, "
          "also after 4,200 ended comms, described early or late" % (n, CHURN, m, w, kept))


main()
