# SPDX-License-Identifier: Apache-2.0
"""The in-process hang watchdog, NCCLSCOPE_HANG_SECONDS=1.

Hung jobs of the fake host (tests/cli/hang_rank.c): one rank skips
AllReduce 9 (4 ranks), and a p2p peer never posts its receive. In each
process that has operations in flight the watchdog must fire: a HANG block
in the trace, one log line through NCCL's logger (the host prints it), and
in flight mode a dump. `ncclscope hang` on the files names the rank and the
seqNumber from the HANG blocks (source "watchdog").

watchdog_driver.c: the watchdog fires once per stall and again after
progress resumed and stalled again; a slab that is full leaves events
record-only (counted in the HANG block; the trace is the same as with the
watchdog off); a late child of a completed operation whose slot was reused
is an orphan (counted, not attached to the new occupant, its trace parent
unchanged).

Pressure: 200,000 operations without KernelCh as fast as the fake host
issues them fill the slab (each keeps its slot for a grace after its stop);
the hang right after must still be watched and named."""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

from nsctest import *
import nsctrace

OPS = 10
HANG = 9
HDR = struct.Struct("<IHHHHIIIIIIIQQQ")       # nsc_hang_header, 64 bytes
COMM = struct.Struct("<IiQQQQQQIBBBB16s16s")  # nsc_hang_comm, 96 bytes
OP = struct.Struct("<QQQQQIiIIBBBBI16s")      # nsc_hang_op, 80 bytes
PROXY = struct.Struct("<QiiIiBBBB5HHII")       # nsc_hang_proxy, 48 bytes
WATCHDOG_LINE = "ncclscope: hang watchdog:"


def hang_blocks(path):
    """Every HANG block of a file, decoded: (header dict, comms, ops, proxies)."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for b in nsctrace.blocks(data):
        if b.type != HANG:
            continue
        p = nsctrace.payload(b)
        h = HDR.unpack_from(p, 0)
        keys = ("header_size", "comm_size", "op_size", "proxy_size", "reserved", "ncomms", "nops",
                "nproxies", "hang_seconds", "left_out", "reserved2", "reserved3", "ticks", "slab_full",
                "slab_orphans")
        hd = dict(zip(keys, h))
        if hd["reserved2"]:
            continue  # nsuspects: a block of the suspect level (test_suspect.py)
        check(hd["header_size"] == 64 and hd["comm_size"] == 96 and hd["op_size"] == 80 and
              hd["proxy_size"] == 48, "HANG sizes: %s" % hd)
        check(len(p) == 64 + 96 * hd["ncomms"] + 80 * hd["nops"] + 48 * hd["nproxies"],
              "HANG length %d: %s" % (len(p), hd))
        off = 64
        comms, ops, proxies = [], [], []
        for _ in range(hd["ncomms"]):
            comms.append(COMM.unpack_from(p, off))
            off += 96
        for _ in range(hd["nops"]):
            ops.append(OP.unpack_from(p, off))
            off += 80
        for _ in range(hd["nproxies"]):
            proxies.append(PROXY.unpack_from(p, off))
            off += 48
        out.append((hd, comms, ops, proxies))
    return out


def wait_lines(errs, n, timeout=30):
    """Waits until each stderr file holds at least n watchdog lines."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        counts = []
        for e in errs:
            with open(e) as f:
                counts.append(f.read().count(WATCHDOG_LINE))
        if all(c >= n for c in counts):
            return counts
        time.sleep(0.1)
    return counts


def pid_of(f, pids):
    """The process (one of pids) that wrote trace file f: <host>-<pid>.nsc,
    a later flight dump <host>-<pid>-<N>.nsc (the host name may hold
    dashes and digits itself)."""
    name = os.path.basename(f)
    for pid in pids:
        if name.endswith("-%d.nsc" % pid) or re.search(r"-%d-\d+\.nsc$" % pid, name):
            return pid
    return None


def start_ranks(driver, plugin, env, d, nranks, ops, mode):
    """Starts a hung job's ranks (hang_rank --gate), lets them go together
    and waits until each reached its hang; returns the processes and their
    stderr files. Every rank's plugin is up before any rank starts to hang:
    in flight mode a flusher's first look at dump-all takes what is there as
    an earlier job's, so a rank slow to start (a loaded machine) would miss
    the job's dump-all."""
    errs = [os.path.join(d, "stderr-%d" % r) for r in range(nranks)]
    procs = [subprocess.Popen([driver, "--plugin", plugin, "--rank", str(r), "--nranks", str(nranks),
                               "--ops", str(ops), "--mode", mode, "--gate"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=open(errs[r], "w"), text=True) for r in range(nranks)]
    for p in procs:
        check(p.stdout.readline().strip() == "ready", "a rank did not start")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        check(p.stdout.readline().strip() == "hung", "a rank did not reach its hang")
    return procs, errs


def kill_ranks(procs):
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        p.stdin.close()


def fast_env(d):
    """Fast operations without KernelCh (what the default mask records),
    NCCL's INFO lines shown."""
    return dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HANG_SECONDS="1",
                NCCLSCOPE_EVENTS="Coll,ProxyOp,ProxyStep", NCCLSCOPE_HOST_LOG="1")


def hung_job(mode, nranks, flight):
    cli, plugin, _ = env_paths()
    driver = sys.argv[1]
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HANG_SECONDS="1",
               NCCLSCOPE_EVENTS="Coll,P2p,KernelCh,ProxyOp,ProxyStep")
    if flight:
        env["NCCLSCOPE_MODE"] = "flight"
    procs, errs = start_ranks(driver, plugin, env, d, nranks, OPS, mode)
    pids = [p.pid for p in procs]
    # The ranks with an operation in flight: all but the skipping one (coll),
    # the sender (p2p).
    inflight = list(range(nranks - 1)) if mode == "coll" else [0]
    stuck_pids = {pids[r] for r in inflight}

    def hang_pids():  # the processes with a HANG block in a file of theirs
        return {pid_of(f, pids) for f in trace_files(d) if hang_blocks(f)}
    counts = wait_lines([errs[r] for r in inflight], 1)
    check(all(c >= 1 for c in counts), "the watchdog did not fire in every stuck rank: %s" % counts)
    # every stuck rank's HANG block in a file (streaming: the next chunk
    # written; flight: the dump)
    deadline = time.time() + 30
    while time.time() < deadline and not stuck_pids <= hang_pids():
        time.sleep(0.1)
    # flight: a firing touches $NCCLSCOPE_DIR/dump-all, so the ranks with
    # nothing in flight (the one that skipped, the peer that never posted)
    # dump their window too
    def dumped():  # the processes that left a file; one dump each
        return [pid_of(f, pids) for f in trace_files(d)]
    while flight and time.time() < deadline and len(set(dumped())) < nranks:
        time.sleep(0.1)
    time.sleep(0.5)
    # (a stuck rank may dump twice: on the job's dump-all, then on its own
    # watchdog a moment later; the second dump holds its HANG block, and so
    # does the first when it was written after the firing: a dump takes
    # the latest HANG block when it writes, not when it was asked for)
    check(not flight or (set(dumped()) == set(pids) and len(dumped()) <= 2 * nranks),
          "every rank dumped (dump-all): %s" % trace_files(d))
    time.sleep(1.5)  # a second stall period: it must not fire again
    kill_ranks(procs)
    for r in range(nranks):
        with open(errs[r]) as f:
            text = f.read()
        n = text.count(WATCHDOG_LINE)
        check(n == (1 if r in inflight else 0), "rank %d logged %d watchdog lines: %s" % (r, n, text))
        if r in inflight:
            check(("AllReduce seq %d" % (OPS - 1) if mode == "coll" else "Send seq 0 peer 1") in text,
                  "the log line names the operation: %s" % text)
            check(not flight or "flight recorder dumping" in text, text)
    return cli, d, inflight, pids


def test_coll(flight):
    cli, d, inflight, pids = hung_job("coll", 4, flight)
    files = trace_files(d)
    with_hang = [f for f in files if hang_blocks(f)]
    # HANG blocks from the stuck ranks alone, every one of them; streaming:
    # in its one file; flight: in its own dump, maybe in its dump-all one too
    check({pid_of(f, pids) for f in with_hang} == {pids[r] for r in inflight} and
          (flight or len(with_hang) == len(inflight)),
          "HANG blocks in %s of %s (stuck: %s)" % (with_hang, files, [pids[r] for r in inflight]))
    for f in with_hang:
        hd, comms, ops, proxies = hang_blocks(f)[-1]
        check(hd["hang_seconds"] == 1 and hd["ncomms"] == 1 and hd["nops"] == 1, hd)
        c = comms[0]
        check(c[2] == 0x4a4e470001 and c[3] == OPS - 1 and c[4] == OPS - 2 and c[11] == 1, c)
        op = ops[0]
        check(op[1] == OPS - 1 and op[3] == 3 and op[4] == 2 and op[14].rstrip(b"\0") == b"AllReduce", op)
        # channel 1's ProxyOp finished (its slot is free again): channel 0's
        open_p = [p for p in proxies if not p[7]]
        check(len(proxies) == 1 and open_p and open_p[0][5] == 0, proxies)
        check(open_p[0][3] == 1 and open_p[0][4] == 0, "step 0 open: %s" % (open_p,))
        check(len(open_p) == 1 and open_p[0][9 + 2] == 1, "one step waiting for the peer: %s" % proxies)
    p = run([cli, "hang", d, "--json"], ok=(4,))
    h = json.loads(p.stdout)["hangs"]
    check(len(h) == 1 and h[0]["op"] == "AllReduce" and h[0]["seq"] == OPS - 1, h)
    # rank 3 has nothing in flight: its watchdog never fires; in flight mode
    # it dumps on dump-all, so both modes name it
    check(h[0]["missing_ranks"] == [3], h)
    stuck = h[0]["stuck_ranks"]
    check(sorted(s["rank"] for s in stuck) == [0, 1, 2], stuck)
    for s in stuck:
        check(s["source"] == "watchdog" and s["channels"] == [0] and s["peers"] == [s["rank"] + 1], s)
        po = [x for x in s["proxy_ops"] if not x["done"]]
        check(len(po) == 1 and po[0]["waiting"] == "waiting for the peer's receive" and
              po[0]["steps_waiting"]["peer"] == 1 and po[0]["steps_open"] == 1 and
              po[0]["lowest_open_step"] == 0, s)


def test_p2p(flight):
    cli, d, inflight, pids = hung_job("p2p", 2, flight)
    p = run([cli, "hang", d, "--json"], ok=(4,))
    h = json.loads(p.stdout)["hangs"]
    check(len(h) == 1 and h[0]["op"] == "Send", h)
    check(h[0]["missing_ranks"] == [1], h)
    s = h[0]["stuck_ranks"]
    check(len(s) == 1 and s[0]["rank"] == 0 and s[0]["source"] == "watchdog", s)
    check(s[0]["proxy_ops"][0]["peer"] == 1 and s[0]["proxy_ops"][0]["steps_waiting"]["peer"] == 1, s)
    w = h[0]["waits"]
    check(len(w) == 1 and w[0]["waits_for"] == 1 and not w[0]["peer_posted"], w)


def driver_run(mode, hang_seconds="1", events="Coll,KernelCh,ProxyOp,ProxyStep"):
    """Runs watchdog_driver: each of its stalls lasts until the watchdog
    logged its line for it (the n-th line for the n-th stall; after 30 s the
    test goes on and the counts below fail), or 1.5 s without a watchdog."""
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10",
               NCCLSCOPE_HANG_SECONDS=hang_seconds, NCCLSCOPE_EVENTS=events)
    err = os.path.join(d, "stderr")
    p = subprocess.Popen([sys.argv[2], "--plugin", plugin, "--mode", mode], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    out, stalls = [], 0
    for line in p.stdout:
        out.append(line)
        if line.strip() != "stalled":
            continue
        stalls += 1
        if hang_seconds != "0":
            wait_lines([err], stalls)
        else:
            time.sleep(1.5)
        p.stdin.write("go\n")
        p.stdin.flush()
    p.stdin.close()
    rc = p.wait(timeout=120)
    p.stdout.close()
    with open(err) as f:
        errtext = f.read()
    check(rc == 0 and out and out[-1].strip() == "done", "driver %s: %s %s" % (mode, out, errtext))
    files = trace_files(d)
    check(len(files) == 1, files)
    return cli, files[0], errtext


def test_rearm():
    cli, f, err = driver_run("rearm", events="Coll,P2p,KernelCh,ProxyOp,ProxyStep")
    n = err.count(WATCHDOG_LINE)
    check(n == 2, "one line per stall, none while idle (a Send to itself and a Recv of 0 bytes "
          "have no KernelCh): %d\n%s" % (n, err))
    hb = hang_blocks(f)
    check(len(hb) == 2, "one HANG block per stall: %d" % len(hb))
    check([b[2][0][1] for b in hb] == [0, 1], "AllReduce 0, then 1: %s" % [b[2] for b in hb])
    # each stalled with channel 1 done and channel 0 started, not done (a
    # KernelCh's start touches only its own slot: the scan tallies it)
    for blk in hb:
        op = blk[2][0]
        check(op[3] == 0b11 and op[4] == 0b10, "channels started/done: %s" % (op,))
    # the second block: AllReduce 0 completed
    c = hb[1][1][0]
    check(c[4] == 0 and c[7] == 1 and c[3] == 1, "last completed 0, 1 completed, last enqueued 1: %s" % (c,))
    run([cli, "hang", f], ok=(0,))  # everything completed in the end: no hang


def trace_summary(cli, f):
    out = os.path.join(tmpdir(), "t.json")
    doc, _ = convert([f], out)
    ev = events(doc)
    return sorted((e["name"], e["args"].get("id"), e["args"].get("parent")) for e in ev)


def test_full():
    cli, f, err = driver_run("full")
    hb = hang_blocks(f)
    check(len(hb) == 1, "one HANG block: %d" % len(hb))
    hd = hb[0][0]
    # 20,000 operations and their KernelCh for 16,384 slots: 8,192 pairs
    # tracked; each operation past them is refused (its KernelCh, whose
    # parent is record-only, is record-only without asking)
    check(hd["slab_full"] == 20000 - 8192, "full slab counted: %s" % hd)
    check(hd["nops"] == 2048 and hd["nops"] + hd["left_out"] >= 4096, "oldest 2048 kept: %s" % hd)
    check([o[1] for o in hb[0][2]] == list(range(2048)), "the oldest operations first")
    _, f0, _ = driver_run("full", "0")
    check(not hang_blocks(f0), "no HANG block without the watchdog")
    a, b = trace_summary(cli, f), trace_summary(cli, f0)
    check(len(a) == 40000 and [x[0] for x in a] == [x[0] for x in b],
          "the trace is the same with the watchdog: %d vs %d events" % (len(a), len(b)))
    # KernelCh parents are their AllReduce, slab handle or not
    ids = {x[1] for x in a if x[0].startswith("AllReduce")}
    check(all(x[2] in ids for x in a if x[0] == "KernelCh"), "KernelCh parents")


def test_orphan():
    cli, f, err = driver_run("orphan")
    hb = hang_blocks(f)
    check(len(hb) == 1, "one HANG block: %d" % len(hb))
    hd, comms, ops, proxies = hb[0]
    check(hd["slab_orphans"] == 1, "the late ProxyOp is an orphan: %s" % hd)
    check(len(ops) == 1 and ops[0][1] == 1 and ops[0][7] == 0, "AllReduce 1 has no ProxyOp: %s" % ops)
    out = os.path.join(tmpdir(), "t.json")
    doc, _ = convert([f], out)
    ev = events(doc)
    ar = {e["args"]["seqNumber"]: e["args"]["id"] for e in ev if e["name"] == "AllReduce" and "func" in e["args"]}
    po = [e for e in ev if e["name"].startswith("ProxyOp")]
    check(len(po) == 1 and po[0]["args"].get("parent") == ar[0],
          "the ProxyOp's parent in the trace is AllReduce 0: %s %s" % (po, ar))


def test_sessions():
    """A later session of the process with NCCLSCOPE_HANG_SECONDS=0 has no
    watchdog to scan the slab (which lives as long as the process): its
    operations must take no slots, or the ones without KernelCh that never
    complete would fill it and every start would pay for a refusal."""
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", NCCLSCOPE_HANG_SECONDS="1",
               NCCLSCOPE_EVENTS="Coll,KernelCh,ProxyOp,ProxyStep")
    out = subprocess.run([sys.argv[2], "--plugin", plugin, "--mode", "sessions"], env=env,
                         capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, out.stderr)
    check("slab handles: 100 0" in out.stdout,
          "first session watched, second (no watchdog) untracked: %s" % out.stdout)
    check("recorded: 100 100" in out.stdout, "both sessions record: %s" % out.stdout)
    # the child of a fork has no watchdog thread either
    out = subprocess.run([sys.argv[2], "--plugin", plugin, "--mode", "fork"], env=env,
                         capture_output=True, text=True, timeout=120)
    check(out.returncode == 0 and "child slab handles: 0" in out.stdout and
          "parent slab handle: 1" in out.stdout, "fork: %s %s" % (out.stdout, out.stderr))
    print("ok: sessions")


def test_learn():
    """Without KernelCh an operation's slot shows its progress only through
    its ProxyOps: a comm takes slots once a ProxyOp of its own came (the
    first operation with one learns it; a PXN ProxyOp of another process's
    does not count), per comm, and from its first operation when it spans
    nodes; with KernelCh every operation takes one."""
    cli, plugin, _ = env_paths()
    for events, want in (("Coll,ProxyOp,ProxyStep", "0 0 0 10 0 1"),
                         ("Coll,KernelCh,ProxyOp,ProxyStep", "10 10 1 10 10 1")):
        d = tmpdir()
        env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10",
                   NCCLSCOPE_HANG_SECONDS="1", NCCLSCOPE_EVENTS=events)
        out = subprocess.run([sys.argv[2], "--plugin", plugin, "--mode", "learn"], env=env,
                             capture_output=True, text=True, timeout=120)
        check(out.returncode == 0, out.stderr)
        check("learn slab handles: %s\n" % want in out.stdout,
              "%s: slab handles before, after a PXN ProxyOp, first with a ProxyOp, after it, "
              "other comm, comm across nodes: want %s: %s"
              % (events, want, out.stdout))
    print("ok: learn")


def test_steady():
    """Seconds of operations at a rate that fills the slab at the normal
    pace: one episode of pressure, not one per second (each of those left a
    few tens of milliseconds of operations unwatched): the watchdog stays at
    its pressed pace while the rate needs it. A run too short to show a
    second episode is run again with twice the operations. Under load an
    episode may end when the job slows: one more per 5 s is allowed."""
    cli, plugin, _ = env_paths()
    ops = 2000000
    for attempt in range(3):
        d = tmpdir()
        env = fast_env(d)
        t0 = time.time()
        procs, errs = start_ranks(sys.argv[1], plugin, env, d, 2, ops, "coll")
        took = time.time() - t0
        wait_lines([errs[0]], 1, timeout=60)
        kill_ranks(procs)
        with open(errs[0]) as f:
            text = f.read()
        if took > 2.5:
            break
        ops *= 2
    check(took > 2.5, "the run lasted %.1f s: too short to see a second episode" % took)
    # Cycling gave one episode per second. A loaded machine (sanitizers, 2
    # cores shared) can slow the job below the pressing rate for a moment,
    # which ends an episode honestly: at most one more per 5 s of run.
    n = text.count("hang watchdog under pressure")
    most = 1 + int(took // 5)
    check(1 <= n <= most, "%d episodes of pressure in %.1f s of operations (at most %d; cycling gives "
          "one a second):\n%s" % (n, took, most, text))
    print("ok: steady (%.1f s of operations, %d episode(s) of pressure)" % (took, n))


def test_pressure():
    """A hang right after 200,000 fast operations without KernelCh (what the
    default mask records): each such operation keeps its slot for a grace
    after its stop, so the run fills the slab; the watchdog must then scan
    at its pressed pace, and the last operation, the one that hangs, must
    still be watched: the watchdog fires and names it."""
    cli, plugin, _ = env_paths()
    driver = sys.argv[1]
    d = tmpdir()
    ops = 200000
    env = fast_env(d)
    procs, errs = start_ranks(driver, plugin, env, d, 2, ops, "coll")
    counts = wait_lines([errs[0]], 1, timeout=60)
    deadline = time.time() + 30
    while time.time() < deadline and not any(hang_blocks(f) for f in trace_files(d)):
        time.sleep(0.1)
    kill_ranks(procs)
    with open(errs[0]) as f:
        text = f.read()
    check(counts[0] == 1 and "AllReduce seq %d" % (ops - 1) in text,
          "after a full slab, the hanging operation is watched: %s" % text)
    check(text.count("hang watchdog under pressure: more operations in flight than its 16384 slots") >= 1,
          "the pressure is said (NCCL's INFO level): %s" % text)
    blocks = [b for f in trace_files(d) for b in hang_blocks(f)]
    check(len(blocks) == 1, "one HANG block: %d" % len(blocks))
    hd, _, hops, _ = blocks[0]
    check(hd["slab_full"] > 0, "the run filled the slab (else this tests nothing): %s" % hd)
    check([o[1] for o in hops] == [ops - 1], "the HANG block holds the last operation: %s" % hops)
    # `ncclscope hang` says what the watchdog could not watch
    r = run([cli, "hang", "--json"] + trace_files(d), ok=(4,))
    wd = json.loads(r.stdout).get("watchdog")
    check(wd == {"files": 1, "unwatched_events": hd["slab_full"], "orphan_events": hd["slab_orphans"]},
          "hang --json's watchdog counts: %s vs %s" % (wd, hd))
    r = run([cli, "hang"] + trace_files(d), ok=(4,))
    check("watchdog: %d event(s) recorded but not watched" % hd["slab_full"] in r.stdout,
          "hang's text names them:\n" + r.stdout)
    print("ok: pressure (%d events left unwatched while the slab was full)" % hd["slab_full"])


def main():
    test_sessions()
    test_learn()
    test_steady()
    test_pressure()
    test_rearm()
    test_orphan()
    test_full()
    for flight in (False, True):
        test_coll(flight)
        test_p2p(flight)
    print("ok")


if __name__ == "__main__":
    main()
