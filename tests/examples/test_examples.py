# SPDX-License-Identifier: Apache-2.0
"""The examples against real outcomes (examples/meson.build registers it):

- read_trace (libncclscope only) counts the records, STARTs, STOPs, STATEs
  and events by type that `ncclscope info` counts, and every START's
  descriptor fields equal the converter's arguments for that event;
- it reads a damaged copy up to and past the damage, naming file and
  offset, and a truncated copy up to the cut; a missing file is an error;
- replay_into_plugin plays the trace into the ncclscope plugin, whose new
  trace holds the same events by type, and into the counting plugin, which
  counts every START.

usage: test_examples.py CLI READ_TRACE REPLAY PLUGIN COUNTING_PLUGIN TRACE"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

cli, read_trace, replay, plugin, counting, trace = sys.argv[1:7]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(cmd, ok=(0,), env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=e)
    if p.returncode not in ok:
        fail("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def line(text, prefix):
    for l in text.splitlines():
        if l.startswith(prefix):
            return re.sub(r"\s+", " ", l.strip())
    fail("no line starting %r in:\n%s" % (prefix, text[-3000:]))


tmp = tempfile.mkdtemp(prefix="nsc-examples-")
try:
    # ---- counts: read_trace -q and the full listing agree with info ----
    info = run([cli, "info", trace]).stdout
    quiet = run([read_trace, "-q", trace]).stdout
    full = run([read_trace, trace]).stdout
    for prefix in ("records ", "events by type"):
        check(line(info, prefix) == line(quiet, prefix) == line(full, prefix),
              "%s: info says %r, read_trace %r / %r" % (prefix, line(info, prefix),
                                                     line(quiet, prefix), line(full, prefix)))
    total = int(line(info, "records ").split()[1])
    rec_lines = [l for l in full.splitlines() if re.match(r"^\d+ t\d+ ", l)]
    check(len(rec_lines) == total, "read_trace printed %d record lines, info counts %d" % (len(rec_lines), total))
    check(total > 1000, "the test trace has %d records only" % total)
    check("closed cleanly yes" in quiet and "damage 0" in quiet, quiet)

    # ---- fields: every START's fields are the converter's arguments ----
    out = os.path.join(tmp, "t.json")
    run([cli, "convert", "--detail", trace, "-o", out])  # every event drawn
    conv = collections.Counter()
    ev = json.load(open(out))["traceEvents"]
    for e in ev:
        a = e.get("args")
        if e.get("ph") in ("X", "b") and isinstance(a, dict) and "id" in a and e.get("cat") not in ("completion", "flow"):
            conv[(e["cat"], a["id"])] = a
    ours = 0
    mismatch = []
    for l in rec_lines:
        m = re.match(r"^\d+ t\d+ START (\S+) #(\d+) parent #\d+ comm \d+(.*)$", l)
        if not m:
            continue
        cat, eid, rest = m.group(1), int(m.group(2)), m.group(3)
        a = conv.get((cat, eid))
        if a is None or cat in ("KernelCh", "KernelPhase"):
            continue  # drawn on the GPU track with GPU-time arguments instead
        ours += 1
        for k, v in re.findall(r" (\w+)=(\S+)", rest):
            if k in ("parentGroup", "py_stack"):
                continue  # ids the converter renumbers; Python callers shown apart
            cv = a.get(k)
            if str(cv) != v and not (cv is None and v == "(null)"):
                mismatch.append("%s #%d %s: read_trace %s, convert %r" % (cat, eid, k, v, cv))
    check(ours > 500, "only %d STARTs matched converter events" % ours)
    check(not mismatch, "%d field(s) differ, first: %s" % (len(mismatch), mismatch[:5]))

    # ---- damage: a damaged and a truncated copy ----
    data = open(trace, "rb").read()
    blocks = []  # (offset, type, stored length): docs/format.md's block header
    off = 16
    while off + 24 <= len(data):
        _, btype, _, stored = struct.unpack_from("<IHHI", data, off)
        blocks.append((off, btype, stored))
        off += 24 + stored
    stats = [b for b in blocks if b[1] == 6]
    chunk = max((b for b in blocks if b[1] in (5, 8)), key=lambda b: b[2])
    check(stats and stats[-1][0] > chunk[0], "test trace layout: %s" % blocks)
    # The STATS block's payload garbled: reported with file and offset, and
    # the reader goes on to the END block after it.
    bad = os.path.join(tmp, "damaged.nsc")
    at = stats[-1][0] + 24
    open(bad, "wb").write(data[:at] + b"\xff" * 16 + data[at + 16:])
    p = run([read_trace, bad], ok=(2,))
    dmg = [l for l in p.stdout.splitlines() if l.startswith("DAMAGE ")]
    check(dmg and bad in dmg[0] and "offset %d" % stats[-1][0] in dmg[0],
          "damage not named with file and offset %d: %s" % (stats[-1][0], dmg[:2]))
    check(line(p.stdout, "records ") == line(info, "records "), "records lost to a STATS block's damage")
    check("closed cleanly yes" in p.stdout, "did not read past the damage to the END block")
    check("lost unknown" in p.stdout, "losses of a damaged STATS block: %s" % line(p.stdout, "lost"))
    # Cut inside the largest chunk: what came before it is read, the cut is
    # named, the session did not close.
    short = os.path.join(tmp, "short.nsc")
    open(short, "wb").write(data[: chunk[0] + 24 + chunk[2] // 2])
    p = run([read_trace, "-q", short], ok=(2,))
    check("closed cleanly no" in p.stdout and "truncated" in p.stdout and short in p.stdout,
          "truncated copy: %s" % p.stdout)
    check(p.stdout.startswith("session host "), "the session before the cut was not read")
    p = run([read_trace, os.path.join(tmp, "missing.nsc")], ok=(1,))
    check("missing.nsc" in p.stderr, "open error does not name the file: %r" % p.stderr)

    # ---- replay into the ncclscope plugin and the counting plugin ----
    d = os.path.join(tmp, "replayed")
    p = run([replay, plugin, trace], env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all"})
    starts = int(line(info, "records ").split()[3].rstrip(","))
    check("%d starts, %d delivered" % (starts, starts) in p.stdout, p.stdout)
    files = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".nsc")]
    check(len(files) == 1, "replay wrote %s" % files)
    again = run([read_trace, "-q", files[0]]).stdout
    check(line(again, "events by type") == line(info, "events by type"),
          "replayed trace: %r, original %r" % (line(again, "events by type"), line(info, "events by type")))
    c = os.path.join(tmp, "counts")
    run([replay, counting, trace], env={"NCCLSCOPE_COUNT_DIR": c})
    counts = [json.load(open(os.path.join(c, f))) for f in os.listdir(c) if f.endswith(".counts.json")]
    check(len(counts) == 1 and counts[0]["totals"]["start"] == starts,
          "counting plugin saw %s starts, the trace has %d" % ([x["totals"] for x in counts], starts))
    print("ok: %d records, %d STARTs with fields equal to convert's, damage and replays checked" % (total, ours))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
