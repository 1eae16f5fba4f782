# SPDX-License-Identifier: Apache-2.0
"""ncclscope's usage texts, compared exactly with golden files (as zstd's
tests/cli-tests do): `ncclscope <command> --help`, `-h` and `ncclscope help
<command>` print tests/cli/expected/<command>.help on standard output and exit
0; `ncclscope help` prints expected/ncclscope.help (the version replaced by
VERSION). A changed text is a changed file here: update it on purpose.

Then the default output of convert, stats and report: a short summary and
where the outputs are; the per-file diagnostics (GPU clock mapping, clock
alignment per host) only with -v."""
import difflib
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, fail, run, tmpdir  # noqa: E402

EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected")
COMMANDS = ["convert", "stats", "report", "info", "replay", "version", "help", "hang", "export"]


def same(got, path, what):
    want = open(path).read()
    if got != want:
        fail("%s differs from %s:\n%s" % (what, path, "".join(difflib.unified_diff(
            want.splitlines(True), got.splitlines(True), "expected", "got"))))


def main():
    cli, _, _ = env_paths()
    for c in COMMANDS:
        path = os.path.join(EXPECTED, c + ".help")
        for args in ([c, "--help"], [c, "-h"], ["help", c], [c, "x.nsc", "--json", "--help"]):
            if c in ("version", "help") and len(args) > 2:
                continue
            r = run([cli] + args)
            check(r.stderr == "", "%s: stderr %r" % (args, r.stderr))
            same(r.stdout, path, " ".join(args))
    r = run([cli, "help"])
    same(re.sub(r"^ncclscope \S+ - ", "ncclscope VERSION - ", r.stdout), os.path.join(EXPECTED, "ncclscope.help"),
         "ncclscope help")
    r = run([cli, "help", "nosuch"], ok=(1,))
    check("unknown command 'nosuch'" in r.stderr and r.stdout == "", r.stderr)
    r = run([cli, "stats", "--bogus"], ok=(1,))
    check("unknown option --bogus" in r.stderr, r.stderr)
    print("ok: --help, -h and help <command> of %d commands match tests/cli/expected/" % len(COMMANDS))

    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()
    out = os.path.join(d, "t.json")
    quiet = run([cli, "convert", src, "-o", out]).stderr
    loud = run([cli, "convert", "-v", src, "-o", out]).stderr
    check(quiet.count("\n") == 1 and "-> " + out in quiet, "default: one summary line: %r" % quiet)
    check("GPU %globaltimer" in loud and "median notice delay" in loud and len(loud) > len(quiet),
          "-v: the GPU clock mapping per file: %r" % loud)
    st = os.path.join(d, "s.txt")
    r = run([cli, "stats", src, "-o", st])
    check(r.stderr == "ncclscope stats: 4 file(s) -> %s\n" % st, repr(r.stderr))
    r = run([cli, "report", src, "-o", os.path.join(d, "r.html")])
    check(r.stderr.count("\n") == 1 and "r.html" in r.stderr, repr(r.stderr))
    print("ok: default output is a summary (%d chars), -v adds the per-file diagnostics (%d chars)"
          % (len(quiet), len(loud)))

    # meson install: the CLI, the man page, the plugin, the harness and the
    # reference plugins (into a staging directory; nothing is rebuilt)
    meson = shutil.which("meson")
    build = os.path.dirname(os.path.dirname(os.path.abspath(cli)))
    if not meson or not os.path.exists(os.path.join(build, "meson-private")):
        print("SKIP (visible): meson install not checked: no meson or no build directory")
        return
    stage = os.path.join(d, "stage")
    p = subprocess.run([meson, "install", "-C", build, "--destdir", stage, "--no-rebuild", "--quiet"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "meson install: %s %s" % (p.stdout[-1000:], p.stderr[-1000:]))
    names = {f for _, _, fs in os.walk(stage) for f in fs}
    want = {"ncclscope", "ncclscope-bench", "ncclscope.1", "libnccl-profiler-ncclscope.so",
            "libnccl-profiler-empty.so", "libnccl-profiler-counting.so", "ncclscope.h"}
    check(want <= names, "installed: %s, missing %s" % (sorted(names), sorted(want - names)))
    # the documents the man page's SEE ALSO names, under share/doc/ncclscope, README's links kept
    page = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "ncclscope.1")).read()
    see = page.split(".SH SEE ALSO", 1)[1].split(".SH", 1)[0]
    named = re.findall(r"(?:docs/)?[\w-]+\.md", see)
    check("README.md" in named and len(named) >= 4, "SEE ALSO names %s" % named)
    docs = {os.path.relpath(os.path.join(dp, f), stage).split(os.sep + "doc" + os.sep + "ncclscope" + os.sep, 1)[-1]
            for dp, _, fs in os.walk(stage) for f in fs if (os.sep + "doc" + os.sep + "ncclscope" + os.sep) in os.path.join(dp, f)}
    check(set(named) | {"LICENSE"} <= docs, "share/doc/ncclscope holds %s, SEE ALSO names %s" % (sorted(docs), named))
    want |= {"share/doc/ncclscope/" + d for d in named + ["LICENSE"]}
    print("ok: meson install puts %s" % ", ".join(sorted(want)))


if __name__ == "__main__":
    main()
