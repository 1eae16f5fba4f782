"""The command line's inputs and option values: duplicates read once, info
of several files, strict numbers, filters that match nothing, exit codes of
entries a directory lists (docs/converter.md)."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402


def duplicates(cli, src, d):
    """A directory plus its own files (what `dir dir/*.nsc` or overlapping
    globs give) is the same 4 files: read once, said once on stderr."""
    files = sorted(glob.glob(os.path.join(src, "*.nsc")))
    once = run([cli, "stats", "--json", src])
    twice = run([cli, "stats", "--json", src] + files + [os.path.join(src, ".", os.path.basename(files[0]))])
    check(json.loads(twice.stdout) == json.loads(once.stdout),
          "stats of a directory and its files is the directory's stats")
    check("5 input(s) named twice, read once" in twice.stderr, "duplicates said: %s" % twice.stderr)
    check("named twice" not in once.stderr, "no note without duplicates")
    a = os.path.join(d, "once.json")
    b = os.path.join(d, "twice.json")
    run([cli, "convert", src, "-o", a])
    p = run([cli, "convert", src, src, "-o", b])
    check(open(a, "rb").read() == open(b, "rb").read(), "convert draws each file once")
    check("4 file(s)" in p.stderr, "convert counts 4 files: %s" % p.stderr)
    p = run([cli, "hang", src] + files)
    check(p.stdout == run([cli, "hang", src]).stdout, "hang reads each file once")
    e1, e2 = os.path.join(d, "e1"), os.path.join(d, "e2")
    run([cli, "export", src, "-o", e1])
    p = run([cli, "export", src] + files + ["-o", e2])
    check("4 input(s) named twice" in p.stderr and "4 file(s)" in p.stderr, "export: %s" % p.stderr)
    check(open(os.path.join(e1, "comms.csv")).read() == open(os.path.join(e2, "comms.csv")).read(),
          "export writes each file once")
    print("ok: duplicate inputs read once")


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()
    duplicates(cli, src, d)


if __name__ == "__main__":
    main()
