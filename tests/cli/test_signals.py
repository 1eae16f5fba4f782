# SPDX-License-Identifier: Apache-2.0
"""Flight mode's signal handlers and dump files against a hostile machine:
a link planted at a dump's name, a dangling dump-all link, two threads
faulting at once, a forked child's fault, SIGTERM (default action and the
application's handler), the dump signal chained to the application's
handler and gone after unload, reserved signals refused, a directory made
from the first seconds."""
import os
import re
import signal
import socket
import subprocess
import sys
import time

from nsctest import *

churn, driver, hang_rank = sys.argv[1], sys.argv[2], sys.argv[3]
DUMP = re.compile(r"-(\d+)-(crash|term)-[0-9a-f]{16}(-\d+)?\.nsc$")


def flight_env(d, **kw):
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", NCCLSCOPE_FLIGHT_MB="8",
               NCCLSCOPE_FLUSH_MS="50")
    env.update(kw)
    if "ASAN_OPTIONS" in env:  # under ASan: our SIGSEGV handler must be the one installed
        env["ASAN_OPTIONS"] += ":handle_segv=0:allow_user_segv_handler=1"
    return env


def info_of(cli, f):
    out = run([cli, "info", f]).stdout
    check("closed cleanly  yes" in out and "damage          none" in out, "%s:\n%s" % (f, out))
    m = re.search(r"GroupApi=(\d+)", out)
    return int(m.group(1)) if m else 0


def dumps(d, kind):
    return [f for f in trace_files(d) if DUMP.search(f) and DUMP.search(f).group(2) == kind]


def planted_link(cli, plugin):
    """A link at the name a crash dump once had (<host>-<pid>-crash.nsc),
    pointing at another file: the dump must not write through it."""
    d = tmpdir()
    os.makedirs(d, exist_ok=True)
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "0.8", "--crash"], env=flight_env(d),
                         stdout=subprocess.PIPE, text=True)
    host = socket.gethostname()
    os.symlink(victim, os.path.join(d, "%s-%d-crash.nsc" % (host, p.pid)))
    out, _ = p.communicate(timeout=60)
    check(p.returncode == -signal.SIGSEGV, "the job dies of its SIGSEGV: %d" % p.returncode)
    check(open(victim, "rb").read() == b"precious\n", "the crash dump wrote through a planted link")
    files = dumps(d, "crash")
    check(len(files) == 1 and int(DUMP.search(files[0]).group(1)) == p.pid and
          not os.path.islink(files[0]), "one crash dump of its own name: %s" % trace_files(d))
    total = int(re.search(r"events (\d+)", out).group(1))
    kept = info_of(cli, files[0])
    check(kept >= total * 0.99, "crash dump: %d of %d events" % (kept, total))
    print("ok: a planted link is left alone; the dump is %s" % os.path.basename(files[0]))


def two_faults(cli, plugin):
    """Two threads fault at the same moment: one dump, whole."""
    for i in range(6):
        d = tmpdir()
        p = subprocess.run([driver, "--plugin", plugin, "--two-faults"], env=flight_env(d),
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == -signal.SIGSEGV, "run %d: exit %d\n%s" % (i, p.returncode, p.stderr[-2000:]))
        files = dumps(d, "crash")
        check(len(files) == 1, "run %d: one crash dump: %s" % (i, trace_files(d)))
        total = int(re.search(r"events (\d+)", p.stdout).group(1))
        kept = info_of(cli, files[0])
        check(kept >= total, "run %d: %d of %d events" % (i, kept, total))
    print("ok: two threads faulting together leave one whole dump (6 runs)")


def stack_overflow(cli, plugin):
    """An application thread that overflows its stack: the crash handler
    needs a stack to run on, which the plugin gives every thread that calls
    it and has none (before: the process died with no dump)."""
    d = tmpdir()
    p = subprocess.run([driver, "--plugin", plugin, "--overflow"], env=flight_env(d),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == -signal.SIGSEGV, "exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
    files = dumps(d, "crash")
    check(len(files) == 1, "one crash dump: %s" % trace_files(d))
    total = int(re.search(r"events (\d+)", p.stdout).group(1))
    kept = info_of(cli, files[0])
    check(kept >= total, "%d of %d events" % (kept, total))
    print("ok: an application thread's stack overflow leaves a whole dump")


def busy_crash(cli, plugin):
    """A fault while other threads record at full speed: every event
    finished before it is in the dump (chunks being compressed, or refused
    by the window frozen for the dump, and segments a drainer was moving)."""
    for i in range(6):
        d = tmpdir()
        p = subprocess.run([driver, "--plugin", plugin, "--busy-crash"],
                           env=flight_env(d, NCCLSCOPE_FLIGHT_MB="512"), capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == -signal.SIGSEGV, "run %d: exit %d\n%s" % (i, p.returncode, p.stderr[-2000:]))
        files = dumps(d, "crash")
        check(len(files) == 1, "run %d: one crash dump: %s" % (i, trace_files(d)))
        before = int(re.search(r"events (\d+)", p.stdout).group(1))
        kept = info_of(cli, files[0])
        check(kept >= before, "run %d: %d events finished before the fault, %d in the dump (%d missing, "
              "none counted)" % (i, before, kept, before - kept))
    print("ok: a fault while 3 threads record: every event finished before it is in the dump (6 runs)")


def forked_child(cli, plugin):
    """A forked child's fault writes nothing: the window is its parent's."""
    d = tmpdir()
    p = subprocess.run([driver, "--plugin", plugin, "--fork-crash"], env=flight_env(d),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and "child signal %d" % signal.SIGSEGV in p.stdout,
          "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr[-2000:]))
    check(dumps(d, "crash") == [], "a forked child wrote a crash dump: %s" % trace_files(d))
    files = trace_files(d)
    check(len(files) == 1, "the parent's end-of-session dump alone: %s" % files)
    info_of(cli, files[0])
    print("ok: a forked child's fault writes no dump; the parent's session ends normally")


def fork_control(plugin):
    """fork() while other threads use the control API: every child can use
    it too (a mutex held at fork by a thread the child lacks deadlocked)."""
    d = tmpdir()
    p = subprocess.run([driver, "--plugin", plugin, "--fork-control"], env=dict(os.environ, NCCLSCOPE_DIR=d),
                       capture_output=True, text=True, timeout=200)
    check(p.returncode == 0 and "deadlocked 0" in p.stdout, "exit %d: %s %s" % (p.returncode, p.stdout,
                                                                               p.stderr[-1000:]))
    print("ok: 20 children forked while 2 threads use the control API: none deadlocked")


def chained_dump_signal(plugin):
    """The application's handler for the dump signal runs while we hold it,
    and is back after finalize and after unload (no handler left in
    unmapped code)."""
    d = tmpdir()
    p = subprocess.run([driver, "--plugin", plugin, "--chain", str(int(signal.SIGUSR2))],
                       env=flight_env(d, NCCLSCOPE_DUMP_SIGNAL="USR2"), capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0 and "app handler 3" in p.stdout,
          "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr[-2000:]))
    print("ok: the dump signal reaches the application's handler; gone after unload")


def reserved_signal(plugin):
    """Signals the C library keeps for itself, and the ones that cannot be
    caught or that dump anyway, are refused with the reason in the log."""
    for bad in ("32", "33", "KILL", "SEGV", "9", "CHLD"):
        d = tmpdir()
        p = subprocess.run([churn, "--plugin", plugin, "--stream", "0.2"],
                           env=dict(flight_env(d, NCCLSCOPE_DUMP_SIGNAL=bad), NCCLSCOPE_HOST_LOG="1"),
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "NCCLSCOPE_DUMP_SIGNAL=%s: exit %d %s" % (bad, p.returncode, p.stderr[-2000:]))
        log = p.stdout + p.stderr
        check(re.search(r'NCCLSCOPE_DUMP_SIGNAL="?%s"?: [a-z]' % bad, log),
              "NCCLSCOPE_DUMP_SIGNAL=%s: no reason logged:\n%s" % (bad, log[-2000:]))
    print("ok: reserved and uncatchable dump signals are refused in the log")


def term_default(cli, plugin):
    """A hung flight-mode process: the directory is there from the start,
    dump-now works, SIGTERM dumps and then ends the process as SIGTERM
    would have; the dump reads with `info` and `hang`."""
    d = tmpdir()
    os.rmdir(d) if os.path.isdir(d) else None
    env = flight_env(d, NCCLSCOPE_EVENTS="Coll,P2p,KernelCh,ProxyOp,ProxyStep")
    p = subprocess.Popen([hang_rank, "--plugin", plugin, "--rank", "0", "--nranks", "2", "--ops", "6",
                          "--mode", "p2p"], env=env, stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().strip() == "hung", "the rank did not reach its hang")
    deadline = time.time() + 3
    while not os.path.isdir(d) and time.time() < deadline:
        time.sleep(0.05)
    check(os.path.isdir(d), "flight mode: %s is not there within 3 s" % d)
    check(trace_files(d) == [], "nothing written before a trigger: %s" % trace_files(d))
    open(os.path.join(d, "dump-now"), "w").close()
    deadline = time.time() + 10
    while len(trace_files(d)) < 1 and time.time() < deadline:
        time.sleep(0.05)
    check(len(trace_files(d)) == 1, "dump-now served: %s" % trace_files(d))
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    check(p.returncode == -signal.SIGTERM, "SIGTERM ends the process as before: %d" % p.returncode)
    files = dumps(d, "term")
    check(len(files) == 1 and int(DUMP.search(files[0]).group(1)) == p.pid,
          "one SIGTERM dump: %s" % trace_files(d))
    info_of(cli, files[0])
    h = run([cli, "hang", files[0]], ok=(4,))  # 4: a hang was found
    check("Send to 1 waits for rank 1" in h.stdout, "hang on the SIGTERM dump:\n%s" % h.stdout)
    print("ok: SIGTERM dump %s; `hang` reads it" % os.path.basename(files[0]))


def term_app(cli, plugin):
    """SIGTERM with the application's own handler: we dump, its handler
    runs, the process records on and ends normally."""
    d = tmpdir()
    p = subprocess.Popen([driver, "--plugin", plugin, "--term-app"], env=flight_env(d),
                         stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().startswith("events"), "driver did not start")
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    check(p.returncode == 0 and "app term 1" in out, "exit %d: %s" % (p.returncode, out))
    check(len(dumps(d, "term")) == 1, "one SIGTERM dump: %s" % trace_files(d))
    for f in trace_files(d):
        info_of(cli, f)
    check(len(trace_files(d)) == 2, "the SIGTERM dump and the end-of-session one: %s" % trace_files(d))
    print("ok: SIGTERM with the application's handler: dump, its handler, recording goes on")


def main():
    cli, plugin, _ = env_paths()
    cases = sys.argv[4:] or ["planted_link", "two_faults", "stack_overflow", "busy_crash", "forked_child", "fork_control", "chained_dump_signal",
                             "reserved_signal", "term_default", "term_app"]
    for c in cases:
        fn = globals()[c]
        fn(cli, plugin) if fn.__code__.co_argcount == 2 else fn(plugin)


main()
