# SPDX-License-Identifier: Apache-2.0
"""The writer process (docs/design.md, "The writer process"): the trace's
file-system calls are made by ncclscope-writer, a child started from the
plugin's directory, never by the job's threads.

1. A session runs one writer child, started from the plugin's directory,
   with nothing of the job's open (not its stdout: whoever reads the job's
   output is not held by it); it leaves with the session.
2. No writer next to the plugin: the job's threads write the trace as
   before, say so once in the log, and `info` says so too.
3. The writer killed mid-session: the job goes on and finalizes at once,
   says the writer is gone, and counts what could not be written.
4. The writer killed, then a crash in flight mode: the signal handler
   writes the dump itself.
5. The writer program alone: its operations, refusals (an unknown
   operation, a descriptor it did not open, a link where a file is
   created) answered with an errno, and a clean exit (0) once its channels
   close."""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

from nsctest import *

churn = sys.argv[1]


def writers(pid):
    # every thread's children: the writer is started from whichever thread
    # ran the session's init
    found = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        for k in kids:
            try:
                with open("/proc/%d/cmdline" % k, "rb") as f:
                    name = f.read().split(b"\0")[0].decode()
            except OSError:
                continue
            if name.endswith("ncclscope-writer"):
                found.append(k)
    return found


def start(plugin, d, secs, extra=None):
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="100")
    env.update(extra or {})
    return subprocess.Popen([churn, "--plugin", plugin, "--stream", str(secs)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_writer(p):
    deadline = time.time() + 10
    while time.time() < deadline and p.poll() is None:
        w = writers(p.pid)
        if w:
            return w[0]
        time.sleep(0.02)
    return None


def normal(cli, plugin, d):
    p = start(plugin, d, 1.5)
    w = wait_for_writer(p)
    check(w is not None, "the session runs a writer process")
    fds = os.listdir("/proc/%d/fd" % w)
    outs = [os.readlink("/proc/%d/fd/%s" % (w, f)) for f in fds if f in ("0", "1", "2")]
    check(all(o == "/dev/null" for o in outs), "the writer holds none of the job's stdio: %s" % outs)
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "job exit %d: %s" % (p.returncode, err))
    def running(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
        except OSError:
            return False
    deadline = time.time() + 5
    while time.time() < deadline and running(w):
        time.sleep(0.05)
    check(not running(w), "the writer left with the session")
    info = run([cli, "info", trace_files(d)[0]]).stdout
    check("closed cleanly  yes" in info, info)
    check("writer " not in info, "a trace written by the writer process says nothing of it:\n" + info)
    check("writer process" not in err, "no warning about the writer: %s" % err)
    print("ok: the session's writer process (pid %d) wrote the trace; the job's stdio not held" % w)


def fallback(cli, plugin, d):
    lib = os.path.join(d, "lib")
    os.makedirs(lib)
    alone = os.path.join(lib, os.path.basename(plugin))
    shutil.copy(plugin, alone)  # no ncclscope-writer next to it
    trace = os.path.join(d, "trace")
    p = start(alone, trace, 0.5)
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "job exit %d: %s" % (p.returncode, err))
    check(err.count("cannot start the writer process") == 1, "said once in the log: %r" % err)
    files = trace_files(trace)
    check(len(files) == 1, "one trace file: %s" % files)
    info = run([cli, "info", files[0]]).stdout
    check("closed cleanly  yes" in info, "the job's threads wrote the whole trace:\n" + info)
    check(re.search(r"writer +the job's own threads", info), "and info says who wrote it:\n" + info)
    print("ok: without ncclscope-writer the job's threads write the trace, and info says so")


def killed(cli, plugin, d):
    p = start(plugin, d, 2, {"NCCLSCOPE_EXIT_WAIT_MS": "2000"})
    w = wait_for_writer(p)
    check(w is not None, "the session runs a writer process")
    time.sleep(0.5)
    os.kill(w, signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "the job survives its writer: exit %d: %s" % (p.returncode, err))
    fin = float(re.search(r"finalized after ([\d.]+) s", out).group(1))
    check(fin < 1.0, "finalize does not wait on a dead writer: %.3f s" % fin)
    check("writer process (ncclscope-writer) is gone" in err, "the log says the writer is gone: %r" % err)
    lost = re.search(r"(\d+) records could not be written", err)
    check(lost and int(lost.group(1)) > 0, "and counts what was lost: %r" % err)
    files = trace_files(d)
    check(len(files) == 1, "the trace up to the writer's end: %s" % files)
    info = run([cli, "info", files[0]], ok=(0, 2)).stdout
    events = int(re.search(r"events (\d+)", out).group(1))
    kept = int(re.search(r"GroupApi=(\d+)", info).group(1))
    check(0 < kept < events, "kept %d of %d events" % (kept, events))
    print("ok: writer killed mid-session: the job finalized in %.3f s; %s records counted lost, %d of %d events "
          "in the file" % (fin, lost.group(1), kept, events))


def killed_then_crash(cli, plugin, d):
    env = {"NCCLSCOPE_MODE": "flight", "NCCLSCOPE_FLIGHT_MB": "4"}
    if "ASAN_OPTIONS" in os.environ:  # under ASan: let the job's own SIGSEGV handler (ours) be installed
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":handle_segv=0:allow_user_segv_handler=1"
    p = subprocess.Popen([churn, "--plugin", plugin, "--stream", "1.5", "--crash"],
                         env=dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="100", **env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w = wait_for_writer(p)
    check(w is not None, "the session runs a writer process")
    os.kill(w, signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    check(p.returncode == -signal.SIGSEGV, "the job still dies of its SIGSEGV: exit %d %s" % (p.returncode, err))
    files = trace_files(d)
    check(len(files) == 1 and re.search(r"-crash-[0-9a-f]{16}\.nsc$", files[0]), "one crash dump: %s" % files)
    total = int(re.search(r"events (\d+)", out).group(1))
    info = run([cli, "info", files[0]]).stdout
    check("closed cleanly  yes" in info, info)
    kept = int(re.search(r"GroupApi=(\d+)", info).group(1))
    check(kept >= total * 0.99, "crash dump: %d of %d events" % (kept, total))
    print("ok: writer killed, then a crash: the handler wrote the dump itself (%d of %d events)" % (kept, total))


REQ, REP = "<IiQII", "<iiqq"
MKDIR, CREATE, APPEND, CLOSE, UNLINK, MTIME, TOUCH, PWRITE, REPLACE, READ, LIST = range(1, 12)


def ask(sock, op, fd=-1, off=0, data=b"", mode=0):
    sock.sendall(struct.pack(REQ, op, fd, off, len(data), mode) + data)
    buf = b""
    while len(buf) < struct.calcsize(REP):
        chunk = sock.recv(struct.calcsize(REP) - len(buf))
        check(chunk, "the writer answers")
        buf += chunk
    return struct.unpack(REP, buf)


def ask_data(sock, op, off=0, data=b"", mode=0):
    """A request whose answer brings rc bytes (READ, LIST)."""
    rep = ask(sock, op, off=off, data=data, mode=mode)
    body = b""
    while rep[0] > 0 and len(body) < rep[0]:
        chunk = sock.recv(rep[0] - len(body))
        check(chunk, "the writer sends the bytes")
        body += chunk
    return rep, body


def program(plugin, d):
    exe = os.path.join(os.path.dirname(plugin), "ncclscope-writer")
    eng, eng_w = socket.socketpair()
    watch, watch_w = socket.socketpair()
    aux, aux_w = socket.socketpair()

    def fds():  # by way of unused numbers: none may overwrite another
        os.dup2(eng_w.fileno(), 100)
        os.dup2(watch_w.fileno(), 101)
        os.dup2(aux_w.fileno(), 102)
        os.dup2(100, 3)
        os.dup2(101, 4)
        os.dup2(102, 7)
    w = subprocess.Popen([exe, str(os.getpid())], preexec_fn=fds, pass_fds=(3, 4, 7), stderr=subprocess.PIPE,
                         text=True)
    eng_w.close()
    watch_w.close()
    aux_w.close()
    path = lambda *p: (os.path.join(d, *p) + "\0").encode()
    check(ask(eng, MKDIR, data=path("a", "b"))[0] == 0 and os.path.isdir(os.path.join(d, "a", "b")), "mkdir -p")
    fd = ask(eng, CREATE, data=path("a", "f"), mode=0o640)[0]
    check(fd >= 0, "create")
    rc, err, _, _ = ask(eng, CREATE, data=path("a", "f"), mode=0o640)
    check(rc == -1 and err == 17, "create never opens what is there (EEXIST): %d %d" % (rc, err))
    os.symlink(os.path.join(d, "target"), os.path.join(d, "a", "link"))
    rc, err, _, _ = ask(eng, CREATE, data=path("a", "link"), mode=0o640)
    check(rc == -1 and not os.path.exists(os.path.join(d, "target")), "create never follows a link: %d %d" % (rc, err))
    check(ask(eng, APPEND, fd=fd, off=0, data=b"hello ")[0] == 0, "append")
    check(ask(eng, APPEND, fd=fd, off=6, data=b"world")[0] == 0, "append")
    rc, err, _, _ = ask(eng, APPEND, fd=3, off=0, data=b"x")
    check(rc == -1 and err == 9, "a descriptor it did not open is refused (EBADF): %d %d" % (rc, err))
    rc, err, _, _ = ask(eng, 99)
    check(rc == -1 and err == 22, "an unknown operation is refused (EINVAL): %d %d" % (rc, err))
    check(ask(eng, CLOSE, fd=fd)[0] == 0, "close")
    with open(os.path.join(d, "a", "f"), "rb") as f:
        check(f.read() == b"hello world", "the bytes appended")
    rc, _, sec, nsec = ask(watch, TOUCH, data=path("a", "t"), mode=0o640)
    check(rc == 0 and sec > 0, "touch (on the other channel)")
    rc, _, sec2, nsec2 = ask(watch, MTIME, data=path("a", "t"))
    check(rc == 0 and (sec2, nsec2) == (sec, nsec), "mtime: %s %s" % ((sec, nsec), (sec2, nsec2)))
    check(ask(watch, MTIME, data=path("a", "link"))[0] == -1, "mtime of a link: none")
    check(ask(watch, UNLINK, data=path("a", "t"))[0] == 0 and not os.path.exists(os.path.join(d, "a", "t")),
          "unlink")
    # the hang suspect level's channel (fd 7): REPLACE, READ, LIST
    pf = lambda name: os.path.join(d, "a", name)
    check(ask(aux, REPLACE, data=path("a", "x.progress") + b"one\n", mode=0o644)[0] == 0 and
          open(pf("x.progress")).read() == "one\n" and os.stat(pf("x.progress")).st_mode & 0o777 == 0o644,
          "replace: a whole file, its mode")
    with open(os.path.join(d, "precious"), "w") as f:
        f.write("keep")
    os.symlink(os.path.join(d, "precious"), pf("y.progress"))
    check(ask(aux, REPLACE, data=path("a", "y.progress") + b"two\n", mode=0o644)[0] == 0 and
          not os.path.islink(pf("y.progress")) and open(os.path.join(d, "precious")).read() == "keep",
          "replace: a link at the name is replaced, its target untouched")
    check(not [n for n in os.listdir(os.path.join(d, "a")) if n.startswith(".")], "no temporary left")
    rep, body = ask_data(aux, READ, off=4096, data=path("a", "x.progress"))
    check(rep[0] == 4 and body == b"one\n", "read: %s %r" % (rep, body))
    os.symlink(pf("x.progress"), pf("l.progress"))
    check(ask_data(aux, READ, off=4096, data=path("a", "l.progress"))[0][:2] == (-1, 40), "read: never a link (ELOOP)")
    os.mkfifo(pf("f.progress"))
    check(ask_data(aux, READ, off=4096, data=path("a", "f.progress"))[0][:2] == (-1, 22), "read: a FIFO, at once (EINVAL)")
    check(ask_data(aux, READ, off=2, data=path("a", "x.progress"))[0][:2] == (-1, 27), "read: over the bound (EFBIG)")
    rep, body = ask_data(aux, LIST, off=4096, data=path("a") + b".progress\0")
    names = sorted(x.decode() for x in body.split(b"\0") if x)
    check(names == ["f.progress", "l.progress", "x.progress", "y.progress"] and rep[2] == 0,
          "list: the names with the suffix, none hidden: %s" % names)
    rep, body = ask_data(aux, LIST, off=24, data=path("a") + b".progress\0")
    check(rep[0] <= 24 and rep[2] >= 2, "list: within the bound, the rest counted: %s" % (rep,))
    eng.close()
    watch.close()
    time.sleep(0.2)
    check(w.poll() is None, "the writer stays while the suspect level's channel is open")
    check(ask(aux, UNLINK, data=path("a", "x.progress"))[0] == 0, "unlink on the suspect level's channel")
    aux.close()
    rc = w.wait(timeout=10)
    err = w.stderr.read()
    check(rc == 0 and not err, "the writer leaves cleanly once its channels close: %d %s" % (rc, err))
    print("ok: the writer program: its operations, its refusals, a clean exit")


def main():
    cli, plugin, _ = env_paths()
    normal(cli, plugin, tmpdir())
    fallback(cli, plugin, tmpdir())
    killed(cli, plugin, tmpdir())
    killed_then_crash(cli, plugin, tmpdir())
    program(plugin, tmpdir())


main()
