# SPDX-License-Identifier: Apache-2.0
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


def info(cli, src, d):
    """info takes a job's files (README: `ncclscope info /tmp/trace/*.nsc`)
    and directories: each file after a header line, exit status the worst;
    one file prints what it always did (goldens check its bytes)."""
    files = sorted(glob.glob(os.path.join(src, "*.nsc")))
    r = run([cli, "info"] + files)
    heads = [l for l in r.stdout.splitlines() if l.startswith("==> ")]
    check(heads == ["==> %s <==" % f for f in files], "one header per file: %s" % heads)
    for f in files:
        one = run([cli, "info", f]).stdout
        check(one in r.stdout, "%s's own info is in the several files' output" % f)
        check(not one.startswith("==>"), "one file: no header")
    check(run([cli, "info", src]).stdout == r.stdout, "a directory gives its files")
    bad = os.path.join(d, "truncated.nsc")
    data = open(files[0], "rb").read()
    open(bad, "wb").write(data[: len(data) // 2])
    r = run([cli, "info", files[0], bad, files[1]], ok=(2,))
    check(r.stdout.count("==> ") == 3 and bad in r.stderr, "damage in one: exit 2, all shown: %s" % r.stderr)
    r = run([cli, "info", files[0], os.path.join(d, "missing.nsc")], ok=(3,))
    check("missing.nsc" in r.stderr, r.stderr)
    print("ok: info of several files")


def bad_values(cli, src, d):
    """Option values are parsed strictly: a usage error (exit 1) naming the
    option and the value, before anything is read or written (atof/atoi
    took "abc" and "-3" as 0; --split inf was a UB cast; an option last on
    the line was "unknown option")."""
    o = os.path.join(d, "v.json")
    cases = [
        (["stats", src, "--max-uncertainty-us", "abc"], "--max-uncertainty-us", "'abc'"),
        (["stats", src, "--max-uncertainty-us", "-3"], "--max-uncertainty-us", "'-3'"),
        (["convert", src, "-o", o, "--max-uncertainty-us", "nan"], "--max-uncertainty-us", "'nan'"),
        (["export", src, "-o", os.path.join(d, "x"), "--max-uncertainty-us", "1e"], "--max-uncertainty-us", "'1e'"),
        (["stats", src, "--top", "abc"], "--top", "'abc'"),
        (["stats", src, "--top", "-1"], "--top", "'-1'"),
        (["stats", src, "--top", "3x"], "--top", "'3x'"),
        (["convert", src, "-o", o, "--ranks", "4294967296"], "--ranks", "'4294967296'"),
        (["convert", src, "-o", o, "--ranks", "0-4096"], "at most 4096 ranks", "'0-4096'"),
        (["convert", src, "-o", o, "--ranks", "1,-2"], "--ranks", "'1,-2'"),
        (["convert", src, "-o", o, "--split", "inf"], "--split", "'inf'"),
        (["convert", src, "-o", o, "--split", "nan"], "--split", "'nan'"),
        (["convert", src, "-o", o, "--split", "1e300"], "--split", "'1e300'"),
        (["convert", src, "-o", o, "--split", "0.5"], "--split", "'0.5'"),
        (["convert", src, "-o", o, "--time", "1:2x"], "--time", "1:2x"),
        (["convert", src, "-o", o, "--time", "nan:1"], "--time", "nan:1"),
        (["convert", src, "-o"], "-o needs a value", ""),
        (["convert", src, "-o", o, "--ranks"], "--ranks needs a value", ""),
        (["convert", src, "-o", o, "--comm"], "--comm needs a value", ""),
        (["stats", src, "--top"], "--top needs a value", ""),
        (["stats", src, "--align"], "--align needs a value", ""),
        (["report", src, "-o", os.path.join(d, "r.html"), "-j"], "-j needs a value", ""),
        (["hang", src, "-j", "0"], "-j", "'0'"),
        (["export", src, "-o"], "-o needs a value", ""),
        (["replay", "--plugin", "x.so", "--version", "3x", src], "--version", "'3x'"),
        (["replay", "--plugin"], "--plugin needs a value", ""),
    ]
    for args, opt, val in cases:
        r = run([cli] + args, ok=(1,))
        line = r.stderr.strip()
        check(line.count("\n") == 0 and opt in line and val in line and "unknown option" not in line,
              "%s: %r" % (" ".join(args[2:]), r.stderr))
    check(not os.path.exists(o), "nothing written on a usage error")
    # good values still pass
    run([cli, "convert", src, "-o", o, "--split", "1.5", "--ranks", "0-1,3", "--time", "0:1e3",
         "--max-uncertainty-us", "250.5", "-j2"])
    run([cli, "stats", src, "--top", "0"])
    print("ok: %d bad option values refused" % len(cases))


def alignment_summary(cli, src, d):
    """A host placed by CLOCK_REALTIME only (no completed collective shared
    with the first) has no measured uncertainty: the one-line summary must
    not count it as +-0.000 us."""
    from test_merge_stats import rewrite_host
    job = os.path.join(d, "twohosts")
    os.makedirs(job)
    for f in glob.glob(os.path.join(src, "*.nsc")):
        os.symlink(f, os.path.join(job, os.path.basename(f)))
    rewrite_host(os.path.join(data_dir(), "h200x2_net_1MiB.nsc"), os.path.join(job, "other.nsc"), "otherhost")
    r = run([cli, "stats", job])
    line = [l for l in r.stderr.splitlines() if "hosts" in l]
    check(len(line) == 1 and "realtime clocks only" in line[0] and "+-0.000" not in line[0],
          "realtime-only host said apart: %r" % r.stderr)
    v = run([cli, "stats", "-v", job]).stderr
    check("realtime" in v and "only" in v, "-v says it too: %r" % v)
    # the same job's hosts aligned by shared collectives keep their line
    job2 = os.path.join(d, "refined")
    os.makedirs(job2)
    for i, f in enumerate(sorted(glob.glob(os.path.join(src, "*.nsc")))):
        if i < 2:
            os.symlink(f, os.path.join(job2, os.path.basename(f)))
        else:
            rewrite_host(f, os.path.join(job2, os.path.basename(f)), "otherhost")
    r = run([cli, "stats", job2])
    check("2 hosts aligned, uncertainty up to +-" in r.stderr and "realtime" not in r.stderr,
          "hosts aligned by collectives: %r" % r.stderr)
    rewrite_host(os.path.join(data_dir(), "h200x2_net_1MiB.nsc"), os.path.join(job2, "zz-third.nsc"), "thirdhost")  # sorts last: the first file's host is the reference
    r = run([cli, "stats", job2])
    check("3 hosts: 1 aligned to the first by shared collectives" in r.stderr and
          "1 placed by the hosts' realtime clocks only" in r.stderr, "mixed: %r" % r.stderr)
    print("ok: alignment summary: %s" % line[0])


def filters(cli, src, d):
    """--comm takes what info and hang print (0x..., either case); a --comm
    or --ranks that matches nothing warns (exit 0 still); the summary's
    filtered count is at most its event count."""
    import re
    ids = set(re.findall(r"commId ([0-9a-f]{16})", run([cli, "info", src]).stdout))
    check(len(ids) == 1, "one communicator: %s" % ids)
    cid = ids.pop()
    o = os.path.join(d, "f.json")

    def conv(*args):
        r = run([cli, "convert", src, "-o", o] + list(args))
        m = re.search(r"(\d+) events \(\d+ unfinished, (\d+) filtered out\)", r.stderr)
        check(m, r.stderr)
        return r.stderr, int(m.group(1)), int(m.group(2))

    for form in ("0x" + cid, "0X" + cid.upper(), cid[:6], "0x" + cid[:6]):
        err, n, filtered = conv("--comm", form)
        check(filtered == 0 and "warning" not in err, "--comm %s keeps everything: %s" % (form, err))
    err, n, filtered = conv("--comm", "0xffff")
    check(filtered == n and "warning: --comm 0xffff matches no communicator" in err, err)
    err, n, filtered = conv("--ranks", "7-9")
    check(filtered == n and "warning: --ranks 7-9 matches no communicator rank" in err, err)
    err, _, _ = conv("--ranks", "7", "--comm", cid, "--events", "p2p")
    check("--ranks 7" in err and "--comm" not in err, "--comm that exists not warned about: %s" % err)
    for args in (["--time", "0.2:0.25"], ["--ranks", "1,3"], ["--events", "coll"]):
        err, n, filtered = conv(*args)
        check(0 < filtered <= n and "warning" not in err, "%s: filtered <= events: %s" % (args, err))
    # a --time window outside the job: a warning naming the job's range
    # (exit 0, the trace written, its events all filtered out), none for a
    # window inside it, even partly
    span = None
    for t in ("50:60", "-5:-1", "-1:0"):
        err, n, filtered = conv("--time", t)
        m = re.search(r"warning: --time %s is outside the job \(0\.000 s to (\d+\.\d{3}) s\)" % re.escape(t), err)
        check(m and filtered == n and os.path.getsize(o) > 0, "--time %s: %s" % (t, err))
        span = float(m.group(1))
    doc = json.load(open(run([cli, "convert", src, "-o", o]) and o))
    ts = [e["ts"] + e.get("dur", 0) for e in doc["traceEvents"] if "ts" in e]
    check(abs(span - (max(ts) - min(e["ts"] for e in doc["traceEvents"] if "ts" in e)) / 1e6) < 0.01,
          "the job's range %.3f s is its events' (%s)" % (span, (min(ts), max(ts))))
    for t in ("-1:0.1", "0.2:99", "0.2:0.25"):
        err, n, filtered = conv("--time", t)
        check("warning" not in err and filtered < n, "--time %s: %s" % (t, err))
    print("ok: --comm 0x..., filters that match nothing warned, filtered <= events, --time outside "
          "the job (0 to %.3f s) warned" % span)


def dir_entries(cli, src, d):
    """A directory's *.nsc entries that are not regular files (a dangling
    symlink, a FIFO, a subdirectory) are skipped with one note each and do
    not change the exit status (they were exit 2, "DAMAGED input"); the same
    named on the command line exit 3. replay takes one input: two are a
    usage error (the last was silently the only one), a missing one or a
    directory exit 3 (was 2)."""
    import shutil
    job = os.path.join(d, "odd")
    os.makedirs(job)
    for f in glob.glob(os.path.join(src, "*.nsc")):
        shutil.copy(f, job)
    os.symlink(os.path.join(d, "gone.nsc"), os.path.join(job, "dangling.nsc"))
    os.mkfifo(os.path.join(job, "fifo.nsc"))
    os.makedirs(os.path.join(job, "sub.nsc"))
    want = run([cli, "stats", "--json", src]).stdout
    for args in (["stats", "--json"], ["hang"], ["info"], ["convert", "-o", os.path.join(d, "odd.json")],
                 ["report", "-o", os.path.join(d, "odd.html")], ["export", "-o", os.path.join(d, "oddx")]):
        r = run([cli] + args[:1] + [job] + args[1:], ok=(0,))
        for name, why in (("dangling.nsc", "symlink"), ("fifo.nsc", "FIFO"), ("sub.nsc", "directory")):
            notes = [l for l in r.stderr.splitlines() if name in l]
            check(len(notes) == 1 and "skipped" in notes[0] and why in notes[0], "%s: %s" % (args[0], r.stderr))
        check("DAMAGED" not in r.stderr, r.stderr)
        if args[0] == "stats":
            check(json.loads(r.stdout) == json.loads(want), "the 4 intact files' stats")
    for name in ("dangling.nsc", "fifo.nsc"):
        run([cli, "stats", os.path.join(job, name)], ok=(3,))

    plugin = "/nonexistent.so"  # the inputs are checked before the plugin is loaded
    one = sorted(glob.glob(os.path.join(src, "*.nsc")))[0]
    r = run([cli, "replay", "--plugin", plugin, one, one], ok=(1,))
    check("one input" in r.stderr, r.stderr)
    r = run([cli, "replay", "--plugin", plugin, os.path.join(d, "missing.nsc")], ok=(3,))
    check("missing.nsc: No such file" in r.stderr, r.stderr)
    r = run([cli, "replay", "--plugin", plugin, src], ok=(3,))
    check("found a directory" in r.stderr, r.stderr)
    print("ok: odd directory entries skipped, replay's inputs")


def stale_outputs(cli, src, d):
    """--split: the summary names the parts written (one part is t-000.json,
    not t.json), and parts of an earlier run past the last one are named in
    a warning (not deleted: they are the user's files). export -o DIR
    replaces an earlier export's files wholesale and refuses a non-empty
    directory that holds no export."""
    sd = os.path.join(d, "split")
    os.makedirs(sd)
    t = os.path.join(sd, "t.json.gz")
    r = run([cli, "convert", src, "-o", t, "--split", "1"])
    parts = sorted(os.listdir(sd))
    check(len(parts) > 2, "several parts: %s" % parts)
    check("-> %s ... %s (%d parts)" % (os.path.join(sd, parts[0]), os.path.join(sd, parts[-1]), len(parts))
          in r.stderr, r.stderr)
    one = os.path.join(data_dir(), "h200x2_net_1MiB.nsc")
    r = run([cli, "convert", one, "-o", t, "--split", "1"])
    check("-> %s (1 part)" % os.path.join(sd, "t-000.json.gz") in r.stderr and "-> %s\n" % t not in r.stderr,
          r.stderr)
    check("warning: %s ... %s (%d file(s)) left from an earlier run" % (
        os.path.join(sd, parts[1]), os.path.join(sd, parts[-1]), len(parts) - 1) in r.stderr, r.stderr)
    check(sorted(os.listdir(sd)) == parts, "earlier parts kept")

    x = os.path.join(d, "exp")
    run([cli, "export", src, "-o", x])
    ranks = sorted(os.listdir(os.path.join(x, "ops", "vm")))
    check(len(ranks) == 4, ranks)
    open(os.path.join(x, "notes.txt"), "w").write("mine")
    r = run([cli, "export", one, "-o", x])
    left = sorted(os.listdir(os.path.join(x, "ops", "vm")))
    check(left == ["rank-1.csv"], "the earlier export's ranks are gone: %s" % left)
    check(open(os.path.join(x, "notes.txt")).read() == "mine", "a file it did not write is kept")
    check("of an earlier export replaced" in r.stderr, r.stderr)
    y = os.path.join(d, "busy")
    os.makedirs(y)
    open(os.path.join(y, "data.csv"), "w").write("x\n")
    r = run([cli, "export", src, "-o", y], ok=(3,))
    check("not empty" in r.stderr and os.listdir(y) == ["data.csv"], r.stderr)
    # a link put where the export's host directory was: the files it points
    # to are not the export's, and stay
    import shutil
    run([cli, "export", src, "-o", x])  # its list names ops/vm/rank-0..3.csv
    elsewhere = os.path.join(d, "elsewhere")
    os.makedirs(elsewhere)
    open(os.path.join(elsewhere, "rank-2.csv"), "w").write("keep\n")
    shutil.rmtree(os.path.join(x, "ops", "vm"))
    os.symlink(elsewhere, os.path.join(x, "ops", "vm"))
    run([cli, "export", one, "-o", x], ok=(0, 3))  # rank 1 only
    check(open(os.path.join(elsewhere, "rank-2.csv")).read() == "keep\n",
          "export deleted a file through a link in its directory")
    print("ok: stale --split parts warned, export replaces its own files (not through links)")


def option_forms(cli, src, d):
    """Every command reads its options with getopt_long: --opt=value,
    --opt value, -o value and -ovalue are the same, options and inputs mix
    in any order, an unambiguous prefix of a long name is that option, and
    `--` ends the options, so that a file named like one (-x.nsc) is an
    input; before `--` it is an unknown option (usage error, exit 1)."""
    import shutil
    base = run([cli, "stats", "--json", "--top", "3", src]).stdout
    for args in (["--top=3", "--json", src], [src, "--json", "--top=3"], ["--json", "--to=3", src],
                 ["--json", "--top", "3", "--", src]):
        r = run([cli, "stats"] + args)
        check(json.loads(r.stdout) == json.loads(base), "stats %s is stats --top 3" % " ".join(args))
    check(json.loads(base) != json.loads(run([cli, "stats", "--json", src]).stdout), "--top 3 changes the output")
    a, b, c = (os.path.join(d, n) for n in ("o1.txt", "o2.txt", "o3.txt"))
    run([cli, "stats", src, "-o", a])
    run([cli, "stats", src, "-o" + b])
    check(open(a).read() == open(b).read() and open(a).read(), "-oFILE is -o FILE")
    # getopt takes what follows a short option's letter as its value, '='
    # included: -o=FILE writes "=FILE" (long options take --opt=value)
    here = os.getcwd()
    os.chdir(d)
    try:
        run([cli, "stats", src, "-o=" + "o3.txt"])
    finally:
        os.chdir(here)
    check(os.path.exists(os.path.join(d, "=o3.txt")) and not os.path.exists(c), "-o=FILE names '=FILE'")
    run([cli, "convert", src, "--ranks=0-1", "--time=0:1e3", "-j2", "-o" + os.path.join(d, "f.json")])
    r = run([cli, "convert", src, "--ranks", "0-1", "-o", os.path.join(d, "g.json")])
    check(open(os.path.join(d, "f.json"), "rb").read() == open(os.path.join(d, "g.json"), "rb").read(),
          "--ranks=0-1 is --ranks 0-1")

    # a trace file whose name starts with '-'
    one = sorted(glob.glob(os.path.join(src, "*.nsc")))[0]
    odd = os.path.join(d, "dash")
    os.makedirs(odd)
    shutil.copy(one, os.path.join(odd, "-x.nsc"))
    here = os.getcwd()
    os.chdir(odd)
    try:
        want = run([cli, "stats", "--json", one]).stdout
        got = run([cli, "stats", "--json", "--", "-x.nsc"])
        check(json.loads(got.stdout) == json.loads(want), "stats -- -x.nsc reads the file -x.nsc")
        r = run([cli, "stats", "--json", "-x.nsc"], ok=(1,))
        check(r.stderr == "ncclscope stats: unknown option -x\n", repr(r.stderr))
        run([cli, "info", "--", "-x.nsc"])
        run([cli, "hang", "--", "-x.nsc"])
        run([cli, "convert", "-o", "t.json", "--", "-x.nsc"])
        check(json.load(open("t.json"))["traceEvents"], "convert -- -x.nsc")
        # --help after `--` is a file name, not a request for the usage
        r = run([cli, "info", "--", "--help"], ok=(3,))
        check("--help: No such file" in r.stderr, r.stderr)
    finally:
        os.chdir(here)

    # messages name the option as the table does, one line each
    for args, want in ((["stats", src, "--json=1"], "ncclscope stats: --json takes no value, not '1'\n"),
                       (["convert", src, "-o", "x.json", "--bogus=2"], "ncclscope convert: unknown option --bogus\n"),
                       (["stats", src, "--top="], "ncclscope stats: --top takes a number of rows (0-1000000), not ''\n"),
                       (["hang", src, "-vj"], "ncclscope hang: unknown option -v\n")):
        r = run([cli] + args, ok=(1,))
        check(r.stderr == want, "%s: %r" % (args, r.stderr))
    print("ok: --opt=value, -oFILE, prefixes and -- before a file named -x.nsc")


def man_page():
    """docs/ncclscope.1 matches each command's --help (tests/cli/expected):
    every command in SYNOPSIS, every option of a command's usage in OPTIONS
    with that command named in its entry's "(...)" (hang was missing from
    SYNOPSIS; -j, --by-caller and stats -o from OPTIONS; --json was stats'
    only)."""
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    man = open(os.path.join(here, "..", "..", "docs", "ncclscope.1")).read().replace("\\-", "-")
    syn = man[man.index(".SH SYNOPSIS"):man.index(".SH DESCRIPTION")]
    opts = man[man.index(".SH OPTIONS"):man.index(".SH EXIT STATUS")]
    entries = [e for e in opts.split(".TP\n")[1:]]
    missing = []
    for cmd in ("convert", "stats", "report", "export", "hang", "info", "replay", "help", "version"):
        if ".B ncclscope " + cmd not in syn:
            missing.append("SYNOPSIS: " + cmd)
        text = open(os.path.join(here, "expected", cmd + ".help")).read()
        for line in text.splitlines():
            m = re.match(r"^  (-[-\w]+)(?:, (--[-\w]+))?", line)
            if not m or m.group(1) in ("-h",):
                continue
            opt = m.group(1)
            found = [e for e in entries if re.search(r"^\.(?:B|BI|BR) " + re.escape(opt) + r"\b", e, re.M)]
            ok = any(re.search(r"\((?:[a-z, ]*\b)?%s\b[a-z, ]*\)" % cmd, e) for e in found)
            if not ok:
                missing.append("%s %s" % (cmd, opt))
    check(not missing, "docs/ncclscope.1 lacks: %s" % missing)
    print("ok: ncclscope.1 covers every command's --help options")


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()
    duplicates(cli, src, d)
    info(cli, src, d)
    bad_values(cli, src, d)
    alignment_summary(cli, src, d)
    filters(cli, src, d)
    dir_entries(cli, src, d)
    stale_outputs(cli, src, d)
    option_forms(cli, src, d)
    man_page()


if __name__ == "__main__":
    main()
