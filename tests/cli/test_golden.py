# SPDX-License-Identifier: Apache-2.0
"""Golden outputs: every command's output on the traces in tests/data, compared
byte for byte with files recorded in tests/cli/golden/ (zstd's tests/cli-tests
model). A change of output must be deliberate: rerun with --update, look at the
diff of the golden files and say why in the commit.

Each case is one command line, run in tests/data with relative paths (so the
outputs name the inputs the same way wherever the tree is). What is compared:
the exit code, standard output, standard error (the output directory written
as OUT) and the output file. Golden files are xz-compressed (the converter's
JSON is megabytes)."""
import difflib
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
GOLDEN = os.path.join(HERE, "golden")

TRACES = ["h200x2_mixed_64KiB.nsc", "h200x2_net_1MiB.nsc", "h200x4_procs"]


def cases():
    """(name, argv after the program, output file name or None)."""
    out = []
    for t in TRACES:
        out.append((t + ".convert.json", ["convert", t, "-o", "{out}"], "out.json"))
        out.append((t + ".convert.pftrace", ["convert", t, "-o", "{out}"], "out.pftrace"))
        if t.endswith(".nsc"):  # --detail's layout too, on the two smaller traces
            out.append((t + ".convert-detail.json", ["convert", "--detail", t, "-o", "{out}"], "out.json"))
            out.append((t + ".convert-detail.pftrace", ["convert", "--detail", t, "-o", "{out}"],
                        "out.pftrace"))
        out.append((t + ".stats.json", ["stats", "--json", t], None))
        out.append((t + ".stats.txt", ["stats", t], None))
        out.append((t + ".report.html", ["report", t, "-o", "{out}"], "out.html"))
        out.append((t + ".hang.json", ["hang", "--json", t], None))
        out.append((t + ".hang.txt", ["hang", t], None))
        files = [t] if t.endswith(".nsc") else \
            [os.path.join(t, f) for f in sorted(os.listdir(os.path.join(DATA, t)))]
        for f in files:
            out.append((f.replace("/", "_") + ".info.txt", ["info", f], None))
    return out


def run_case(cli, argv, outname, tmp, extra=()):
    """The bytes that stand for one run: a header with the exit code, then
    stdout, stderr and the output file, each with its length."""
    outpath = os.path.join(tmp, outname) if outname else None
    args = [a.replace("{out}", outpath or "") for a in argv] + list(extra)
    if outpath and os.path.exists(outpath):
        os.unlink(outpath)
    p = subprocess.run([cli] + args, cwd=DATA, capture_output=True)
    parts = [b"exit %d\n" % p.returncode]
    for label, data in (("stdout", p.stdout), ("stderr", p.stderr.replace(tmp.encode(), b"OUT"))):
        parts.append(b"--- %s %d\n" % (label.encode(), len(data)))
        parts.append(data)
    if outpath:
        data = open(outpath, "rb").read() if os.path.exists(outpath) else b""
        parts.append(b"--- file %d\n" % len(data))
        parts.append(data)
    return b"".join(parts)


def show_difference(name, want, got, tmp):
    keep = os.path.join(tmp, name + ".actual")
    with open(keep, "wb") as f:
        f.write(got)
    n = next((i for i in range(min(len(want), len(got))) if want[i] != got[i]), min(len(want), len(got)))
    print("FAIL: %s differs from tests/cli/golden/%s.xz at byte %d (lengths %d, %d); actual kept in %s"
          % (name, name, n, len(want), len(got), keep))
    try:
        w = want.decode().splitlines()
        g = got.decode().splitlines()
        diff = list(difflib.unified_diff(w, g, "golden", "actual", lineterm="", n=1))
        for line in diff[:40]:
            print("   ", line[:300])
    except UnicodeDecodeError:
        print("    (binary) golden %r... actual %r..." % (want[n:n + 32], got[n:n + 32]))


def main():
    cli = os.environ["NSC_CLI"]
    update = "--update" in sys.argv[1:]
    extra = []
    if "--extra" in sys.argv[1:]:  # e.g. --extra -j 1: the same outputs under other options
        extra = sys.argv[sys.argv.index("--extra") + 1:]
    tmp = tempfile.mkdtemp(prefix="nsc-golden-")
    os.makedirs(GOLDEN, exist_ok=True)
    bad = 0
    for name, argv, outname in cases():
        got = run_case(cli, argv, outname, tmp, extra if argv[0] in ("convert", "stats", "report", "hang") else ())
        path = os.path.join(GOLDEN, name + ".xz")
        if update:
            with open(path, "wb") as f:
                f.write(lzma.compress(got, preset=9 | lzma.PRESET_EXTREME))
            continue
        if not os.path.exists(path):
            print("FAIL: no golden file %s (record with --update)" % path)
            bad += 1
            continue
        want = lzma.decompress(open(path, "rb").read())
        if want != got:
            show_difference(name, want, got, tmp)
            bad += 1
    if bad:
        print("FAIL: %d of %d outputs differ from the golden files" % (bad, len(cases())))
        sys.exit(1)
    print("ok: %d outputs %s" % (len(cases()), "recorded" if update else "identical to the golden files"))
    shutil.rmtree(tmp, ignore_errors=True)  # kept above when something differs


main()
