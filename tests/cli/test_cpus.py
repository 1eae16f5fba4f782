"""NCCLSCOPE_CPUS: ncclscope's background threads (drainers, compressors,
the ops thread, the hang watchdog) start on the listed CPUs, and the
application's threads keep theirs. A list the kernel refuses (no CPU of it
online) falls back to the process's CPUs with a warning; a malformed list
disables the plugin with a message naming the setting."""
import os
import re
import signal
import subprocess
import sys

from nsctest import check, env_paths, tmpdir

OURS = ("ncclscope-drain", "ncclscope-zstd", "ncclscope-ops", "ncclscope-hang")


def cpulist(s):
    out = set()
    for part in s.strip().split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def threads_of(pid):
    """{name: [allowed CPU set, ...]} of the process's threads."""
    got = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            name = open("/proc/%d/task/%s/comm" % (pid, tid)).read().strip()
            st = open("/proc/%d/task/%s/status" % (pid, tid)).read()
        except OSError:
            continue  # the thread ended
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", st, re.M)
        got.setdefault(name, []).append(cpulist(m.group(1)))
    return got


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
    target = max(mine)
    line, got, err = run_rank(str(target))
    check(line == "ready", "the rank came up: %r %s" % (line, err))
    for name in ("ncclscope-drain", "ncclscope-zstd", "ncclscope-ops", "ncclscope-hang"):
        check(name in got, "thread %s exists: %s" % (name, sorted(got)))
        check(all(s == {target} for s in got[name]),
              "%s runs on CPU %d only: %s" % (name, target, got.get(name)))
    others = [s for n, ss in got.items() if n not in OURS for s in ss]
    check(others and all(s == mine for s in others),
          "the application's threads keep the process's CPUs %s: %s" % (sorted(mine), got))

    # CPU 1023: valid syntax, not online here: the process's CPUs, said once
    line, got, err = run_rank("1023")
    check(line == "ready", "the rank came up with NCCLSCOPE_CPUS=1023: %r %s" % (line, err))
    check(all(s == mine for n in OURS for s in got.get(n, [])) and "ncclscope-drain" in got,
          "refused list: our threads on the process's CPUs: %s" % got)
    check(err.count("refuses NCCLSCOPE_CPUS") == 1, "one warning for the refused list:\n" + err)

    # malformed: the plugin disables itself and says why (the rank still runs)
    line, got, err = run_rank("1-")
    check(not any(n in got for n in OURS), "no ncclscope thread with a malformed list: %s" % got)
    check("NCCLSCOPE_CPUS=\"1-\"" in err and "accepted: a CPU list" in err,
          "the malformed list is named:\n" + err)
    print("ok")


if __name__ == "__main__":
    main()
