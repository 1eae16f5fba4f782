# SPDX-License-Identifier: Apache-2.0
"""The disk never holds the job up, and a full disk never loses data
silently: frozen and full filesystems. Needs root for mount and
fsfreeze: skips with a message otherwise.

1. NCCLSCOPE_DIR on an ext4 image frozen with fsfreeze before the job
   starts, in stream and in flight mode: init, every callback and finalize
   return; finalize within NCCLSCOPE_EXIT_WAIT_MS (flight mode: and the
   trigger watcher's wait, at most as long).
   The process itself then exits at once, the disk still frozen: no thread
   of it is in the file system (the writer process is).
2. A flight-mode job that crashes (SIGSEGV) while its directory is frozen
   dies within NCCLSCOPE_EXIT_WAIT_MS + 1 s; after the thaw its crash dump,
   written by the writer process, holds the whole run and converts.
3. NCCLSCOPE_DIR on a full tmpfs that gets space back after a second: the
   plugin counts what it could not write, says why (ENOSPC) in the file,
   resumes writing, and the file converts."""
import os
import re
import select
import signal
import subprocess
import sys
import time

from nsctest import *

churn = sys.argv[1]


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def frozen(cli, plugin, d):
    img, mnt = os.path.join(d, "img"), os.path.join(d, "ext")
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    if sh("mkfs.ext4", "-q", "-F", img).returncode != 0:
        skip("mkfs.ext4 failed")
    if sh("mount", "-o", "loop", img, mnt).returncode != 0:
        skip("cannot mount a loop device here (needs root and loop devices)")
    try:
        if sh("fsfreeze", "-f", mnt).returncode != 0:
            skip("fsfreeze not allowed here")
        procs = []
        for mode in ("stream", "flight"):
            t0 = time.time()
            p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "1.5"], stdout=subprocess.PIPE,
                                 bufsize=0, env=dict(os.environ, NCCLSCOPE_DIR=os.path.join(mnt, "trace"),
                                                     NCCLSCOPE_EXIT_WAIT_MS="500", NCCLSCOPE_FLUSH_MS="100",
                                                     NCCLSCOPE_MODE=mode))
            procs.append(p)
            out = ""
            while "finalized" not in out and time.time() - t0 < 20:
                r, _, _ = select.select([p.stdout], [], [], 0.2)
                if r:
                    out += os.read(p.stdout.fileno(), 4096).decode()
            elapsed = time.time() - t0
            fin = re.search(r"finalized after ([\d.]+) s", out)
            check(fin is not None, "the job got through init, its callbacks and finalize on a frozen disk: %r" % out)
            # flight mode: the watcher's wait, then the engine's
            check(float(fin.group(1)) < 1.5, "finalize waited %s s (NCCLSCOPE_EXIT_WAIT_MS=500)" % fin.group(1))
            check(elapsed < 10, "the job ran 1.5 s of work in %.1f s on a frozen disk" % elapsed)
            # No thread of the job sits in the frozen file system (the writer
            # process does): the process ends while the disk is still frozen.
            t1 = time.time()
            try:
                p.wait(timeout=1.5)
            except subprocess.TimeoutExpired:
                pass
            check(p.returncode is not None, "the job did not exit within %.1f s of finalize on a frozen disk "
                  "(a thread of it is stuck in the file system)" % (time.time() - t1))
            print("ok: frozen disk, %s mode: %s; finalize %s s, exit %.2f s later, whole job %.1f s"
                  % (mode, out.split("\n")[0], fin.group(1), time.time() - t1, elapsed))
    finally:
        sh("fsfreeze", "-u", mnt)
    for p in procs:
        p.wait(timeout=60)
    for _ in range(100):  # the writer process leaves once the thaw lets it finish
        if sh("umount", mnt).returncode == 0:
            break
        time.sleep(0.1)


def frozen_crash(cli, plugin, d):
    img, mnt = os.path.join(d, "img2"), os.path.join(d, "ext2")
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    if sh("mkfs.ext4", "-q", "-F", img).returncode != 0:
        skip("mkfs.ext4 failed")
    if sh("mount", "-o", "loop", img, mnt).returncode != 0:
        skip("cannot mount a loop device here (needs root and loop devices)")
    trace = os.path.join(mnt, "trace")
    env = dict(os.environ, NCCLSCOPE_DIR=trace, NCCLSCOPE_MODE="flight", NCCLSCOPE_FLIGHT_MB="4",
               NCCLSCOPE_EXIT_WAIT_MS="500", NCCLSCOPE_FLUSH_MS="100")
    if "ASAN_OPTIONS" in env:  # under ASan: let the job's own SIGSEGV handler (ours) be installed
        env["ASAN_OPTIONS"] += ":handle_segv=0:allow_user_segv_handler=1"
    try:
        if sh("fsfreeze", "-f", mnt).returncode != 0:
            skip("fsfreeze not allowed here")
        p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "1", "--crash"], stdout=subprocess.PIPE,
                             bufsize=0, env=env)
        out, t0 = "", time.time()
        while "crashing" not in out and time.time() - t0 < 20:
            r, _, _ = select.select([p.stdout], [], [], 0.2)
            if r:
                out += os.read(p.stdout.fileno(), 4096).decode()
        check("crashing" in out, "the job ran up to its crash on a frozen disk: %r" % out)
        t1 = time.time()
        try:
            p.wait(timeout=2.5)
        except subprocess.TimeoutExpired:
            pass
        gone = time.time() - t1
        check(p.returncode is not None, "the crashing job did not exit within %.1f s on a frozen disk "
              "(its signal handler is stuck in the file system)" % gone)
        check(gone < 1.5, "the crash took %.2f s to end the job (NCCLSCOPE_EXIT_WAIT_MS=500)" % gone)
        check(p.returncode == -signal.SIGSEGV, "the job still dies of its SIGSEGV: exit %d" % p.returncode)
        check(not os.path.exists(trace) or not trace_files(trace), "nothing written while frozen")
    finally:
        sh("fsfreeze", "-u", mnt)
    total = int(re.search(r"events (\d+)", out).group(1))
    deadline, files, info = time.time() + 20, [], ""
    while time.time() < deadline:  # the writer process writes the dump after the thaw
        files = trace_files(trace) if os.path.isdir(trace) else []
        if files:
            info = run([cli, "info", files[0]], ok=(0, 1, 2)).stdout
            if "closed cleanly  yes" in info:
                break
        time.sleep(0.2)
    check(len(files) == 1 and re.search(r"-crash-[0-9a-f]{16}\.nsc$", files[0]), "one crash dump: %s" % files)
    check("closed cleanly  yes" in info, "the dump is whole:\n" + info)
    kept = int(re.search(r"GroupApi=(\d+)", info).group(1))
    check(kept >= total * 0.99, "crash dump after the thaw: %d of %d events" % (kept, total))
    convert(files, os.path.join(d, "crash.json"))
    print("ok: crash on a frozen disk: the job ended %.2f s after its fault; after the thaw the dump holds "
          "%d of %d events" % (gone, kept, total))
    for _ in range(100):
        if sh("umount", mnt).returncode == 0:
            break
        time.sleep(0.1)


def full(cli, plugin, d):
    mnt = os.path.join(d, "full")
    os.makedirs(mnt)
    if sh("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).returncode != 0:
        skip("cannot mount a tmpfs here (needs root)")
    try:
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        trace = os.path.join(mnt, "trace")
        os.makedirs(trace)
        p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "3"], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, NCCLSCOPE_DIR=trace, NCCLSCOPE_FLUSH_MS="100"))
        time.sleep(1.0)
        os.unlink(filler)  # space comes back
        out, _ = p.communicate(timeout=60)
        check(p.returncode == 0, "job exit %d" % p.returncode)
        files = trace_files(trace)
        check(len(files) == 1, "one trace file: %s" % files)
        r = run([cli, "info", files[0]], ok=(0, 2))
        info = r.stdout
        check("closed cleanly  yes" in info, "the file was finished after space came back:\n" + info)
        lost = re.search(r"(\d+) to write errors", info)
        check(lost and int(lost.group(1)) > 0, "the loss is in the file:\n" + info)
        check("ENOSPC" in info, "and its cause:\n" + info)
        events = int(re.search(r"events (\d+)", out).group(1))
        kept = int(re.search(r"GroupApi=(\d+)", info).group(1))
        check(0 < kept < events, "kept %d of %d events: writing resumed" % (kept, events))
        doc, _ = convert(files, os.path.join(d, "full.json"))
        print("ok: full disk: %d of %d events kept, %s records lost and counted" % (kept, events, lost.group(1)))
    finally:
        sh("umount", mnt)


def main():
    cli, plugin, _ = env_paths()
    if os.geteuid() != 0:
        skip("needs root (mount, fsfreeze): the disk tests run in CI as root")
    d = tmpdir()
    full(cli, plugin, d)
    frozen(cli, plugin, d)
    frozen_crash(cli, plugin, d)


main()
