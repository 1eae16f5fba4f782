# SPDX-License-Identifier: Apache-2.0
"""Flight mode (NCCLSCOPE_MODE=flight): nothing is written until a trigger;
every trigger dumps the window as a standalone trace that converts:
NCCLSCOPE_DUMP_SIGNAL, $NCCLSCOPE_DIR/dump-now, the control file's "dump",
the end of the session, and a SIGSEGV inside the job (the dump written from
the signal handler, then the signal goes on: the job dies of it). Each dump
holds at most the window's budget."""
import os
import re
import signal
import subprocess
import sys
import time

from nsctest import *

churn = sys.argv[1]


def events_in(cli, f):
    info = run([cli, "info", f]).stdout
    check("closed cleanly  yes" in info and "damage          none" in info, "%s:\n%s" % (f, info))
    m = re.search(r"GroupApi=(\d+)", info)
    return int(m.group(1)) if m else 0


def triggers(cli, plugin, d):
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", NCCLSCOPE_FLIGHT_MB="1",
               NCCLSCOPE_DUMP_SIGNAL="USR2", NCCLSCOPE_FLUSH_MS="100")
    p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "6"], env=env, stdout=subprocess.PIPE,
                         text=True)

    def dumped(n):  # each trigger's dump is written before the next trigger
        deadline = time.time() + 20
        while len(trace_files(d)) < n and time.time() < deadline:
            time.sleep(0.05)
        check(len(trace_files(d)) == n, "%d dump(s) after %d trigger(s): %s" % (len(trace_files(d)), n, trace_files(d)))

    time.sleep(0.6)
    check(trace_files(d) == [], "flight mode writes nothing before a trigger: %s" % trace_files(d))
    p.send_signal(signal.SIGUSR2)
    dumped(1)
    open(os.path.join(d, "dump-now"), "w").close()
    dumped(2)
    with open(os.path.join(d, "control"), "a") as c:
        c.write("dump\n")
    dumped(3)
    out, _ = p.communicate(timeout=60)
    check(p.returncode == 0, "job exit %d" % p.returncode)
    check(not os.path.exists(os.path.join(d, "dump-now")), "dump-now is taken away when it is served")
    files = trace_files(d)
    check(len(files) == 4, "a dump per trigger (signal, dump-now, control file, end): %s" % files)
    counts = [events_in(cli, f) for f in sorted(files, key=os.path.getmtime)]
    for f in files:
        check(os.path.getsize(f) < (1 << 20) + (256 << 10), "%s: %d bytes for a 1 MiB window" % (f, os.path.getsize(f)))
    total = int(re.search(r"events (\d+)", out).group(1))
    check(all(c > 0 for c in counts) and counts[-1] < total, "dumps hold the window, not the run: %s of %d" % (counts, total))
    doc, _ = convert(files[:1], os.path.join(d, "first.json"))
    check(len(events(doc)) > 0, "a dump converts")
    print("ok: flight dumps on signal, file, control and exit: %s events of %d" % (counts, total))


def crash(cli, plugin, d):
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", NCCLSCOPE_FLIGHT_MB="4")
    if "ASAN_OPTIONS" in env:  # under ASan: let the job's own SIGSEGV handler (ours) be installed
        env["ASAN_OPTIONS"] += ":handle_segv=0:allow_user_segv_handler=1"
    p = subprocess.run([churn, "--plugin", plugin, "--stream", "0.5", "--crash"], env=env,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == -signal.SIGSEGV, "the job still dies of its SIGSEGV: exit %d" % p.returncode)
    files = trace_files(d)
    check(len(files) == 1 and re.search(r"-crash-[0-9a-f]{16}\.nsc$", files[0]), "one crash dump: %s" % files)
    total = int(re.search(r"events (\d+)", p.stdout).group(1))
    kept = events_in(cli, files[0])
    # the window, the chunk jobs not kept yet and the rings: every event of the
    # run (the window of 4 MiB holds it); a drainer caught mid-segment by the
    # crash could take a few records with it
    check(kept >= total * 0.99, "crash dump: %d of %d events" % (kept, total))
    doc, _ = convert(files, os.path.join(d, "crash.json"))
    check(len(events(doc)) >= kept, "the crash dump converts")
    print("ok: SIGSEGV inside the job: %d of %d events in %s" % (kept, total, os.path.basename(files[0])))


def main():
    cli, plugin, _ = env_paths()
    triggers(cli, plugin, tmpdir())
    crash(cli, plugin, tmpdir())


main()
