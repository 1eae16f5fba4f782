# SPDX-License-Identifier: Apache-2.0
"""NCCLSCOPE_CPUS: ncclscope's background threads (drainers, compressors,
the ops thread, the hang watchdog) start on the listed CPUs with the
application's signals blocked, and the application's threads keep theirs. A list the kernel refuses (no CPU of it
online) falls back to the process's CPUs with a warning; a malformed list
disables the plugin with a message naming the setting."""
import os
import re
import signal
import subprocess
import sys

from nsctest import check, env_paths, tmpdir

OURS = ("ncclscope-drain", "ncclscope-zstd", "ncclscope-ops", "ncclscope-hang", "ncclscope-susp")


def cpulist(s):
    out = set()
    for part in s.strip().split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


SIGNALS = (2, 10, 12, 15)  # INT, USR1, USR2, TERM: must be blocked on our threads


def threads_of(pid):
    """{name: [(allowed CPU set, blocked signal mask), ...]} of the process's threads."""
    got = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            name = open("/proc/%d/task/%s/comm" % (pid, tid)).read().strip()
            st = open("/proc/%d/task/%s/status" % (pid, tid)).read()
        except OSError:
            continue  # the thread ended
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", st, re.M)
        blk = int(re.search(r"^SigBlk:\s*([0-9a-f]+)", st, re.M).group(1), 16)
        got.setdefault(name, []).append((cpulist(m.group(1)), blk))
    return got


def cpus(got, name):
    return [c for c, _ in got.get(name, [])]


def run_rank(cpus):
    """Starts one gated rank with NCCLSCOPE_CPUS=cpus; returns (process, its
    threads once the plugin is up, stderr path)."""
    _, plugin, _ = env_paths()
    d = tmpdir()
    err = os.path.join(d, "stderr")
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_CPUS=cpus, NCCLSCOPE_HANG_SECONDS="300",
               NCCLSCOPE_EVENTS="Coll,ProxyOp")
    p = subprocess.Popen([sys.argv[1], "--plugin", plugin, "--rank", "0", "--nranks", "2", "--ops", "1",
                          "--mode", "coll", "--gate"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    line = p.stdout.readline().strip()
    got = threads_of(p.pid) if line == "ready" else {}
    p.send_signal(signal.SIGKILL)
    p.wait()
    return line, got, open(err).read()


def main():
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:
        print("SKIP: one CPU: pinning to it proves nothing")
        return
    target = max(mine)
    line, got, err = run_rank(str(target))
    check(line == "ready", "the rank came up: %r %s" % (line, err))
    for name in OURS:
        check(name in got, "thread %s exists: %s" % (name, sorted(got)))
        check(all(c == {target} for c in cpus(got, name)),
              "%s runs on CPU %d only: %s" % (name, target, cpus(got, name)))
        check(all(all(blk >> (sig - 1) & 1 for sig in SIGNALS) for _, blk in got[name]),
              "%s starts with the application's signals blocked: %s" % (name, got[name]))
    others = [c for n, ss in got.items() if n not in OURS for c, _ in ss]
    check(others and all(c == mine for c in others),
          "the application's threads keep the process's CPUs %s: %s" % (sorted(mine), got))

    # valid syntax, no such CPU online here: the process's CPUs, said once
    possible = cpulist(open("/sys/devices/system/cpu/possible").read())
    if max(possible) < 1023:
        line, got, err = run_rank("1023")
        check(line == "ready", "the rank came up with NCCLSCOPE_CPUS=1023: %r %s" % (line, err))
        check("ncclscope-drain" in got and all(c == mine for n in OURS for c in cpus(got, n)),
              "refused list: our threads on the process's CPUs: %s" % got)
        check(err.count("refuses NCCLSCOPE_CPUS") == 1, "one warning for the refused list:\n" + err)
    else:
        print("SKIP: CPU 1023 may be online here; the refused-list case needs an impossible CPU")

    # malformed: the plugin disables itself (NCCL then runs without it:
    # init succeeds with no context and an event mask of 0, since a failed
    # init unloads the plugin under NCCL's other comms from 2.29) and says
    # why, before any thread of ours starts
    line, got, err = run_rank("1-")
    check(line == "" and "hang_rank: init failed: returned 0, no context, mask 0" in err,
          "init refused the malformed list: %r %s" % (line, err))
    check("NCCLSCOPE_CPUS=\"1-\": malformed at byte 2" in err and "accepted: a CPU list" in err,
          "the malformed list is named:\n" + err)
    print("ok")


if __name__ == "__main__":
    main()
