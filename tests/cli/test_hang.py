# SPDX-License-Identifier: Apache-2.0
"""`ncclscope hang` on the cut traces of killed jobs.

coll: 4 ranks (one process each, tests/cli/hang_rank.c) run AllReduce
seqNumber 0..9; rank 3 never enters seqNumber 9, ranks 0-2 enter it and
stay inside (channel 0's KernelCh open, its ProxyOp's step waiting for the
peer's receive). p2p: rank 0's 10th Send to rank 1 is never received (rank
1 posts 9 Recvs). Every process is killed with SIGKILL: no END block, and a
torn block is appended to each file as a write cut by the kill leaves it.
`hang --json` must name the missing rank, the seqNumber, the stuck ranks,
their open channel, peer and proxy state; exit 4. Complete traces
(tests/data) have no hang: exit 0."""
import json
import os
import signal
import subprocess
import sys
import time

from nsctest import *

OPS = 10


def run_job(driver, mode, nranks, events="Coll,P2p,KernelCh,ProxyOp,ProxyStep", last_ops=OPS,
            first=0, lose=-1, extra=(), env_more=None, settle=0, want_ops=None):
    """Every rank runs OPS operations but the last, which runs last_ops and
    stops one short of them (hang_rank.c); coll's seqNumbers start at
    `first`; seqNumber `lose` records no stop of its channel 0's KernelCh;
    extra: more hang_rank arguments; settle: seconds to wait, once every
    operation is in the files, before the kill. events None: the plugin's
    default mask. want_ops: the job's operations, where not coll's or
    p2p's count."""
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10", **(env_more or {}))
    env.pop("NCCLSCOPE_EVENTS", None)
    if events is not None:
        env["NCCLSCOPE_EVENTS"] = events
    procs = [subprocess.Popen([driver, "--plugin", plugin, "--rank", str(r), "--nranks", str(nranks),
                               "--ops", str(OPS if r < nranks - 1 else last_ops), "--mode", mode,
                               "--first", str(first), "--lose", str(lose), *extra],
                              env=env, stdout=subprocess.PIPE,
                              text=True) for r in range(nranks)]
    for p in procs:
        line = p.stdout.readline()
        check(line.strip() == "hung", "rank did not reach its hang: %r (rc %s)" % (line, p.poll()))
    # What each rank recorded reaches its file within a few flush periods
    # (the flusher writes clock anchors all the time: the files never stop
    # growing). Wait until every operation of every rank is in its file, as
    # `hang` counts them (20 s at most: a loaded machine, sanitizers).
    if want_ops is None:
        want_ops = (nranks - 1) * OPS + last_ops - 1  # the last rank stops one operation short
    deadline = time.time() + 20
    while time.time() < deadline:
        time.sleep(0.2)
        p = subprocess.run([cli, "hang", d, "--json"], capture_output=True, text=True)
        try:
            if json.loads(p.stdout)["operations"] == want_ops:
                break
        except ValueError:
            pass
    time.sleep(settle)
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
    files = trace_files(d)
    check(len(files) == nranks, "one file per rank: %s" % files)
    for f in files:
        with open(f, "ab") as fh:  # a block header cut short by the kill
            fh.write(b"SBLK\x05\x00\x00\x00\x40")
    return cli, d


def hang(cli, inputs, ok=(4,)):
    p = run([cli, "hang", *inputs, "--json"], ok=ok)
    return json.loads(p.stdout), p


def test_coll(driver):
    cli, d = run_job(driver, "coll", 4)
    doc, p = hang(cli, [d])
    check("no END block" in p.stderr, "the cut files are said to be cut: %s" % p.stderr)
    check(len(doc["hangs"]) == 1, "one stuck communicator: %s" % doc)
    h = doc["hangs"][0]
    check(h["comm"] == "0x0000004a4e470001" and h["name"] == "hang-coll", h)
    check(h["op"] == "AllReduce" and h["seq"] == OPS - 1, "op/seq: %s" % h)
    check(h["missing_ranks"] == [3] and h["missing_last_seq"] == [OPS - 2], "missing: %s" % h)
    check(h["completed_ranks"] == [] and h["untraced_ranks"] == [] and not h["all_inside"], h)
    check(h["cause"] == "root" and "behind" not in h, "one comm: a root: %s" % h)
    stuck = sorted(h["stuck_ranks"], key=lambda s: s["rank"])
    check([s["rank"] for s in stuck] == [0, 1, 2], "stuck: %s" % stuck)
    for s in stuck:
        check(s["channels"] == [0] and s["channels_done"] == 1 and s["nch"] == 2, s)
        check(s["peers"] == [s["rank"] + 1], "peer: %s" % s)
        check(len(s["proxy_ops"]) == 1, s)
        po = s["proxy_ops"][0]
        check(po["channel"] == 0 and po["send"] and po["peer"] == s["rank"] + 1, po)
        check(po["step_state"] == "ProxyStepSendPeerWait" and po["steps_open"] == 1, po)
        check(po["waiting"] == "waiting for the peer's receive", po)
    # Without rank 3's file: nobody is known to be missing, every traced
    # rank is inside, rank 3 left no trace.
    import re
    rank_of = {f: int(re.search(r"rank (\d+) of 4", run([cli, "info", f], ok=(0, 2)).stdout).group(1))
               for f in trace_files(d)}
    doc, _ = hang(cli, [f for f in rank_of if rank_of[f] != 3])
    h = doc["hangs"][0]
    check(h["missing_ranks"] == [] and h["untraced_ranks"] == [3] and h["all_inside"], h)
    text = run([cli, "hang", d], ok=(4,)).stdout
    check("hang at AllReduce seqNumber %d" % (OPS - 1) in text and "never entered it: rank 3 (last entered seqNumber %d)" % (OPS - 2) in text,
          text)
    check("rank 0: enqueued, 1 of 2 channel(s) done, open: 0; peers 1" in text, text)
    # -j N reads files at once: the same output, messages in file order
    outs = [run([cli, "hang", d, *fmt, "-j", n], ok=(4,)) for fmt in ([], ["--json"])
            for n in ("1", "3")]
    check(outs[0].stdout == outs[1].stdout and outs[0].stderr == outs[1].stderr and
          outs[2].stdout == outs[3].stdout and outs[2].stderr == outs[3].stderr,
          "-j 1 and -j 3 differ:\n%s\n%s" % (outs[0].stdout, outs[1].stdout))
    run([cli, "hang", d, "-j", "0"], ok=(1,))


def test_lost_child(driver):
    """A collective whose records lack one KernelCh stop (a flight window
    that began inside it, a stop NCCL never delivered) while later
    collectives of its comm and function completed: it completed too (a
    comm's collectives run in order on one stream). `hang` must name the
    real hang, AllReduce 9, not the lower seqNumber 3 left open in every
    rank's records, and count the 4 it set aside. (A flight dump on 2 x H200
    named such a collective: docs/gpu-check.md.)"""
    cli, d = run_job(driver, "coll", 4, lose=3)
    doc, _ = hang(cli, [d])
    check(len(doc["hangs"]) == 1 and doc["overtaken"] == 4, doc)
    h = doc["hangs"][0]
    check(h["op"] == "AllReduce" and h["seq"] == OPS - 1 and h["missing_ranks"] == [3], h)
    check([s["rank"] for s in h["stuck_ranks"]] == [0, 1, 2], h)
    text = run([cli, "hang", d], ok=(4,)).stdout
    check("hang at AllReduce seqNumber %d" % (OPS - 1) in text and
          "4 collective(s) left open below a later one" in text, text)
    # the last rank's file alone: its seqNumber 8 completed, so 3 is set aside
    import re
    three = [f for f in trace_files(d)
             if re.search(r"rank 3 of 4", run([cli, "info", f], ok=(0, 2)).stdout)]
    doc, _ = hang(cli, three, ok=(2,))  # nothing stuck; the torn block run_job appended: 2
    check(doc["hangs"] == [] and doc["overtaken"] == 1, doc)


def test_max_channels(driver):
    """API v3 (NCCL 2.26) gives a Coll's nMaxChannels, the most channels it
    may use, and NCCL spreads a small collective over fewer: here 4 are
    said and 2 run. Completion cannot wait for 4 KernelCh. `hang` must
    still name AllReduce 9 (before: no operation ever completed, so the
    first, 0, was named), and the watchdog of rank 3, idle after its last
    collective, must not fire (before: its operations never completed, so
    it fired after NCCLSCOPE_HANG_SECONDS); ranks 0-2, inside 9 with a
    KernelCh open, fire."""
    cli, d = run_job(driver, "coll", 4, extra=("--version", "3", "--nch", "4"),
                     env_more={"NCCLSCOPE_HANG_SECONDS": "1"}, settle=2.5)
    doc, p = hang(cli, [d])
    check(len(doc["hangs"]) == 1, doc)
    h = doc["hangs"][0]
    check(h["op"] == "AllReduce" and h["seq"] == OPS - 1 and h["missing_ranks"] == [3], h)
    check(sorted(s["rank"] for s in h["stuck_ranks"]) == [0, 1, 2], h)
    check(doc.get("watchdog", {}).get("files") == 3, "3 watchdogs fired (not rank 3's): %s" % doc)


def test_channels_without_kernelch(driver):
    """NCCL gives an operation no KernelCh on a channel without proxy work
    (a Send or Recv to its own rank, zero bytes): here the descriptors say
    3 channels and 2 run. Completed operations have no open child, so they
    are not stuck; the hang is where a channel stays open, AllReduce 9
    (before: every operation was "1 channel short" and hang named 0). On
    2 x H200 (NCCL 2.28.9) complete alltoall and sendrecv traces read as hung."""
    cli, d = run_job(driver, "coll", 4, extra=("--nch", "3"))
    doc, _ = hang(cli, [d])
    check(len(doc["hangs"]) == 1 and doc["overtaken"] == 0, doc)
    h = doc["hangs"][0]
    check(h["seq"] == OPS - 1 and h["missing_ranks"] == [3] and
          sorted(s["rank"] for s in h["stuck_ranks"]) == [0, 1, 2], h)


def test_queued_kernel(driver):
    """A rank whose last collective was enqueued (its Coll stopped: NCCL
    stops it at enqueue) but whose kernel never started, queued behind
    another: no KernelCh at all. In a killed job it is stuck in it, not a
    rank that completed it (rank 0 here; ranks 1-2 inside as usual)."""
    cli, d = run_job(driver, "coll", 4, extra=("--queued",))
    doc, _ = hang(cli, [d])
    check(len(doc["hangs"]) == 1, doc)
    h = doc["hangs"][0]
    check(h["seq"] == OPS - 1 and h["missing_ranks"] == [3] and h["completed_ranks"] == [], h)
    st = {s["rank"]: s for s in h["stuck_ranks"]}
    check(sorted(st) == [0, 1, 2] and st[0]["channels_done"] == 0 and st[0]["channels"] == [], h)


def test_unrecorded(driver):
    """The same hang recorded without KernelCh or ProxyOps (as the default
    mask records an intra-node job): no operation can be seen stuck, since
    an operation counts as completed once enqueued. `hang` must not say
    every operation completed; it names where the ranks diverge (rank 3
    never entered AllReduce 9, which ranks 0-2 entered) and exits 5."""
    cli, d = run_job(driver, "coll", 4, events="Coll,P2p")
    doc, _ = hang(cli, [d], ok=(5,))
    check(doc["hangs"] == [] and doc["completion_unrecorded_files"] == 4, doc)
    check(len(doc["divergences"]) == 1, doc)
    v = doc["divergences"][0]
    check(v["comm"] == "0x0000004a4e470001" and v["name"] == "hang-coll" and v["nranks"] == 4, v)
    check(v["op"] == "AllReduce" and v["seq"] == OPS - 1, v)
    check(v["entered_ranks"] == [0, 1, 2] and v["missing_ranks"] == [3] and
          v["missing_last_seq"] == [OPS - 2], v)
    text = run([cli, "hang", d], ok=(5,)).stdout
    check("every operation" not in text and "possible hang" in text and
          "AllReduce seqNumber %d entered by ranks 0, 1, 2; never entered by rank 3 (last entered "
          "seqNumber %d)" % (OPS - 1, OPS - 2) in text, text)
    # the last rank far behind (it entered 0..5 while the others entered
    # 0..9): the divergence is at the first collective it never entered, 6
    _, dl = run_job(driver, "coll", 4, events="Coll,P2p", last_ops=7)
    doc, _ = hang(cli, [dl], ok=(5,))
    check([(v["seq"], v["entered_ranks"], v["missing_ranks"], v["missing_last_seq"])
           for v in doc["divergences"]] == [(6, [0, 1, 2], [3], [5])], doc)
    # the last rank with no AllReduce at all: behind from seqNumber 0 (the
    # others hold AllReduce from 0: a whole history)
    _, d0 = run_job(driver, "coll", 4, events="Coll,P2p", last_ops=1)
    doc, _ = hang(cli, [d0], ok=(5,))
    check([(v["seq"], v["entered_ranks"], v["missing_ranks"], v["missing_last_seq"])
           for v in doc["divergences"]] == [(0, [0, 1, 2], [3], [None])], doc)
    # the same where the others' histories start at seqNumber 5 (a flight
    # window, deleted segments): their first ones may be what the last rank
    # had, so a rank with none of AllReduce is not behind; no divergence
    _, dw = run_job(driver, "coll", 4, events="Coll,P2p", last_ops=1, first=5)
    doc, _ = hang(cli, [dw], ok=(2,))  # no hang; the torn block run_job appended: 2
    check(doc["hangs"] == [] and doc["divergences"] == [] and
          doc["completion_unrecorded_files"] == 4, doc)
    # histories from seqNumber 5 where the last rank holds some: behind as
    # before, whatever the window (it entered 5..10, the others 5..14)
    _, dp = run_job(driver, "coll", 4, events="Coll,P2p", last_ops=7, first=5)
    doc, _ = hang(cli, [dp], ok=(5,))
    check([(v["seq"], v["entered_ranks"], v["missing_ranks"], v["missing_last_seq"])
           for v in doc["divergences"]] == [(11, [0, 1, 2], [3], [10])], doc)
    # the same with KernelCh recorded: a hang found (4), no divergence list
    _, dk = run_job(driver, "coll", 4)
    doc, _ = hang(cli, [dk], ok=(4,))
    check(doc["divergences"] == [] and doc["completion_unrecorded_files"] == 0, doc)
    # ranks that all entered the same collectives (one rank's file alone):
    # no divergence, and the text says completion was not recorded
    import re
    rank_of = {f: int(re.search(r"rank (\d+) of 4", run([cli, "info", f], ok=(0, 2)).stdout).group(1))
               for f in trace_files(d)}
    three = [f for f in rank_of if rank_of[f] == 3]
    doc, _ = hang(cli, three, ok=(2,))  # no hang; the torn block run_job appended: 2
    check(doc["hangs"] == [] and doc["divergences"] == [], doc)
    text = run([cli, "hang", *three], ok=(2,)).stdout
    check("no hang found" in text and "record no KernelCh" in text and "every operation" not in text,
          text)


def test_no_records(driver):
    """A rank killed before its first flush of records: its file holds the
    SESSION, STRINGS, COMMS blocks and no record. It records KernelCh all
    the same (its SESSION block says so): hang must not count it among the
    files that record none (the model called the session hook only at a
    file's first record)."""
    import nsctrace
    cli, d = run_job(driver, "coll", 4)
    files = trace_files(d)
    data = open(files[-1], "rb").read()
    first = [b.offset for b in nsctrace.blocks(data) if b.type in (nsctrace.CHUNK, nsctrace.PACKED)]
    check(first and first[0] > 0, "records in %s" % files[-1])
    with open(files[-1], "wb") as fh:  # as `head -c`: the blocks before the first records
        fh.write(data[:first[0]])
    check(set(b.type for b in nsctrace.blocks(open(files[-1], "rb").read())) >= {nsctrace.SESSION},
          "a SESSION block kept")
    doc, _ = hang(cli, files[-1:], ok=(0, 2))
    check(doc["operations"] == 0 and doc["completion_unrecorded_files"] == 0, doc)
    text = run([cli, "hang", files[-1]], ok=(0, 2)).stdout
    check("record no KernelCh" not in text, text)
    doc, _ = hang(cli, [d], ok=(4, 5))
    check(doc["completion_unrecorded_files"] == 0, doc)
    print("ok: a file with a SESSION block and no record records what its SESSION says")


def test_p2p(driver):
    cli, d = run_job(driver, "p2p", 2)
    doc, _ = hang(cli, trace_files(d))
    check(len(doc["hangs"]) == 1, doc)
    h = doc["hangs"][0]
    check(h["comm"] == "0x0000004a4e470002" and h["op"] == "Send" and h["seq"] is None, h)
    check(h["missing_ranks"] == [1], "the receiver never posted: %s" % h)
    check([s["rank"] for s in h["stuck_ranks"]] == [0], h)
    check(h["stuck_ranks"][0]["channels"] == [0], h)
    w = h["waits"]
    check(len(w) == 1 and w[0]["rank"] == 0 and w[0]["waits_for"] == 1 and not w[0]["peer_posted"], w)
    text = run([cli, "hang", d], ok=(4,)).stdout
    check("rank 0 Send to 1 waits for rank 1: the peer never posted the matching operation Recv" in text,
          text)


def test_no_hang():
    cli, _, _ = env_paths()
    data = data_dir()
    for inputs in ([os.path.join(data, "h200x2_mixed_64KiB.nsc")], [os.path.join(data, "h200x2_net_1MiB.nsc")],
                   [os.path.join(data, "h200x4_procs")]):
        doc, _ = hang(cli, inputs, ok=(0,))
        check(doc["hangs"] == [] and doc["operations"] > 0, doc)
        check("no hang found" in run([cli, "hang", *inputs]).stdout, inputs)
    # damaged, no hang: 2
    d = tmpdir()
    src = os.path.join(data, "h200x2_net_1MiB.nsc")
    dst = os.path.join(d, "x.nsc")
    with open(src, "rb") as a, open(dst, "wb") as b:
        b.write(a.read() + b"SBLK\x05\x00")
    doc, _ = hang(cli, [dst], ok=(2,))
    check(doc["hangs"] == [] and doc["damaged"], doc)
    # usage
    run([cli, "hang"], ok=(1,))
    run([cli, "hang", "--bogus", d], ok=(1,))
    run([cli, "hang", os.path.join(d, "missing.nsc")], ok=(3,))


# job mode (hang_rank.c): ranks 0-1 run 3 collectives a step, rank 3 two,
# rank 2 two a step but the last
JOB_OPS = 2 * 3 * OPS + 2 * OPS + 2 * OPS - 2
ALL, PAIR = "0x0000004a4e470003", "0x0000004a4e470004"


def test_job(driver):
    """A data-parallel job on 4 ranks, as a user's hung PyTorch job (NCCL
    2.28.9): per step an AllReduce then an AllGather on the comm of all 4
    ranks, and on ranks 0 and 1 a Broadcast on a 2-rank comm. Rank 2 skips
    the last AllReduce (seqNumber 9); the others enqueue it (its kernel runs
    and never ends), then that step's AllGather 9 and Broadcast 109, queued
    behind it on the same GPU. NCCL counts seqNumbers per function, so
    AllReduce 9 and AllGather 9 coexist: `hang` must name AllReduce 9 (the
    one the stuck ranks enqueued first; before: AllGather 9, the lower
    name), as the root, and the Broadcast as waiting behind it on ranks 0
    and 1 (before: a second hang where "every traced rank is inside it: a
    transport that stopped moving"). With KernelCh recorded, with the
    lean mask (no KernelCh) on the network path (ProxyOps), with KernelCh
    and no ProxyOps (one NVLink node)."""
    for events, extra in (("Coll,P2p,KernelCh,ProxyOp,ProxyStep", ()), ("lean", ()),
                          ("Coll,P2p,KernelCh,ProxyOp,ProxyStep", ("--intra",))):
        cli, d = run_job(driver, "job", 4, events=events, extra=extra, want_ops=JOB_OPS)
        what = "%s %s" % (events, " ".join(extra))
        doc, _ = hang(cli, [d])
        hs = doc["hangs"]
        check([(h["comm"], h["op"], h["seq"], h["cause"]) for h in hs] ==
              [(ALL, "AllReduce", OPS - 1, "root"), (PAIR, "Broadcast", 100 + OPS - 1, "behind")],
              "%s: the root first, then the Broadcast behind it: %s" % (what, hs))
        a, b = hs
        check(a["missing_ranks"] == [2] and a["missing_last_seq"] == [OPS - 2] and "behind" not in a and
              sorted(s["rank"] for s in a["stuck_ranks"]) == [0, 1, 3], "%s: %s" % (what, a))
        check(b["behind"] == {"comm": ALL, "name": "hang-job", "op": "AllReduce", "seq": OPS - 1,
                              "ranks": [0, 1]} and sorted(s["rank"] for s in b["stuck_ranks"]) == [0, 1],
              "%s: %s" % (what, b))
        text = run([cli, "hang", d], ok=(4,)).stdout
        check("hang at AllReduce seqNumber %d\n" % (OPS - 1) in text and "AllGather" not in text and
              "hang at Broadcast seqNumber %d, waiting behind comm %s AllReduce seqNumber %d on ranks 0, 1\n"
              % (100 + OPS - 1, ALL, OPS - 1) in text and "stopped moving" not in text, "%s:\n%s" % (what, text))
        check(text.index("hang-job") < text.index("hang-pair"), text)
        for fmt in ([], ["--json"]):  # -j: the same answer
            check(run([cli, "hang", d, *fmt, "-j", "3"], ok=(4,)).stdout ==
                  run([cli, "hang", d, *fmt, "-j", "1"], ok=(4,)).stdout, "%s: -j 3 differs" % what)
    # The lean mask on one NVLink node: no KernelCh, no ProxyOps, nothing
    # records completion. The divergences in enqueue order: AllReduce 9 the
    # root, AllGather 9 behind it (before: AllGather first, both alike).
    cli, d = run_job(driver, "job", 4, events="lean", extra=("--intra",), want_ops=JOB_OPS)
    doc, _ = hang(cli, [d], ok=(5,))
    check(doc["hangs"] == [] and doc["completion_unrecorded_files"] == 4, doc)
    dv = doc["divergences"]
    check([(v["comm"], v["op"], v["seq"], v["entered_ranks"], v["missing_ranks"], v["cause"]) for v in dv] ==
          [(ALL, "AllReduce", OPS - 1, [0, 1, 3], [2], "root"), (ALL, "AllGather", OPS - 1, [0, 1, 3], [2], "behind")],
          "divergences: %s" % dv)
    check("behind" not in dv[0] and dv[1]["behind"] == {"comm": ALL, "name": "hang-job", "op": "AllReduce",
                                                        "seq": OPS - 1, "ranks": [0, 1, 3]}, dv)
    text = run([cli, "hang", d], ok=(5,)).stdout
    check(text.index("AllReduce seqNumber %d entered" % (OPS - 1)) < text.index("AllGather seqNumber") and
          "AllGather seqNumber %d entered by ranks 0, 1, 3; never entered by rank 2 (last entered seqNumber %d); "
          "waiting behind comm %s AllReduce seqNumber %d on ranks 0, 1, 3\n" % (OPS - 1, OPS - 2, ALL, OPS - 1) in text,
          text)


def test_job_sampled(driver):
    """The same job on one NVLink node (no ProxyOps) at default settings:
    KernelCh on a sample (NCCLSCOPE_KERNEL_SAMPLE), so the stuck AllReduce
    may itself not be sampled. Whatever was sampled, the answer is AllReduce
    9 with rank 2 missing, first: a root (inferred from sampled completion
    when AllReduce 9 was not sampled on the stuck ranks) or, where nothing
    sampled is stuck, the first divergence; no rank that entered it is said
    to have completed it, and the AllGather behind it is never the root."""
    for env in ({}, {"NCCLSCOPE_KERNEL_SAMPLE": "4", "NCCLSCOPE_KERNEL_SAMPLE_MS": "0"},
                {"NCCLSCOPE_KERNEL_SAMPLE": "19", "NCCLSCOPE_KERNEL_SAMPLE_MS": "0"}):
        cli, d = run_job(driver, "job", 4, events=None, extra=("--intra",), env_more=env, want_ops=JOB_OPS)
        doc, p = hang(cli, [d], ok=(4, 5))
        check(0 < doc["kernel_sampled"]["sampled"] < doc["kernel_sampled"]["operations"], "%s: %s" % (env, doc))
        text = run([cli, "hang", d], ok=(p.returncode,)).stdout
        check("KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): " in text, "%s:\n%s" % (env, text))
        if doc["hangs"]:
            a = doc["hangs"][0]
            check((a["comm"], a["op"], a["seq"], a["missing_ranks"], a["cause"]) == (ALL, "AllReduce", OPS - 1, [2], "root"),
                  "%s: the root: %s" % (env, doc["hangs"]))
            inside = sorted([s["rank"] for s in a["stuck_ranks"]] + a.get("unknown_ranks", []))
            check(inside == [0, 1, 3] and a["completed_ranks"] == [], "%s: ranks 0, 1, 3: %s" % (env, a))
            maybe = [s for s in a["stuck_ranks"] if s.get("maybe_stuck")]
            check(a.get("inferred", False) == (len(maybe) == len(a["stuck_ranks"])), "%s: inferred: %s" % (env, a))
            check(all(h["cause"] == "behind" for h in doc["hangs"][1:]), "%s: one root: %s" % (env, doc["hangs"]))
            if a.get("inferred"):
                check("inferred from sampled completion" in text, text)
        else:
            v = doc["divergences"][0]
            check((v["comm"], v["op"], v["seq"], v["entered_ranks"], v["missing_ranks"], v["cause"]) ==
                  (ALL, "AllReduce", OPS - 1, [0, 1, 3], [2], "root"), "%s: %s" % (env, doc))
        print("ok job at default settings, KernelCh sampled %s: %s" %
              (env or "(32, 1 ms)", "AllReduce %d root%s" % (OPS - 1, ", inferred" if doc["hangs"] and
                                                             doc["hangs"][0].get("inferred") else "")
              if doc["hangs"] else "divergence at AllReduce %d" % (OPS - 1)))


def test_job_default(driver):
    """The job at the default settings on one NVLink node (no ProxyOps, no
    KernelCh asked for by name): KernelCh is sampled, and with the job's
    steps 3 ms apart the sampling period takes every operation, the stuck
    AllReduce 9 among them. The watchdogs of ranks 0, 1 and 3 (inside
    AllReduce 9) fire after NCCLSCOPE_HANG_SECONDS, rank 2's (it never
    entered) does not (before: with the mask without KernelCh, no watchdog
    could fire); `hang` names AllReduce 9, missing rank 2, first."""
    cli, d = run_job(driver, "job", 4, events=None, extra=("--intra", "--pause-us", "3000"),
                     env_more={"NCCLSCOPE_HANG_SECONDS": "1", "NCCLSCOPE_KERNEL_SAMPLE_MS": "1"},
                     settle=2.5, want_ops=JOB_OPS)
    doc, _ = hang(cli, [d])
    check(doc.get("watchdog", {}).get("files") == 3, "3 watchdogs fired (not rank 2's): %s" % doc.get("watchdog"))
    hs = doc["hangs"]
    check(hs and (hs[0]["op"], hs[0]["seq"], hs[0]["missing_ranks"], hs[0]["cause"]) ==
          ("AllReduce", OPS - 1, [2], "root"), "default settings: the root first: %s" % hs)
    print("ok default settings, one node: 3 watchdogs fired; AllReduce %d, missing rank 2, first" % (OPS - 1))


def main():
    driver = sys.argv[1]
    test_no_hang()
    test_coll(driver)
    test_lost_child(driver)
    test_max_channels(driver)
    test_channels_without_kernelch(driver)
    test_queued_kernel(driver)
    test_unrecorded(driver)
    test_no_records(driver)
    test_p2p(driver)
    test_job(driver)
    test_job_sampled(driver)
    test_job_default(driver)
    print("ok")


main()
