# SPDX-License-Identifier: Apache-2.0
"""Chaining (NCCLSCOPE_CHAIN): a counting plugin behind ncclscope receives
exactly what ncclscope records (per type: starts, stops, states) when both
ask for the same events, with its own handles (never one of ours, every
parent one of its own); asked for more than ncclscope records, it gets all
of it while ncclscope's trace stays what it is without a chained plugin;
a plugin with only ncclProfiler_v4 is reached through the fallback with
translated descriptors. With the reference counting plugin
(bench/counting_plugin.c, a third argument when it is built) chained, its
counts equal ncclscope's records too.

usage: test_chain.py CHAIN_COUNTER_SO CHAIN_COUNTER_V4_SO [COUNTING_PLUGIN_SO]"""
import json
import os
import re
import sys

from nsctest import *

SRC = os.path.join(data_dir(), "h200x4_procs", "vm-2367.nsc")


def info_counts(path):
    cli = env_paths()[0]
    info = run([cli, "info", path]).stdout
    types = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", info.split("events by type")[1].split("\n")[0]))
    m = re.search(r"\(start (\d+), stop (\d+), state (\d+)\)", info)
    return types, int(m.group(2)), int(m.group(3)), info


def replay(chain=None, events="all", counter_mask=None, version=None):
    cli, plugin, _ = env_paths()
    d = tmpdir()
    out = os.path.join(d, "counts.json")
    env = {"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": events, "CHAIN_COUNTER_OUT": out}
    if chain:
        env["NCCLSCOPE_CHAIN"] = chain
    if counter_mask is not None:
        env["CHAIN_COUNTER_MASK"] = str(counter_mask)
    cmd = [cli, "replay", "--plugin", plugin] + (["--version", str(version)] if version else []) + [SRC]
    run(cmd, env=env)
    files = trace_files(d)
    check(len(files) == 1, "one trace: %s" % files)
    counts = json.load(open(out)) if chain else None
    return info_counts(files[0]), counts


def clean(c, what):
    for k in ("bad_handle", "double_stop", "bad_parent", "full"):
        check(c[k] == 0, "%s: the chained plugin counted %d %s" % (what, c[k], k))
    check(c["inits"] == c["finalizes"] == 1, "%s: inits/finalizes %s" % (what, c))
    check(c["with_parent"] > 0, "%s: no parent reached the chained plugin" % what)


def main():
    counter, counter_v4 = sys.argv[1], sys.argv[2]
    src_types, src_stops, src_states, _ = info_counts(SRC)

    # Same events: the chained plugin counts exactly what ncclscope recorded.
    for version in (None, 6, 5):
        (types, stops, states, info), c = replay(counter, "all", 0xffff, version)
        what = "API v%s" % (version or 7)
        clean(c, what)
        check(c["version"] == (version or 7 if version != 6 else 5),
              "%s: chained plugin loaded at v%d" % (what, c["version"]))
        check(c["start"] == types, "%s: chained starts %s != recorded %s" % (what, c["start"], types))
        check(sum(c["stop"].values()) == stops and sum(c["state"].values()) == states,
              "%s: chained stops/states %d/%d != recorded %d/%d" %
              (what, sum(c["stop"].values()), sum(c["state"].values()), stops, states))
        check(types == src_types, "%s: recorded %s, source %s" % (what, types, src_types))
        check("chained plugin" not in info, info)

    # The chained plugin asks for everything, ncclscope records the default
    # mask: NCCL is asked for both; ncclscope's trace is the unchained one.
    (alone, alone_stops, alone_states, _), _ = replay(None, "default")
    (types, stops, states, _), c = replay(counter, "default", 0xffff)
    clean(c, "default+all")
    check(types == alone and stops == alone_stops and states == alone_states,
          "ncclscope's trace changed with a chained plugin: %s vs %s" % (types, alone))
    check(c["start"] == src_types and sum(c["stop"].values()) == src_stops,
          "the chained plugin missed events ncclscope does not record: %s vs %s" % (c["start"], src_types))
    check(set(alone) < set(src_types), "the default mask should record less than the source has")

    # A chained plugin whose init fails: said in the log, naming it and its
    # result, once per comm; ncclscope records as without it.
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = {"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "default", "NCCLSCOPE_CHAIN": counter,
           "CHAIN_COUNTER_FAIL": "3"}
    p = run([cli, "replay", "--plugin", plugin, SRC], env=env)
    lines = [l for l in p.stderr.splitlines() if "failed to init comm" in l]
    check(len(lines) == 1 and counter in lines[0] and '("chain-counter")' in lines[0] and
          "result 3" in lines[0], "a failed chained init is logged: %s" % p.stderr[-2000:])
    types, stops, states, _ = info_counts(trace_files(d)[0])
    check(types == alone and stops == alone_stops, "recorded as without it: %s vs %s" % (types, alone))

    # Only ncclProfiler_v4: found by the fallback, descriptors translated.
    (types, stops, states, _), c = replay(counter_v4, "all", 0xffff)
    clean(c, "v4")
    check(c["version"] == 4, "v4 plugin loaded as v%d" % c["version"])
    v4_types = {k: v for k, v in types.items() if k in
                ("Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin")}
    check(c["start"] == v4_types, "v4: chained %s, recorded %s" % (c["start"], v4_types))
    if len(sys.argv) > 3:  # the reference counting plugin (branch bench)
        cli, plugin, _ = env_paths()
        d = tmpdir()
        env = {"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_CHAIN": sys.argv[3],
               "NCCLSCOPE_COUNT_DIR": os.path.join(d, "counts")}
        run([cli, "replay", "--plugin", plugin, SRC], env=env)
        types, stops, states, _ = info_counts(trace_files(d)[0])
        counts = [json.load(open(os.path.join(d, "counts", f))) for f in os.listdir(os.path.join(d, "counts"))]
        check(len(counts) == 1, "one counts file")
        c = counts[0]
        check(c["start"] == types and c["totals"]["stop"] == stops and c["totals"]["state"] == states,
              "reference counting plugin: %s, stops %d, states %d; recorded %s, %d, %d" %
              (c["start"], c["totals"]["stop"], c["totals"]["state"], types, stops, states))
        check(c["foreign_handles"] == 0, "the counting plugin got handles it never returned")
        print("ok: the reference counting plugin chained behind ncclscope counts what it recorded")
    print("ok: chained plugin counts what ncclscope records; masks or'ed; v4 fallback")


main()
