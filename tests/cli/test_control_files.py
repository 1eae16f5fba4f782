# SPDX-License-Identifier: Apache-2.0
"""Control files and the log against hostile input: the tail of a line
over 8 KiB is never run as a command; a junk control file gives a bounded
number of warnings, with its control bytes escaped; a newline in an
environment value does not start a new log line."""
import os
import re
import subprocess
import sys
import time

from nsctest import *

churn = sys.argv[1]


def run_with(d, write, **env):
    e = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="20", **env)
    p = subprocess.Popen([churn, "--plugin", env_paths()[1], "--stream", "2.5"], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    time.sleep(0.6)
    write(os.path.join(d, "control"))
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, err[-2000:]))
    return out, out + err  # the fake host's logger prints NCCL's log lines to stdout


def kept(cli, d):
    files = trace_files(d)
    check(len(files) == 1, "one trace: %s" % files)
    m = re.search(r"GroupApi=(\d+)", run([cli, "info", files[0]]).stdout)
    return int(m.group(1)) if m else 0


def long_line(cli):
    d = tmpdir()
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "control"), "w").close()

    def write(path):
        with open(path, "a") as f:
            f.write("x" * 8191 + "stop\n")  # the first read takes 8,191 bytes: "stop" is the tail
    out, err = run_with(d, write)
    total = int(re.search(r"events (\d+)", out).group(1))
    k = kept(cli, d)
    check(k == total, "the tail of an 8,196-byte line ran as a command: %d of %d events recorded" % (k, total))
    check("skipped" in err, "the over-long line is logged: %s" % err[-1000:])
    print("ok: a line over 8 KiB is skipped whole (%d of %d events)" % (k, total))


def junk(cli):
    d = tmpdir()
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "control"), "w").close()

    def write(path):
        with open(path, "a") as f:
            for i in range(5000):
                f.write("\x1b[31mjunk %d\x1b[0m\n" % i)
    _, err = run_with(d, write)
    warns = [l for l in err.splitlines() if "/control: " in l]
    check(0 < len(warns) <= 25, "%d warnings from a junk control file" % len(warns))
    check("\x1b" not in err and "\\x1b" in err, "control bytes reach the log raw: %r" % err[:500])
    print("ok: a junk control file: %d warnings, escaped" % len(warns))


def env_newline(cli):
    d = tmpdir()
    p = subprocess.run([churn, "--plugin", env_paths()[1], "--stream", "0.2"],
                       env=dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_CHAIN="/nonexistent\nFORGED line"),
                       capture_output=True, text=True)
    check(p.returncode == 0, "exit %d" % p.returncode)
    log = p.stdout + p.stderr
    check(not any(l.startswith("FORGED") for l in log.splitlines()) and "FORGED" in log,
          "a newline from the environment starts a log line: %r" % log[-1000:])
    print("ok: a newline in an environment value stays inside its log line")


def main():
    cli, _, _ = env_paths()
    for c in sys.argv[2:] or ["long_line", "junk", "env_newline"]:
        globals()[c](cli)


main()
