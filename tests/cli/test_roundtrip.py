# SPDX-License-Identifier: Apache-2.0
"""Round trip: tracing a replay of a trace gives the same events, types,
fields, threads and parent links. Uses the real NCCL traces shipped in
tests/data, and the socket-network NCCL recording of tests/data/recordings."""
import os
import re
import sys

from nsctest import *

# The replay drives NCCL's callbacks only: the Python callers a traced job
# recorded beside them (py_*: tests/data/torch_ddp_2rank.nsc) are not replayed.
IGNORE = {"id", "parent", "parentGroup", "pid", "states", "py_caller", "py_stack", "py_caller_from"}


def canon(doc):
    names = thread_names(doc)
    evs = sorted(events(doc), key=lambda e: (e["ts"], e["args"]["id"]))
    index = {e["args"]["id"]: i for i, e in enumerate(evs)}
    out = []
    for e in evs:
        a = e["args"]
        out.append((e["cat"], e["name"], names.get((e["pid"], e["tid"]), "").split(" (")[-1],
                    tuple(sorted((k, str(v)) for k, v in a.items() if k not in IGNORE)),
                    index.get(a.get("parent")), index.get(a.get("parentGroup")),
                    tuple((s["state"], s.get("value", s.get("pTimer"))) for s in a.get("states", []))))
    return out


def main():
    cli, plugin, fake = env_paths()
    inputs = [os.path.join(data_dir(), f) for f in sorted(os.listdir(data_dir())) if f.endswith(".nsc")]
    recs = recordings()
    check(inputs, "no traces in tests/data")
    for src in inputs + [r for r in recs if "net_allreduce" in r]:
        work = tmpdir()
        a_dir, b_dir = os.path.join(work, "a"), os.path.join(work, "b")
        run([cli, "replay", "--plugin", plugin, src], env={"NCCLSCOPE_DIR": a_dir, "NCCLSCOPE_EVENTS": "all"})
        a = trace_files(a_dir)
        run([cli, "replay", "--plugin", plugin, a[0]], env={"NCCLSCOPE_DIR": b_dir, "NCCLSCOPE_EVENTS": "all"})
        b = trace_files(b_dir)
        ja, _ = convert(a, os.path.join(work, "a.json"))
        jb, _ = convert(b, os.path.join(work, "b.json"))
        ca, cb = canon(ja), canon(jb)
        check(len(ca) > 100, "%s: only %d events" % (src, len(ca)))
        check(len(ca) == len(cb), "%s: %d events, then %d" % (src, len(ca), len(cb)))
        for i, (x, y) in enumerate(zip(ca, cb)):
            check(x == y, "%s: event %d differs:\n  %s\n  %s" % (src, i, x, y))
        if src.endswith(".nsc"):  # the source itself converts to the same events
            js, _ = convert([src], os.path.join(work, "s.json"))
            cs = canon(js)
            check(len(cs) == len(ca), "%s: source has %d events, replay %d" % (src, len(cs), len(ca)))
            for i, (x, y) in enumerate(zip(cs, ca)):
                check(x[0:2] == y[0:2] and x[3:] == y[3:], "%s: event %d differs from the source:\n  %s\n  %s" % (src, i, x, y))
        print("ok %s: %d events round-trip" % (os.path.basename(src), len(ca)))
    older_apis(cli, plugin)


COMM = re.compile(r'#\d+ rank (-?\d+) of -?\d+, -?\d+ node\(s\), commId ([0-9a-f]{16}) name "([^"]*)"')


def older_apis(cli, plugin):
    """v1-v3 (NCCL 2.23-2.26): init tells neither the comm nor the rank;
    every Coll and P2p descriptor carries the commHash and comm name, and
    the plugin must take them from there (before: every comm had id 0, so
    hang and stats merged different comms across ranks)."""
    src = os.path.join(data_dir(), "h200x2_net_1MiB.nsc")
    want = sorted(set(COMM.findall(run([cli, "info", src]).stdout)))
    check(want and all(c[1] != "0" * 16 for c in want), "source comms: %s" % want)
    for v in (1, 2, 3):
        d = tmpdir()
        run([cli, "replay", "--plugin", plugin, "--version", str(v), src],
            env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all"})
        got = sorted(set(COMM.findall(run([cli, "info", *trace_files(d)]).stdout)))
        check(got == want, "API v%d: comms %s, the source's %s" % (v, got, want))
    print("ok: API v1-v3 learn each comm's commHash, name and rank from its descriptors")

    # v1-v4 start a plan's Coll and P2p only under a Group handle, and
    # 2.23-2.25 (v1, v2) start P2p only with Coll, ProxyOp or ProxyStep in
    # the mask (harness/replay.c emulates both): a mask without Group, or
    # with P2p alone, still keeps every event it names
    def counts(files):
        m = re.search(r"events by type\s+(.*)", run([cli, "info", *files]).stdout)
        return dict((k, int(v)) for k, v in (x.split("=") for x in m.group(1).split() if "=" in x)) if m else {}
    have = counts([src])
    for v, events, types in ((4, "Coll,ProxyOp", ("Coll", "ProxyOp")), (3, "Coll,ProxyOp", ("Coll", "ProxyOp")),
                             (2, "P2p", ("P2p",)), (1, "P2p,ProxyOp", ("P2p", "ProxyOp"))):
        d = tmpdir()
        run([cli, "replay", "--plugin", plugin, "--version", str(v), src],
            env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": events})
        got = counts(trace_files(d))
        check(got == {t: have[t] for t in types}, "API v%d, %s: kept %s of %s" % (v, events, got, have))
    print("ok: API v1-v4 keep Coll, P2p and their children without Group in the mask")


main()
