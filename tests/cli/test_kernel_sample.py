# SPDX-License-Identifier: Apache-2.0
"""KernelCh on a sample of the operations (NCCLSCOPE_KERNEL_SAMPLE): real
NCCL callback recordings replayed into the plugin, the replay re-reading the
mask word at each enqueue and starting an operation's KernelCh only when its
enqueue read the KernelCh bit, as NCCL does. At default settings every
rank's every communicator gets GPU time for at least one operation in 32 (the
first one among them); 1 gives every operation, 0 none, 4 at least one in 4,
and the API v1-v4 path (the plan's Group decides) samples the same way.
KernelCh never reaches the trace for an operation that was not sampled."""
import collections
import csv
import glob
import os
import subprocess

from nsctest import check, env_paths, run, tmpdir

HERE = os.path.dirname(os.path.abspath(__file__))
REC = os.path.join(HERE, "..", "data", "recordings")


def replay(recording, env, version=None):
    cli, plugin, _ = env_paths()
    d = tmpdir()
    e = {"NCCLSCOPE_DIR": os.path.join(d, "t"), "NCCLSCOPE_KERNEL_SAMPLE_MS": "0"}
    e.update(env)
    base = dict(os.environ)
    base.pop("NCCLSCOPE_EVENTS", None)
    base.pop("NCCLSCOPE_KERNEL_SAMPLE", None)
    base.update(e)
    cmd = [cli, "replay", "--plugin", plugin] + (["--version", str(version)] if version else []) + [recording]
    p = subprocess.run(cmd, env=base, capture_output=True, text=True)
    check(p.returncode == 0, "replay %s: %s" % (recording, p.stderr[-2000:]))
    run([cli, "export", os.path.join(d, "t"), "-o", os.path.join(d, "ex")])
    ops = collections.Counter()
    for f in glob.glob(os.path.join(d, "ex", "ops", "*", "*.csv")):
        for r in csv.DictReader(open(f)):
            ops[(r["rank"], r["comm"])] += 1
    timed = collections.defaultdict(set)
    for f in glob.glob(os.path.join(d, "ex", "kernel_channels", "*", "*.csv")):
        for r in csv.DictReader(open(f)):
            timed[(r["rank"], r["comm"])].add(r["op_id"])
    return ops, {k: len(v) for k, v in timed.items()}


def main():
    ar = os.path.join(REC, "allreduce_64B", "events-vm-1611.tsv")
    torch = sorted(glob.glob(os.path.join(REC, "torch_multiproc", "*.tsv")))[0]
    for rec in (ar, torch):
        name = os.path.basename(os.path.dirname(rec))
        ops, _ = replay(rec, {"NCCLSCOPE_KERNEL_SAMPLE": "1"})
        every, timed_all = ops, _
        check(every and all(timed_all.get(k, 0) > 0 for k in every), "%s, every op: %s %s" % (name, every, timed_all))
        n_all = sum(timed_all.values())
        for env, per in (({}, 32), ({"NCCLSCOPE_KERNEL_SAMPLE": "4"}, 4)):
            ops, timed = replay(rec, env)
            check(set(ops) == set(every), "%s %s: same ranks and comms: %s" % (name, env, ops))
            for k, n in ops.items():
                want = -(-n // per)  # one in `per`, the first included
                check(timed.get(k, 0) >= min(want, timed_all.get(k, 0)),
                      "%s %s: %s: %d of %d operations timed, want >= %d" % (name, env, k, timed.get(k, 0), n, want))
            check(sum(timed.values()) < n_all or per == 1,
                  "%s %s: a sample, not every op: %d of %d" % (name, env, sum(timed.values()), n_all))
        ops, timed = replay(rec, {"NCCLSCOPE_KERNEL_SAMPLE": "0"})
        check(sum(timed.values()) == 0, "%s, KERNEL_SAMPLE=0: no KernelCh: %s" % (name, timed))
        print("ok %s: every op with 1, at least 1 in 32 and 1 in 4 of each rank's comm, none with 0" % name)
    # API v4 (NCCL 2.26-2.27): the plan's Group reads the word
    ops, timed = replay(ar, {"NCCLSCOPE_KERNEL_SAMPLE": "4"}, version=4)
    check(ops and all(timed.get(k, 0) >= -(-n // 4) for k, n in ops.items()), "v4: %s %s" % (ops, timed))
    print("ok API v4: one in 4 through the Group")
    # a mask that names KernelCh asks for every operation
    ops, timed = replay(ar, {"NCCLSCOPE_EVENTS": "default,KernelCh"})
    check(all(timed.get(k, 0) == n for k, n in ops.items()), "named KernelCh: every op: %s %s" % (ops, timed))
    print("ok NCCLSCOPE_EVENTS naming KernelCh: every operation")


if __name__ == "__main__":
    main()
