# SPDX-License-Identifier: Apache-2.0
"""convert, stats and report on damaged job traces: blocks lost in the
middle (flipped bytes), files cut short. Every run must end with exit 0 or
2 (never a crash, never a sanitizer report), say where the damage is, and
still produce its output from what is intact. A non-trace among the files
is refused (exit 3, named)."""
import os
import random
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    files = sorted(os.listdir(src))
    rnd = random.Random(20261122)
    d = tmpdir()
    for case in range(12):
        job = os.path.join(d, "job%d" % case)
        os.makedirs(job)
        for f in files:
            shutil.copy(os.path.join(src, f), job)
        victim = os.path.join(job, rnd.choice(files))
        blob = bytearray(open(victim, "rb").read())
        if case % 3 == 0:          # cut short
            blob = blob[: rnd.randrange(16, len(blob))]
        else:                      # flip bytes in the middle
            for _ in range(1 + case % 4):
                i = rnd.randrange(16, len(blob))
                blob[i] ^= 1 << rnd.randrange(8)
        open(victim, "wb").write(bytes(blob))
        if case == 5:              # and something that is not a trace at all: skipped, named
            junk = os.path.join(job, "zz-not-a-trace.nsc")
            open(junk, "wb").write(b"garbage" * 100)
            r = run([cli, "stats", job], ok=(0, 2))
            check(junk + ": skipped: not an ncclscope trace" in r.stderr, r.stderr)
            os.unlink(junk)
        outs = {"convert": os.path.join(job, "t.json"), "pftrace": os.path.join(job, "t.pftrace"),
                "report": os.path.join(job, "r.html")}
        for cmd, args in (("convert", ["convert", job, "-o", outs["convert"]]),
                          ("pftrace", ["convert", job, "-o", outs["pftrace"]]),
                          ("stats", ["stats", job, "--json"]),
                          ("report", ["report", job, "-o", outs["report"]])):
            r = run([cli] + args, ok=(0, 2))
            check("AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr,
                  "%s on case %d: %s" % (cmd, case, r.stderr[-2000:]))
            if r.returncode == 2:
                check("offset" in r.stderr,
                      "%s case %d: the error says where: %s" % (cmd, case, r.stderr[-500:]))
            if cmd in outs:
                check(os.path.getsize(outs[cmd]) > 1000, "%s case %d: output written" % (cmd, case))
    print("ok: 12 damaged jobs x 4 commands: no crash, damage reported, output produced")


if __name__ == "__main__":
    main()
