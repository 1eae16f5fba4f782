# SPDX-License-Identifier: Apache-2.0
"""The counting reference plugin against ncclscope on every replay source the
other replay tests use (tests/data/*.nsc, tests/data/h200x4_procs/*.nsc and
the NCCL recordings tests/data/recordings/*/*.tsv): each source is replayed once into the
counting plugin and once into ncclscope (every event type), and

  * the counting plugin's starts per type, stops and states equal what
    ncclscope's trace holds (`ncclscope info`, and per state the converted
    JSON), with zero drops and a cleanly closed trace;
  * for NCCL recordings (.tsv) both equal the recording itself (S, E and R
    lines), so the counting plugin is checked against the ground truth too;
  * the counting plugin writes its file from a destructor when a process
    never finalizes, and counts handles it never returned apart;
  * the GPU sweep's report (bench/gpu/nccl_tests_report.py) reads these
    replays as runs: all kept gives exit 0, an injected drop, a lost event
    or a failed run make it say so and exit non-zero.

usage: test_counting.py COUNTING_PLUGIN_SO"""
import collections
import glob
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, convert, data_dir, env_paths, events, recordings, run, tmpdir, trace_files  # noqa: E402

TYPES = ["Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
         "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch"]
STATES = {8: "ProxyStepSendGPUWait", 9: "ProxyStepSendWait", 10: "ProxyStepRecvWait",
          11: "ProxyStepRecvFlushWait", 12: "ProxyStepRecvGPUWait", 13: "ProxyCtrlIdle",
          14: "ProxyCtrlActive", 15: "ProxyCtrlSleep", 16: "ProxyCtrlWakeup", 17: "ProxyCtrlAppend",
          18: "ProxyCtrlAppendEnd", 19: "ProxyOpInProgress", 20: "ProxyStepSendPeerWait",
          21: "NetPluginUpdate", 22: "KernelChStop", 23: "GroupStartApiStop", 24: "GroupEndApiStart"}


def sources():
    d = data_dir()
    out = sorted(glob.glob(os.path.join(d, "*.nsc"))) + sorted(glob.glob(os.path.join(d, "h200x4_procs", "*.nsc")))
    check(len(out) >= 6, "replay sources in tests/data: %s" % out)
    return out


def parse_info(text):
    info = {}
    m = re.search(r"^records\s+(\d+) \(start (\d+), stop (\d+), state (\d+)\)", text, re.M)
    check(m, "info has no records line:\n" + text)
    info["start"], info["stop"], info["state"] = int(m.group(2)), int(m.group(3)), int(m.group(4))
    m = re.search(r"^events by type\s+(.*)$", text, re.M)
    check(m, "info has no events-by-type line:\n" + text)
    info["types"] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
    m = re.search(r"^dropped\s+(\d+) records", text, re.M)
    check(m, "info has no dropped line:\n" + text)
    info["dropped"] = int(m.group(1))
    info["clean"] = re.search(r"^closed cleanly\s+yes", text, re.M) is not None
    info["damage"] = re.search(r"^damage\s+none", text, re.M) is None
    return info


def json_states(doc):
    """(type, state name) -> count over the converted events; None when the
    converter left states out (more than it shows per event)."""
    out = collections.Counter()
    for e in events(doc):
        a = e["args"]
        if a.get("states_not_shown"):
            return None
        for s in a.get("states", []):
            out[(e["cat"], s["state"])] += 1
    return out


def recording_counts(path):
    """What an NCCL recording holds: starts per type, stops, (type, state) counts."""
    types, ev_type = collections.Counter(), {}
    stops, states = 0, collections.Counter()
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[3] == "S":
            types[f[6]] += 1
            ev_type[int(f[5])] = f[6]
        elif f[3] == "E":
            stops += 1
        elif f[3] == "R":
            states[(ev_type[int(f[4])], STATES.get(int(f[5]), "state" + f[5]))] += 1
    return types, stops, states


def flat_states(counts):
    return collections.Counter({(t, s): n for t, d in counts["state"].items() for s, n in d.items()})


def replay_both(src, counting):
    cli, plugin, _ = env_paths()
    work = tmpdir()
    cdir, sdir = os.path.join(work, "counts"), os.path.join(work, "scope")
    r = run([cli, "replay", "--plugin", counting, src], env={"NCCLSCOPE_COUNT_DIR": cdir, "NCCLSCOPE_EVENTS": "all"})
    m = re.search(r"(\d+) delivered.* (\d+) NULL handles", r.stderr)
    check(m, "%s: replay summary missing: %s" % (src, r.stderr))
    delivered, nulls = int(m.group(1)), int(m.group(2))
    files = glob.glob(os.path.join(cdir, "*.counts.json"))
    check(len(files) == 1, "%s: one counts file expected, found %s" % (src, files))
    counts = json.load(open(files[0]))
    run([cli, "replay", "--plugin", plugin, src], env={"NCCLSCOPE_DIR": sdir, "NCCLSCOPE_EVENTS": "all"})
    traces = trace_files(sdir)
    check(len(traces) == 1, "%s: one ncclscope trace expected, found %s" % (src, traces))
    info_text = run([cli, "info", traces[0]]).stdout
    info = parse_info(info_text)
    doc, _ = convert(traces, os.path.join(work, "t.json"))
    return counts, delivered, nulls, info, doc, files[0], info_text


def check_source(src, counting):
    name = os.path.relpath(src, os.path.join(data_dir(), "..", ".."))
    counts, delivered, nulls, info, doc, counts_file, info_text = replay_both(src, counting)
    # The counting plugin itself: finalized, every handle ours, nothing NULL.
    check(counts["written_at"] == "finalize" and counts["inits"] == counts["finalizes"] > 0,
          "%s: counts written at the last finalize: %s" % (name, counts))
    check(counts["api_version"] == 7, "%s: newest API loaded: %s" % (name, counts["api_version"]))
    check(counts["null_handles"] == 0 and counts["foreign_handles"] == 0 and nulls == 0,
          "%s: handles: %s, replay saw %d NULL" % (name, counts, nulls))
    check(counts["totals"]["start"] == delivered == sum(counts["start"].values()),
          "%s: counted %d starts, replay delivered %d" % (name, counts["totals"]["start"], delivered))
    # ncclscope kept everything.
    check(info["dropped"] == 0 and info["clean"] and not info["damage"],
          "%s: ncclscope dropped %d, closed cleanly %s, damage %s" % (name, info["dropped"], info["clean"], info["damage"]))
    meta = doc["metadata"]["ncclscope"]
    check(meta["files"][0]["dropped_records"] == 0, "%s: converter sees drops: %s" % (name, meta["files"][0]))
    # Offered (counting) == kept (ncclscope), per type, stops and states.
    check(counts["start"] == info["types"],
          "%s: starts per type differ:\n  counting  %s\n  ncclscope %s" % (name, counts["start"], info["types"]))
    conv_types = dict(collections.Counter(e["cat"] for e in events(doc)))
    check(conv_types == counts["start"], "%s: converted events per type %s != counted %s" % (name, conv_types, counts["start"]))
    check(counts["totals"]["stop"] == info["stop"] and counts["totals"]["state"] == info["state"],
          "%s: stops %d/%d, states %d/%d (counting/ncclscope)" % (name, counts["totals"]["stop"], info["stop"],
                                                                 counts["totals"]["state"], info["state"]))
    check(counts["stop"] == counts["start"], "%s: every started event stopped once: %s" % (name, counts["stop"]))
    js = json_states(doc)
    per_state = "per state" if js is not None else "totals only (converter capped states)"
    if js is not None:
        check(js == flat_states(counts), "%s: states per type differ:\n  counting  %s\n  ncclscope %s"
              % (name, sorted(flat_states(counts).items()), sorted(js.items())))
    if src.endswith(".tsv"):  # the recording is the ground truth
        types, stops, states = recording_counts(src)
        check(dict(types) == counts["start"], "%s: recorded starts %s != counted %s" % (name, dict(types), counts["start"]))
        check(stops == counts["totals"]["stop"], "%s: recorded stops %d != counted %d" % (name, stops, counts["totals"]["stop"]))
        check(states == flat_states(counts), "%s: recorded states differ from the counted ones" % name)
    print("ok %s: %d events (%s), %d stops, %d states (%s); ncclscope kept all, 0 dropped"
          % (name, counts["totals"]["start"], ", ".join("%s %d" % kv for kv in sorted(counts["start"].items())),
             counts["totals"]["stop"], counts["totals"]["state"], per_state))
    return counts["totals"]["start"], counts_file, info_text


DTOR = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
R, P = ctypes.c_int, ctypes.c_void_p
class T(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("init", ctypes.CFUNCTYPE(R, ctypes.POINTER(P), ctypes.c_uint64, ctypes.POINTER(ctypes.c_int),
                                          ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, P)),
                ("start", ctypes.CFUNCTYPE(R, P, ctypes.POINTER(P), P)),
                ("stop", ctypes.CFUNCTYPE(R, P)),
                ("state", ctypes.CFUNCTYPE(R, P, ctypes.c_int, P)),
                ("fin", ctypes.CFUNCTYPE(R, P))]
t = T.in_dll(lib, "ncclProfiler_v6")
ctx, mask = P(), ctypes.c_int()
assert t.init(ctypes.byref(ctx), 7, ctypes.byref(mask), b"c", 1, 1, 0, None) == 0
d = (ctypes.c_uint64 * 14)()
coll, kch = P(), P()
d[0] = 1 << 1                        # Coll
assert t.start(ctx, ctypes.byref(coll), d) == 0 and coll.value
d[0], d[1] = 1 << 6, coll.value      # KernelCh, parent Coll
assert t.start(ctx, ctypes.byref(kch), d) == 0 and kch.value and kch.value != coll.value
assert t.state(kch, 22, None) == 0 and t.stop(kch) == 0
assert t.stop(P(0x1234)) == 0 and t.state(P(0x1234), 9, None) == 0   # not ours: counted apart
print(t.name.decode(), mask.value)
# no finalize: the destructor writes at exit
"""


def sanitizer_preload(lib):
    """A sanitized build's plugin loads into python only behind its runtime."""
    p = run(["ldd", lib], ok=(0, 1))
    libs = [f[2] for f in (line.split() for line in p.stdout.splitlines())
            if len(f) > 2 and f[1] == "=>" and ("libasan" in f[0] or "libtsan" in f[0])]
    return {"LD_PRELOAD": libs[0], "ASAN_OPTIONS": "detect_leaks=0"} if libs else {}


def check_destructor(counting):
    d = tmpdir()
    env = {"NCCLSCOPE_COUNT_DIR": os.path.join(d, "c"), "NCCLSCOPE_EVENTS": "all"}
    env.update(sanitizer_preload(counting))
    r = run([sys.executable, "-c", DTOR, counting], env=env)
    check(r.stdout.split() == ["counting", str((1 << 15) - 1)], "name and mask: %s" % r.stdout)
    files = glob.glob(os.path.join(d, "c", "*.counts.json"))
    check(len(files) == 1, "destructor wrote %s" % files)
    c = json.load(open(files[0]))
    check(c["written_at"] == "exit" and c["inits"] == 1 and c["finalizes"] == 0, "written at exit: %s" % c)
    check(c["start"] == {"Coll": 1, "KernelCh": 1} and c["stop"] == {"KernelCh": 1}
          and c["state"] == {"KernelCh": {"KernelChStop": 1}} and c["foreign_handles"] == 2,
          "destructor counts: %s" % c)
    print("ok: counts written from the destructor without finalize; foreign handles counted apart")


REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu", "nccl_tests_report.py")


def check_report(runs):
    """The replays laid out as run_nccl_tests.sh lays out its runs."""
    root = os.path.join(tmpdir(), "runs")
    for i, (src, counts_file, info_text) in enumerate(runs):
        case = "%s%d-%s" % (re.sub(r"\W", "_", os.path.basename(src)), i, "nvlink" if i % 2 else "net")
        os.makedirs(os.path.join(root, case, "counting", "counts"))
        os.makedirs(os.path.join(root, case, "ncclscope"))
        shutil.copy(counts_file, os.path.join(root, case, "counting", "counts"))
        with open(os.path.join(root, case, "ncclscope", "info.txt"), "w") as f:
            f.write(info_text)
        for p in ("counting", "ncclscope"):
            with open(os.path.join(root, case, p, "status"), "w") as f:
                f.write("ok 1.5\n")

    def report(ok):
        return run([sys.executable, REPORT, root], ok=ok).stdout

    out = report((0,))
    rows = [line for line in out.splitlines() if line.startswith("| ") and " ok" in line]
    check(len(rows) == len(runs) and all(line.endswith("| ok |") for line in rows), "report, all kept:\n" + out)
    check("nothing dropped" in out and "every run completed" in out, out)
    first = sorted(os.listdir(root))[0]
    info = os.path.join(root, first, "ncclscope", "info.txt")
    text = open(info).read()
    check(re.search(r"^dropped\s+0 records", text, re.M), "info has a dropped line")
    with open(info, "w") as f:  # a drop counted by ncclscope
        f.write(re.sub(r"^dropped\s+0 records", "dropped         17 records", text, flags=re.M))
    out = report((1,))
    check("DROPPED 17 records" in out, "drop reported:\n" + out)
    with open(info, "w") as f:  # an event missing without a drop counted
        f.write(re.sub(r"GroupApi=(\d+)", lambda m: "GroupApi=%d" % (int(m.group(1)) - 1), text))
    out = report((1,))
    check("kept ≠ offered** (GroupApi -1)" in out, "silent loss reported:\n" + out)
    with open(info, "w") as f:
        f.write(text)
    with open(os.path.join(root, first, "counting", "status"), "w") as f:
        f.write("timeout 300.2 (after 300 s)\n")
    out = report((2,))
    check("counting timeout 300.2" in out and "some runs failed" in out, "failed run reported:\n" + out)
    print("ok: report of %d replays as runs: all kept (exit 0), drop (1), silent loss (1), failed run (2)" % len(runs))


def main():
    counting = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NSC_COUNTING")
    check(counting and os.path.exists(counting), "usage: test_counting.py COUNTING_PLUGIN_SO")
    total, runs = 0, []
    srcs = sources()
    srcs += recordings()
    for src in srcs:
        n, counts_file, info_text = check_source(src, counting)
        total += n
        runs.append((src, counts_file, info_text))
    check_destructor(counting)
    syms = sorted(line.split()[-1] for line in run(["nm", "-D", "--defined-only", counting]).stdout.splitlines()
                  if not line.split()[-1].startswith("_"))
    check(syms == ["ncclProfiler_v%d" % v for v in range(1, 8)], "counting plugin exports %s" % syms)
    check_report(runs)
    print("ok: %d events offered, every one kept by ncclscope" % total)


if __name__ == "__main__":
    main()
