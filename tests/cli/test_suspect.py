# SPDX-License-Identifier: Apache-2.0
"""The hang suspect level (NCCLSCOPE_SUSPECT_SECONDS) through the real plugin,
4 processes of one rank each (tests/cli/hang_rank.c, job mode, --intra: one
node, no ProxyOp) at the default event mask and KernelCh sample.

hung: rank 2 never enters the last AllReduce (seqNumber 9) of comm
"hang-job"; ranks 0, 1 and 3 enter it and wait. Within SUSPECT_SECONDS and a
few seconds each of them logs one "hang suspect" line naming the comm,
AllReduce seq 9 (not the AllGather 9 queued behind it) and rank 2, once;
rank 2 and the 2-rank comm "hang-pair" (both ranks at Broadcast 109) log
none; the metrics file has the ncclscope_hang_suspect series; the traces'
HANG blocks carry the suspects, which `hang --json` and `info` show. The
directory also holds hostile progress files (a link, a FIFO, one too large,
one malformed): counted as read failures, never followed, never blocking.

healthy: every rank completes every step and then idles for three times
SUSPECT_SECONDS (a compute gap, a checkpoint every rank writes): no suspect.

off: NCCLSCOPE_SUSPECT_SECONDS=0: no progress file, no suspect."""
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import time

from nsctest import *
import nsctrace

SUSPECT = 2
OPS = 10
HANG = 9
JOB = "0000004a4e470003"
LINE = "ncclscope: hang suspect:"
HDR = struct.Struct("<IHHHHIIIIIIIQQQ")          # nsc_hang_header
SUSP = struct.Struct("<IiQQQIIII16s8i")           # nsc_hang_suspect, 96 bytes


def start(driver, d, extra, env_more):
    _, plugin, _ = env_paths()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10",
               NCCLSCOPE_SUSPECT_SECONDS=str(SUSPECT), NCCLSCOPE_METRICS_DIR=os.path.join(d, "m"),
               NCCLSCOPE_METRICS_SECONDS="1")
    env.update(env_more)
    for k in ("NCCLSCOPE_EVENTS", "NCCLSCOPE_KERNEL_SAMPLE", "NCCLSCOPE_KERNEL_SAMPLE_MS"):
        env.pop(k, None)  # the defaults
    procs = [subprocess.Popen([driver, "--plugin", plugin, "--rank", str(r), "--nranks", "4",
                               "--ops", str(OPS), "--mode", "job", "--intra", *extra],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r in range(4)]
    for r, p in enumerate(procs):
        line = p.stdout.readline().decode()
        check(line.strip() == "hung", "rank %d did not reach its end: %r (rc %s)" % (r, line, p.poll()))
    return procs, time.time()


def collect(procs, errs, seconds):
    """Reads every rank's stderr for `seconds` more."""
    end = time.time() + seconds
    while True:
        left = end - time.time()
        if left <= 0:
            return
        r, _, _ = select.select([p.stderr for p in procs], [], [], left)
        for f in r:
            i = [p.stderr for p in procs].index(f)
            data = os.read(f.fileno(), 65536)
            errs[i] += data.decode(errors="replace")


def stop(procs):
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        p.stderr.close()


def prom(d):
    out = {}
    m = os.path.join(d, "m")
    for f in os.listdir(m) if os.path.isdir(m) else []:
        if f.endswith(".prom"):
            out[f] = open(os.path.join(m, f)).read()
    return out


def suspect_blocks(path):
    res = []
    data = open(path, "rb").read()
    for b in nsctrace.blocks(data):
        if b.type != HANG:
            continue
        p = nsctrace.payload(b)
        h = HDR.unpack_from(p, 0)
        hsize, csize, osize, psize, ssize, nc, no, npx = h[:8]
        nsusp, ssec = h[10], h[11]
        if not nsusp:
            continue
        check(ssize == 96 and ssec == SUSPECT, "suspect entry size %d, seconds %d" % (ssize, ssec))
        off = hsize + nc * csize + no * osize + npx * psize
        check(len(p) == off + nsusp * ssize, "suspect block length %d, expected %d" % (len(p), off + nsusp * ssize))
        for k in range(nsusp):
            f = SUSP.unpack_from(p, off + k * ssize)
            res.append({"rank": f[1], "comm": "%016x" % f[2], "seq": f[3], "nranks": f[5],
                        "nmissing": f[6], "nknown": f[7], "waited": f[8],
                        "func": f[9].rstrip(b"\0").decode(), "missing": [x for x in f[10:] if x >= 0]})
    return res


def plant(d):
    """Progress files no process wrote: each must be refused, none followed."""
    os.makedirs(d, exist_ok=True)
    secret = os.path.join(d, "secret.txt")
    with open(secret, "w") as f:  # a whole progress file: read through the link, it would count
        f.write("ncclscope-progress 1\ngen 1\nok 1\nc %s 2 4 1\nf AllReduce 99\nend\n" % JOB)
    os.symlink(secret, os.path.join(d, "evil-1.progress"))
    os.mkfifo(os.path.join(d, "fifo-2.progress"))
    with open(os.path.join(d, "big-3.progress"), "w") as f:
        f.write("ncclscope-progress 1\ngen 1\nok 1\n" + "x" * (100 << 10) + "\nend\n")
    with open(os.path.join(d, "junk-4.progress"), "w") as f:
        f.write("ncclscope-progress 1\ngen 1\nok 1\nc zz 0 4 1\nend\n")


def test_hung(driver, cli):
    d = tmpdir()
    plant(d)
    procs, t0 = start(driver, d, ["--skip", "2"], {})
    errs = ["", "", "", ""]
    deadline = t0 + SUSPECT + 8
    while time.time() < deadline and not all(LINE in errs[r] for r in (0, 1, 3)):
        collect(procs, errs, 0.2)
    took = time.time() - t0
    collect(procs, errs, 3)  # once per stall: no second line while it lasts
    metrics = prom(d)
    progress = sorted(f for f in os.listdir(d) if f.endswith(".progress") and "-" in f and
                      f.split("-")[0] not in ("evil", "fifo", "big", "junk"))
    stop(procs)
    for r in (0, 1, 3):
        lines = [l for l in errs[r].splitlines() if LINE in l]
        check(len(lines) == 1, "rank %d: one suspect line, got %s\n%s" % (r, lines, errs[r]))
        l = lines[0]
        check(("comm %s rank %d: AllReduce seq %d " % (JOB, r, OPS - 1)) in l and
              "not entered by rank(s) 2 " in l, "rank %d's line names comm, op, seq, rank 2: %s" % (r, l))
    check(LINE not in errs[2], "the rank that never entered suspects nobody: %s" % errs[2])
    check("4a4e470004" not in "".join(errs), "hang-pair (both at Broadcast 109) is not suspect")
    check(took <= SUSPECT + 6, "suspects %.1f s after the ranks stopped (SUSPECT_SECONDS=%d)" % (took, SUSPECT))
    check(len(progress) == 4, "a progress file per process while running: %s" % progress)
    gauges = {}
    for name, text in metrics.items():
        g = re.findall(r'^ncclscope_hang_suspect\{comm="(\w+)",rank="(\d+)",op="(\w+)",seq="(\d+)",'
                       r'missing="([\d,+]+)"\} 1$', text, re.M)
        gauges[name] = g
        fails = re.search(r'ncclscope_progress_failures_total\{pid="\d+",kind="read"\} (\d+)', text)
        check(fails and int(fails.group(1)) >= 4,
              "%s: the planted files counted as read failures: %s" % (name, fails and fails.group(0)))
    flat = sorted(x for g in gauges.values() for x in g)
    check(flat == [(JOB, str(r), "AllReduce", str(OPS - 1), "2") for r in (0, 1, 3)],
          "ncclscope_hang_suspect series: %s" % flat)
    # The traces: the suspects in HANG blocks, shown by hang and info.
    blocks = []
    for f in trace_files(d):
        blocks += suspect_blocks(f)
    check(sorted((b["rank"], b["func"], b["seq"], tuple(b["missing"]), b["nmissing"]) for b in blocks) ==
          [(r, "AllReduce", OPS - 1, (2,), 1) for r in (0, 1, 3)], "HANG blocks' suspects: %s" % blocks)
    p = subprocess.run([cli, "hang", d, "--json"], capture_output=True, text=True)
    doc = json.loads(p.stdout)
    got = sorted((s["rank"], s["op"], s["seq"], s["missing_ranks"][0], s["name"]) for s in doc["suspects"])
    check(got == [(r, "AllReduce", OPS - 1, 2, "hang-job") for r in (0, 1, 3)],
          "hang --json suspects: %s" % doc["suspects"])
    text = subprocess.run([cli, "hang", d], capture_output=True, text=True).stdout
    check("suspected while the job ran" in text and
          'comm 0x%s "hang-job" rank 0: AllReduce seqNumber 9 entered, not entered by rank 2' % JOB in text,
          "hang's text shows the suspects: %s" % text)
    info = subprocess.run([cli, "info", trace_files(d)[0]], capture_output=True, text=True).stdout
    check("1 of the suspect level" in info and "AllReduce seqNumber 9 not entered by rank(s) 2" in info,
          "info shows the suspect block: %s" % info)
    check(os.path.islink(os.path.join(d, "evil-1.progress")) and
          "f AllReduce 99" in open(os.path.join(d, "secret.txt")).read(), "the planted link untouched")
    print("ok: hung: suspects on ranks 0, 1, 3 after %.1f s, AllReduce 9, missing rank 2" % took)


def test_healthy(driver):
    d = tmpdir()
    procs, t0 = start(driver, d, ["--healthy"], {})
    errs = ["", "", "", ""]
    collect(procs, errs, 3 * SUSPECT + 3)
    metrics = prom(d)
    texts = {f: open(os.path.join(d, f)).read() for f in os.listdir(d) if f.endswith(".progress")}
    stop(procs)
    check(not any(LINE in e for e in errs), "healthy job: no suspect: %s" % errs)
    for name, text in metrics.items():
        check("\nncclscope_hang_suspect{" not in text, "%s: no suspect series" % name)
        check(re.search(r'ncclscope_hang_suspects_total\{pid="\d+"\} 0\n', text), "%s: none logged" % name)
    check(len(texts) == 4, "a progress file per process: %s" % list(texts))
    for f, t in texts.items():
        check(re.match(r"ncclscope-progress 1\ngen \d+\nok 1\nc %s \d 4 1\nf AllGather 9\nf AllReduce 9\n" % JOB, t),
              "%s: %r" % (f, t))
    print("ok: healthy: every rank at AllReduce/AllGather 9 and idle %d s: no suspect" % (3 * SUSPECT + 3))


def progress_texts(d):
    return {f: open(os.path.join(d, f)).read() for f in os.listdir(d)
            if f.endswith(".progress") and not f.startswith(".")}


def test_recording_gap(driver):
    """While Coll is not recorded (the control file's stop) a process's file
    says ok 0 and lists nothing; after start, a function counts again only
    once a collective recorded after the gap raised it, and a comm is not
    complete: nothing it may have missed reads as "never entered"."""
    d = tmpdir()
    procs, _ = start(driver, d, ["--healthy"], {})
    errs = ["", "", "", ""]
    collect(procs, errs, 1.5)
    before = progress_texts(d)
    with open(os.path.join(d, "control"), "a") as f:
        f.write("stop\n")
    collect(procs, errs, 2.5)
    stopped = progress_texts(d)
    with open(os.path.join(d, "control"), "a") as f:
        f.write("start\n")
    collect(procs, errs, 2.5)
    after = progress_texts(d)
    stop(procs)
    check(len(before) == 4 and all("\nok 1\nc %s " % JOB in t and "f AllReduce 9\n" in t for t in before.values()),
          "before: %s" % before)
    check(len(stopped) == 4 and all(re.match(r"ncclscope-progress 1\ngen \d+\nok 0\nend\n$", t)
                                    for t in stopped.values()), "stopped: %s" % stopped)
    check(len(after) == 4 and all(re.search(r"\nok 1\nc %s \d 4 0\n(c [0-9a-f]+ \d 2 0\n)?end\n$" % JOB, t)
                                  for t in after.values()), "after start: %s" % after)
    check(not any(LINE in e for e in errs), "no suspect: %s" % errs)
    print("ok: a gap in recording: ok 0, then nothing that could have been missed")


def test_flight(driver, cli):
    """Flight mode: the window in memory, dumped on the control file's
    "dump" (every process): each dump holds its process's latest suspect
    block, which `hang` shows."""
    d = tmpdir()
    procs, t0 = start(driver, d, ["--skip", "2"], {"NCCLSCOPE_MODE": "flight"})
    errs = ["", "", "", ""]
    deadline = t0 + SUSPECT + 8
    while time.time() < deadline and not all(LINE in errs[r] for r in (0, 1, 3)):
        collect(procs, errs, 0.2)
    check(all(LINE in errs[r] for r in (0, 1, 3)), "flight mode: suspects logged: %s" % errs)
    with open(os.path.join(d, "control"), "a") as f:
        f.write("dump\n")
    deadline = time.time() + 20
    while time.time() < deadline and len(trace_files(d)) < 4:
        collect(procs, errs, 0.2)
    time.sleep(0.5)
    stop(procs)
    check(len(trace_files(d)) == 4, "a dump per process: %s" % os.listdir(d))
    doc = json.loads(subprocess.run([cli, "hang", d, "--json"], capture_output=True, text=True).stdout)
    got = sorted((s["rank"], s["op"], s["seq"], s["missing_ranks"]) for s in doc["suspects"])
    check(got == [(r, "AllReduce", OPS - 1, [2]) for r in (0, 1, 3)], "the dumps' suspects: %s" % doc["suspects"])
    print("ok: flight mode: the dumps hold the suspects")


def test_two_ranks(wdriver):
    """One process holding two ranks of a comm (a process driving several
    GPUs): rank 1 never entered AllReduce 4 of comm 0x5744000c, which rank 0
    did. This process's own table says so, with no other process's file;
    the comm where both ranks are at 4 is not suspect."""
    d = tmpdir()
    _, plugin, _ = env_paths()
    # the plugin alone, without ncclscope-writer next to it: the suspect
    # thread makes its file-system calls itself (the other tests: through
    # the writer process)
    lib = os.path.join(d, "lib")
    os.makedirs(lib)
    alone = os.path.join(lib, os.path.basename(plugin))
    shutil.copy(plugin, alone)
    trace = os.path.join(d, "trace")
    env = dict(os.environ, NCCLSCOPE_DIR=trace, NCCLSCOPE_SUSPECT_SECONDS=str(SUSPECT))
    for k in ("NCCLSCOPE_EVENTS", "NCCLSCOPE_KERNEL_SAMPLE", "NCCLSCOPE_KERNEL_SAMPLE_MS"):
        env.pop(k, None)
    p = subprocess.Popen([wdriver, "--plugin", alone, "--mode", "two-ranks"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.stdout.readline().decode().strip() == "stalled", "watchdog_driver two-ranks")
    err = [""]
    deadline = time.time() + SUSPECT + 8
    while time.time() < deadline and LINE not in err[0]:
        collect([p], err, 0.2)
    collect([p], err, 2)
    out, e2 = p.communicate(b"go\n", timeout=30)
    text = err[0] + e2.decode(errors="replace")
    lines = [l for l in text.splitlines() if LINE in l]
    check(len(lines) == 1 and "comm 000000005744000c rank 0: AllReduce seq 4 " in lines[0] and
          "not entered by rank(s) 1 " in lines[0], "one suspect, rank 0 waiting for rank 1: %s" % text)
    check(p.returncode == 0, "two-ranks finished: rc %s" % p.returncode)
    check("cannot start the writer process" in text, "no writer: the thread's own calls: %s" % text)
    left = [f for f in os.listdir(trace) if "progress" in f]
    check(not left, "its progress file removed at finalize: %s" % left)
    print("ok: two ranks in one process: rank 0 waits for rank 1, from the process's own table "
          "(without a writer process)")


def test_off(driver):
    d = tmpdir()
    procs, _ = start(driver, d, ["--skip", "2"], {"NCCLSCOPE_SUSPECT_SECONDS": "0"})
    errs = ["", "", "", ""]
    collect(procs, errs, SUSPECT + 3)
    files = os.listdir(d)
    metrics = prom(d)
    stop(procs)
    check(not any(f.endswith(".progress") for f in files), "off: no progress file: %s" % files)
    check(len(metrics) == 4 and not any("ncclscope_hang_suspect" in t for t in metrics.values()),
          "off: no suspect series in the metrics files")
    check(not any(LINE in e for e in errs), "off: no suspect")
    print("ok: off")


def test_removed(wdriver):
    """A process that finalizes removes its progress file (no file that would
    read as a live process) and leaves no temporary behind."""
    d = tmpdir()
    _, plugin, _ = env_paths()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_SUSPECT_SECONDS=str(SUSPECT))
    p = subprocess.Popen([wdriver, "--plugin", plugin, "--mode", "metrics"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.stdout.readline().strip() == "waiting", "watchdog_driver metrics mode")
    deadline = time.time() + 5
    while time.time() < deadline and not any(f.endswith(".progress") for f in os.listdir(d)):
        time.sleep(0.1)
    during = os.listdir(d)
    out, err = p.communicate("go\n", timeout=30)
    left = [f for f in os.listdir(d) if "progress" in f]
    check(any(f.endswith(".progress") for f in during), "a progress file while running: %s" % during)
    check(p.returncode == 0 and not left, "finalized: no progress file left: %s (rc %s) %s" % (left, p.returncode, err))
    print("ok: removed at finalize")


if __name__ == "__main__":
    driver = sys.argv[1]
    cli, _, _ = env_paths()
    test_hung(driver, cli)
    test_healthy(driver)
    test_recording_gap(driver)
    test_flight(driver, cli)
    test_off(driver)
    test_two_ranks(sys.argv[2])
    test_removed(sys.argv[2])
