# SPDX-License-Identifier: Apache-2.0
"""`ncclscope export` without Python packages (runs under the sanitizers too).

The 4-process trace: one CSV per rank under ops/, kernel_channels/ and
proxy_steps/, comms/drops/errors for the job, the header the schema's
(tests/python/test_analysis.py checks the values against the DataFrames),
1408 operations as `ncclscope stats --json` counts them. Damaged jobs (a
file cut short, bytes flipped, a non-trace, an empty file): exit 2, every
damage in errors.csv with its file and byte offset, the good files' CSVs
the same as from the intact job. Usage errors: exit 1."""
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

CLI = os.environ["NSC_CLI"]
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
JOB = os.path.join(DATA, "h200x4_procs")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(args, ok=(0,)):
    p = subprocess.run([CLI] + args, capture_output=True, text=True)
    check(p.returncode in ok, "%s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr[-3000:]))
    return p


def rows(path):
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    return r[0], r[1:]


def tree(d):
    return sorted(os.path.relpath(os.path.join(dp, f), d) for dp, _, fs in os.walk(d) for f in fs)


def main():
    tmp = tempfile.mkdtemp(prefix="nsc-export-")
    try:
        out = os.path.join(tmp, "intact")
        p = run(["export", JOB, "-o", out])
        # .ncclscope-export: the list of what it wrote (replaced by the next export there)
        want = [".ncclscope-export", "comms.csv", "drops.csv", "errors.csv"] + ["%s/vm/rank-%d.csv" % (t, r) for t in
                ("kernel_channels", "ops", "proxy_steps") for r in range(4)]
        check(tree(out) == sorted(want), "layout: %s" % tree(out))
        n = 0
        for r in range(4):
            head, body = rows(os.path.join(out, "ops", "vm", "rank-%d.csv" % r))
            check(head[:6] == ["host", "pid", "file", "rank", "nranks", "comm"] and "gpu_ns" in head, head)
            check(all(len(x) == len(head) for x in body), "rank %d: ragged rows" % r)
            check({x[head.index("rank")] for x in body} == {str(r)}, "rank-%d.csv holds rank %d only" % (r, r))
            n += len(body)
        stats = json.loads(run(["stats", "--json", JOB]).stdout)
        check(n == stats["operations"] == 1408, "operations: %d vs stats %d" % (n, stats["operations"]))
        head, body = rows(os.path.join(out, "errors.csv"))
        check(head == ["file", "offset", "message", "file_index"] and body == [], "errors.csv: %s" % body)
        head, body = rows(os.path.join(out, "drops.csv"))
        check(len(body) == 4 and all(x[head.index("ended")] == "1" for x in body), "drops.csv: %s" % body)
        check("4 file(s)" in p.stderr and "1408 operations" in p.stderr, p.stderr)

        rnd = random.Random(13)
        files = sorted(os.listdir(JOB))
        for case in range(4):
            job = os.path.join(tmp, "job%d" % case)
            os.makedirs(job)
            for f in files:
                shutil.copy(os.path.join(JOB, f), job)
            victim = os.path.join(job, files[case])
            blob = bytearray(open(victim, "rb").read())
            if case == 0:
                blob = blob[: len(blob) * 2 // 3]
            elif case == 1:
                for _ in range(3):
                    blob[rnd.randrange(200, len(blob))] ^= 0x10
            elif case == 2:
                blob = bytearray(b"not a trace" * 20)
            else:
                blob = bytearray()
            open(victim, "wb").write(bytes(blob))
            o = os.path.join(job, "out")
            if case >= 2:  # not a trace at all (text, empty): skipped with a note, the rest exported
                p = run(["export", job, "-o", o], ok=(0,))
                why = "not an ncclscope trace" if case == 2 else "empty"
                check(victim + ": skipped: " + why in p.stderr, "case %d: %s" % (case, p.stderr))
                check(not os.path.exists(os.path.join(o, "ops", "vm", "rank-%d.csv" % case)),
                      "case %d: the skipped file's rank exported" % case)
                continue
            p = run(["export", job, "-o", o], ok=(2,))
            head, body = rows(os.path.join(o, "errors.csv"))
            check(body and all(x[0] == victim and int(x[1]) >= 0 and "offset" in x[2] for x in body),
                  "case %d: errors.csv names the file and offset: %s" % (case, body))
            check(victim + ": offset" in p.stderr, "case %d: stderr: %s" % (case, p.stderr))
            for r, f in enumerate(files):
                if f == files[case]:
                    continue
                a = open(os.path.join(o, "ops", "vm", "rank-%d.csv" % r)).read()
                b = open(os.path.join(out, "ops", "vm", "rank-%d.csv" % r)).read()
                check(a == b.replace(JOB, job), "case %d: the good file of rank %d changed" % (case, r))
        run(["export", JOB], ok=(1,))
        run(["export", "-o", os.path.join(tmp, "x")], ok=(1,))
        run(["export", JOB, "-o", os.path.join(tmp, "y"), "--bogus"], ok=(1,))
        run(["export", os.path.join(tmp, "nosuch"), "-o", os.path.join(tmp, "z")], ok=(3,))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok: export: one CSV per rank, 1408 operations, damage in errors.csv with file and offset")


if __name__ == "__main__":
    main()
