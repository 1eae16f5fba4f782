# SPDX-License-Identifier: Apache-2.0
"""Bounded disk (NCCLSCOPE_MAX_MB): a long run with a 1 MiB cap rotates
through dozens of segment files; sampled all along, the files together never
exceed the cap; every segment left converts on its own (strings, comms and
thread names repeated), and the newest one's STATS says what was deleted:
the segment count, and records such that kept + deleted = every record the
threads wrote."""
import os
import re
import subprocess
import threading
import time

from nsctest import *

CAP = 1 << 20


def sample(d, stop, peak):
    while not stop.is_set():
        total = 0
        for e in list(os.scandir(d)) if os.path.isdir(d) else []:
            try:
                total += e.stat().st_size
            except FileNotFoundError:
                pass  # deleted while we looked
        peak[0] = max(peak[0], total)
        time.sleep(0.002)


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    stop, peak = threading.Event(), [0]
    t = threading.Thread(target=sample, args=(d, stop, peak))
    t.start()
    try:
        run([fake, "--plugin", plugin, "--synthetic", "200000", "--threads", "2"],
            env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_MAX_MB": "1", "NCCLSCOPE_CHUNK_KB": "64",
                 "NCCLSCOPE_EVENTS": "all"})
    finally:
        stop.set()
        t.join()
    files = trace_files(d)
    names = [re.search(r"\.(\d{6})\.nsc$", f) for f in files]
    check(all(names), "segment names: %s" % files)
    segs = sorted(int(m.group(1)) for m in names)
    total = sum(os.path.getsize(f) for f in files)
    check(total <= CAP and peak[0] <= CAP, "cap %d: %d at the end, %d at the peak" % (CAP, total, peak[0]))
    check(segs[-1] >= 8 and segs == list(range(segs[0], segs[-1] + 1)),
          "rotation: segments %s" % segs)

    kept = 0
    newest = None
    for f in files:
        info = run([cli, "info", f]).stdout
        check("closed cleanly  yes" in info and "damage          none" in info, info)
        check('commId 000000001234abcd name "fake"' in info, "comm description missing:\n" + info)
        threads = re.findall(r'#\d+ tid (\d+) "([^"]*)": (\d+) records in file, (\d+) written', info)
        check(threads and all(int(tid) > 0 and name for tid, name, _, _ in threads),
              "thread names missing in %s:\n%s" % (f, info))
        seg = int(re.search(r"\.(\d{6})\.nsc$", f).group(1))
        injected = len(threads) if seg > 0 else 0  # each later segment names every thread
        kept += sum(int(n) for _, _, n, _ in threads) - injected
        doc, _ = convert([f], os.path.join(d, "seg.json"))
        check(any(e["cat"] == "Coll" for e in events(doc)), "segment %s converts to no Coll" % f)
        newest = info
    m = re.search(r"segment\s+(\d+); (\d+) older segment\(s\) deleted \((\d+) bytes, (\d+) records\)", newest)
    check(m, "the newest segment does not say what was deleted:\n" + newest)
    check(int(m.group(1)) == segs[-1] and int(m.group(2)) == segs[-1] + 1 - len(segs),
          "deleted %s segments, kept %s" % (m.group(2), segs))
    written = sum(int(w) for _, _, _, w in re.findall(r'#\d+ tid (\d+) "([^"]*)": (\d+) records in file, (\d+) written', newest))
    check(kept + int(m.group(4)) == written,
          "records: %d kept + %s deleted != %d written" % (kept, m.group(4), written))
    check(int(m.group(3)) >= segs[0] * CAP // 8, "bytes deleted %s" % m.group(3))
    print("ok: %d segments, %d kept (%d bytes, peak %d), %s deleted" % (segs[-1] + 1, len(segs), total, peak[0], m.group(2)))


main()
