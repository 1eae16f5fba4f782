# SPDX-License-Identifier: Apache-2.0
"""Where the commands write: an output that is an input is refused and the
input stays intact (convert, --split parts, stats -o, report -o, a directory
input holding the output, a hard link, a symlink); outputs appear complete
or not at all (a failed write leaves no file and no temporary file, and an
existing output is kept); output errors print no made-up numbers; a FIFO
as input is refused at once; standard output that cannot be written
(> /dev/full) is an error (exit 3)."""
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, fail, tmpdir  # noqa: E402


def sh(args, ok, timeout=60, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    try:
        p = subprocess.run(args, text=True, errors="replace", timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        fail("%s: no exit within %d s" % (" ".join(args), timeout))
    if p.returncode not in ok:
        fail("%s exited %d (expected %s)\nstdout: %s\nstderr: %s" %
             (" ".join(args), p.returncode, ok, p.stdout[-1500:], p.stderr[-1500:]))
    return p


def listing(d):
    return sorted(os.listdir(d))


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x2_mixed_64KiB.nsc")
    orig = open(src, "rb").read()
    d = tmpdir()
    t = os.path.join(d, "t.nsc")
    shutil.copy(src, t)

    def intact(what):
        check(open(t, "rb").read() == orig, "%s: the input was changed" % what)

    # ---- an output that is an input is refused, before anything is written ----
    link = os.path.join(d, "hard.json")
    os.link(t, link)
    sym = os.path.join(d, "sym.json")
    os.symlink(t, sym)
    link_pf, link_gz = os.path.join(d, "hard.pftrace"), os.path.join(d, "hard.json.gz")
    os.link(t, link_pf)
    os.link(t, link_gz)
    for name, args in (("convert", ["convert", t, "-o", t]),
                       ("convert .pftrace", ["convert", t, "-o", link_pf]),
                       ("convert hard link", ["convert", t, "-o", link]),
                       ("convert symlink", ["convert", t, "-o", sym]),
                       ("convert .gz", ["convert", t, "-o", link_gz]),
                       ("stats -o", ["stats", t, "-o", t]),
                       ("stats --json -o", ["stats", t, "--json", "-o", link]),
                       ("report -o", ["report", t, "-o", t]),
                       ("directory input", ["convert", d, "-o", t]),
                       ("directory input, stats", ["stats", d, "-o", t]),
                       ("directory input, report", ["report", d, "-o", t])):
        before = listing(d)
        r = sh([cli] + args, ok=(3,))
        check("refusing to write the output over an input" in r.stderr and t in r.stderr,
              "%s: %s" % (name, r.stderr))
        check(" events (" not in r.stderr, "%s: a summary after the refusal: %s" % (name, r.stderr))
        intact(name)
        check(os.path.islink(sym) and listing(d) == before, "%s: files changed: %s" % (name, listing(d)))
    print("ok: outputs equal to an input refused (convert, stats, report, links, directories)")

    # --split: a later part that is an input is refused when it comes up; the
    # input is intact and no temporary file is left.
    sd = os.path.join(d, "split")
    os.makedirs(sd)
    part1 = os.path.join(sd, "x-001.json")
    shutil.copy(src, part1)
    # (--detail: the default layout of this trace is under 1 MB, one part)
    r = sh([cli, "convert", "--detail", part1, "--split", "1", "-o", os.path.join(sd, "x.json")], ok=(3,))
    check("refusing" in r.stderr and part1 in r.stderr, r.stderr)
    check(open(part1, "rb").read() == orig, "--split: the input was changed")
    check(not [f for f in listing(sd) if f.startswith(".")], "temporary files left: %s" % listing(sd))
    # and without the clash, every part is complete JSON, and nothing else is there
    r = sh([cli, "convert", "--detail", src, "--split", "1", "-o", os.path.join(sd, "y.json")], ok=(0,))
    parts = [f for f in listing(sd) if f.startswith("y-")]
    check(len(parts) >= 2, "split into parts: %s" % listing(sd))
    check(not [f for f in listing(sd) if f.startswith(".")], "temporary files left: %s" % listing(sd))
    print("ok: --split parts checked against the inputs (%d parts)" % len(parts))

    # ---- outputs appear complete or not at all ----
    out = os.path.join(d, "out.json")
    r = sh([cli, "convert", src, "-o", out], ok=(0,))
    mode = stat.S_IMODE(os.stat(out).st_mode)
    um = os.umask(0)
    os.umask(um)
    check(mode == 0o666 & ~um, "new output mode %o, expected %o" % (mode, 0o666 & ~um))
    good_size = os.path.getsize(out)
    open(out, "w").write("previous contents")
    os.chmod(out, 0o640)
    # A file size limit makes the write fail with EFBIG half-way (SIGXFSZ
    # ignored, as the shell's ulimit -f does not).

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (10000, 10000))
    for args in (["convert", src, "-o", out], ["convert", src, "-o", out[:-5] + ".pftrace"],
                 ["report", src, "-o", out]):
        before = listing(d)
        r = sh([cli] + args, ok=(3,), preexec_fn=small_files)
        check("write failed" in r.stderr and "nothing written" in r.stderr, r.stderr)
        check(" events (" not in r.stderr, "summary printed after a failed write: %s" % r.stderr)
        check(listing(d) == before, "files left behind by %s: %s -> %s" % (args[0], before, listing(d)))
    check(open(out).read() == "previous contents", "a failed write replaced the existing output")
    r = sh([cli, "convert", src, "-o", out], ok=(0,))
    check(os.path.getsize(out) == good_size and stat.S_IMODE(os.stat(out).st_mode) == 0o640,
          "the replaced output keeps its mode")
    # /dev/stdout is written in place: the file the shell opened gets the output
    redir = os.path.join(d, "redirected.json")
    with open(redir, "w") as fo:
        sh([cli, "convert", src, "-o", "/dev/stdout"], ok=(0,), stdout=fo)
    check(os.path.getsize(redir) == good_size, "-o /dev/stdout > file")
    print("ok: failed writes leave no output and no temporary file; existing outputs kept")

    # ---- an output error prints what went wrong, no made-up numbers ----
    r = sh([cli, "convert", src, "-o", d], ok=(3,))
    check("Is a directory" in r.stderr and " events (" not in r.stderr and "dropped" not in r.stderr,
          r.stderr)
    r = sh([cli, "convert", src, "-o", os.path.join(d, "no", "such", "dir.json")], ok=(3,))
    check("No such file or directory" in r.stderr and " events (" not in r.stderr, r.stderr)
    print("ok: output errors: %s" % r.stderr.strip().splitlines()[-1])

    # ---- a FIFO as input is refused at once (nothing writes to it) ----
    fifo = os.path.join(d, "fifo.nsc")
    os.mkfifo(fifo)
    for args in (["info", fifo], ["convert", fifo, "-o", os.path.join(d, "f.json")],
                 ["stats", fifo], ["report", fifo, "-o", os.path.join(d, "f.html")]):
        r = sh([cli] + args, ok=(3,), timeout=20)
        check("FIFO" in r.stderr and fifo in r.stderr, "%s: %s" % (args[0], r.stderr))
    check(not os.path.exists(os.path.join(d, "f.json")), "output written for a refused input")
    # inside a directory: skipped with a note (not named by the user, and no
    # trace: the exit status does not change), the other file converted
    fd = os.path.join(d, "withfifo")
    os.makedirs(fd)
    shutil.copy(src, os.path.join(fd, "a.nsc"))
    os.mkfifo(os.path.join(fd, "b.nsc"))
    r = sh([cli, "convert", fd, "-o", os.path.join(d, "fd.json")], ok=(0,), timeout=20)
    check("b.nsc: skipped: a FIFO" in r.stderr and "1 file(s)" in r.stderr, r.stderr)
    check(os.path.getsize(os.path.join(d, "fd.json")) > 100000, "the intact file was converted")
    print("ok: FIFO inputs refused: %s" % r.stderr.strip().splitlines()[0])

    # ---- standard output that cannot be written ----
    if os.path.exists("/dev/full"):
        for args in (["info", src], ["stats", src], ["stats", src, "--json"],
                     ["convert", src, "-o", "-"], ["report", src, "-o", "-"], ["version"]):
            with open("/dev/full", "w") as full:
                r = sh([cli] + args, ok=(3,), stdout=full, stderr=subprocess.PIPE)
            check("standard output" in r.stderr or "write failed" in r.stderr,
                  "%s: %s" % (args[0], r.stderr))
        print("ok: > /dev/full exits 3: %s" % r.stderr.strip())
    else:
        print("SKIP: no /dev/full here: standard output errors not checked")


if __name__ == "__main__":
    main()
