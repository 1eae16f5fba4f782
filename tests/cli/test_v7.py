# SPDX-License-Identifier: Apache-2.0
"""Profiler API v7 (NCCL 2.31) end to end, without a GPU.

The fake host's --nccl231 mode follows NCCL 2.31: per device an application
thread, a proxy thread and the profiler thread that delivers KernelCh and
its KernelPhase sub-events; calls carry user tags, symmetric kernels their
variant. Through the plugin and the converter, every value must arrive:
tags on CollApi, P2pApi, Coll, P2p and CeColl, kernelVariant and isSymColl
on Coll, KernelPhase (phaseName, phaseId, channel, GPU start and stop) on
the profiler threads and nested in its KernelCh on the GPU channel tracks,
in the JSON and in the protobuf output. The same stream seen by a v6 plugin
(forced directly, or a v7 trace replayed into the plugin forced to v6) has
everything but the v7 parts. Default mask: no GPU-timer events."""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import GPU_TRACKS, check, env_paths, events, run, thread_names, tmpdir, trace_files  # noqa: E402
import pftrace_read  # noqa: E402

OPS, DEVICES, NCH = 40, 2, 2
FAKE_TAG, FAKE_CE_TAG, FAKE_GPU0 = 0x5A00000000, 0x0123456789AB0000, 5000000000
PHASES = ["initial_sync", "compute", "final_sync"]
PHASE_AT = [0, 100, 400, 500]
V7_ARGS = ("userTag", "kernelVariant", "isSymColl")


def tag(i):
    return 0 if i % 4 == 3 else FAKE_TAG + i


def fake(args, events_mask="all", extra_env=None):
    cli, plugin, fake_exe = env_paths()
    out = tmpdir()
    env = {"NCCLSCOPE_DIR": out}
    env.update(extra_env or {})
    if events_mask is not None:
        env["NCCLSCOPE_EVENTS"] = events_mask
    run([fake_exe, "--plugin", plugin] + args, env=env)
    files = trace_files(out)
    # A replay may close the session between two communicators (the last
    # finalize before the next init in the replayed order): one file per
    # session, converted together.
    check(len(files) >= 1 and (len(files) == 1 or "--replay" in args), "trace files: %s" % files)
    js = os.path.join(out, "t.json")
    run([cli, "convert", "--detail", *files, "-o", js])
    doc = json.load(open(js))
    meta = doc["metadata"]["ncclscope"]
    f = meta["files"][0]
    check(all(x["dropped_records"] == 0 for x in meta["files"]) and meta["unfinished_events"] == 0 and
          meta["orphan_records"] == 0, "complete trace: %s" % meta)
    return doc, files[0], f["api_version"]


def by_cat(evs):
    out = collections.defaultdict(list)
    for e in evs:
        out[e["cat"]].append(e)
    for lst in out.values():
        lst.sort(key=lambda e: (e["args"].get("rank", 0), e["ts"], e["args"]["id"]))
    return out


def check_threads(doc, evs, v7=True):
    """NCCL 2.31's pattern: KernelCh and KernelPhase on one profiler thread
    per device and nothing else there; proxy events on the proxy thread; the
    rest on the application thread. (The converter can name that thread the
    profiler thread only from a v7 trace: through v6 NCCL 2.30 polled the GPU
    on the proxy thread.)"""
    names = thread_names(doc)
    prof = set()
    for e in evs:
        tn = names.get((e["pid"], e["tid"]), "")
        r = e["args"]["rank"]
        if e["cat"] in ("KernelCh", "KernelPhase"):
            check(tn.startswith("profiler thread" if v7 else "proxy thread") and tn.endswith("(fake-prof%d)" % r),
                  "%s of rank %d on %r" % (e["cat"], r, tn))
            prof.add((e["pid"], e["tid"]))
        elif e["cat"] in ("ProxyOp", "ProxyStep"):
            check(tn.endswith("(fake-proxy%d)" % r), "%s of rank %d on %r" % (e["cat"], r, tn))
        else:
            check(tn.endswith("(fake-app%d)" % r), "%s of rank %d on %r" % (e["cat"], r, tn))
    check(len(prof) == DEVICES, "one profiler thread per device: %s" % prof)


def check_v7_values(doc):
    evs = events(doc)
    cats = by_cat(evs)
    check_threads(doc, evs)
    for cat, n in (("Coll", OPS), ("CollApi", OPS), ("P2pApi", OPS), ("P2p", OPS), ("KernelCh", OPS * NCH),
                   ("KernelPhase", OPS * NCH * 3), ("CeColl", (OPS + 7) // 8), ("ProxyOp", OPS)):
        check(len(cats[cat]) == n * DEVICES, "%s: %d events, expected %d" % (cat, len(cats[cat]), n * DEVICES))
    for r in range(DEVICES):
        colls = sorted((e for e in cats["Coll"] if e["args"]["rank"] == r), key=lambda e: e["args"]["seqNumber"])
        for i, e in enumerate(colls):
            a = e["args"]
            check(a["seqNumber"] == i and a.get("userTag", 0) == tag(i), "Coll %d tag: %s" % (i, a))
            check(a.get("isSymColl", 0) == i % 2, "Coll %d isSymColl (shown when set): %s" % (i, a))
            if i % 2:
                check(a.get("kernelVariant") == "AGxLL_R" and a["algo"] == "LL_R" and a["proto"] == "",
                      "symmetric Coll %d: %s" % (i, a))
            else:
                check("kernelVariant" not in a and a["algo"] == "RING" and a["proto"] == "LL", "Coll %d: %s" % (i, a))
        for cat in ("CollApi", "P2pApi", "P2p"):
            lst = [e for e in cats[cat] if e["args"]["rank"] == r]
            got = [e["args"].get("userTag", 0) for e in lst]
            check(got == [tag(i) for i in range(OPS)], "%s tags of rank %d: %s" % (cat, r, got[:6]))
        ce = [e["args"] for e in cats["CeColl"] if e["args"]["rank"] == r]
        check(all(a["userTag"] == FAKE_CE_TAG + a["seqNumber"] for a in ce), "CeColl tags (both halves): %s" % ce[:2])
    # KernelPhase on the CPU: values, parent KernelCh, stop state
    kch = {e["args"]["id"]: e["args"] for e in cats["KernelCh"]}
    for e in cats["KernelPhase"]:
        a = e["args"]
        k = kch.get(a.get("parent"))
        check(k is not None and k["channelId"] == a["channel"], "KernelPhase under its KernelCh: %s" % a)
        p = a["phaseId"]
        g = k["pTimer"]
        check(a["phaseName"] == PHASES[p] and e["name"] == PHASES[p] and a["pTimer"] == g + PHASE_AT[p],
              "KernelPhase values: %s" % a)
        check([(s["state"], s["pTimer"]) for s in a["states"]] == [("KernelPhaseStop", g + PHASE_AT[p + 1])],
              "KernelPhaseStop: %s" % a["states"])
    # KernelPhase on the GPU channel tracks, inside its KernelCh's slice
    gk = {e["args"]["id"]: e for e in doc["traceEvents"]
          if e.get("cat") == "KernelCh" and e["ph"] == "X" and e["tid"] >= GPU_TRACKS}
    gp = [e for e in doc["traceEvents"] if e.get("cat") == "KernelPhase" and e["tid"] >= GPU_TRACKS]
    check(len(gp) == len(cats["KernelPhase"]) and all(e["ph"] == "X" for e in gp),
          "every KernelPhase drawn on the GPU: %d of %d" % (len(gp), len(cats["KernelPhase"])))
    for e in gp:
        a = e["args"]
        k = gk.get(a["parent"])
        check(k is not None and k["pid"] == e["pid"] and k["tid"] == e["tid"], "phase on its KernelCh's track: %s" % a)
        ks, ke = round(k["ts"] * 1000), round((k["ts"] + k["dur"]) * 1000)
        s, d = round(e["ts"] * 1000), round(e["dur"] * 1000)
        p = a["phaseId"]
        check(ks <= s and s + d <= ke and d == PHASE_AT[p + 1] - PHASE_AT[p] and "clamped" not in a,
              "phase %s at [%d, %d] inside KernelCh [%d, %d]" % (a, s, s + d, ks, ke))
        check(e["name"] == PHASES[p] and a["channel"] == e["tid"] - GPU_TRACKS - 0x1000 and
              a["pTimer_start"] - k["args"]["pTimer_start"] == PHASE_AT[p], "GPU phase values: %s" % a)
    return cats


def signature(doc, drop_v7=False):
    """What NCCL said, independent of ids and times."""
    sig = collections.Counter()
    for e in events(doc):
        if drop_v7 and e["cat"] == "KernelPhase":
            continue
        a = e["args"]
        keep = tuple(sorted((k, json.dumps(v)) for k, v in a.items()
                            if k not in ("id", "parent", "parentGroup", "pid", "states") and
                            not (drop_v7 and k in V7_ARGS)))
        states = tuple((s["state"], s.get("pTimer", s.get("value", 0))) for s in a.get("states", []))
        sig[(e["cat"], e["name"], keep, states)] += 1
    return sig


def check_no_v7(doc):
    for e in doc["traceEvents"]:
        check(e.get("cat") != "KernelPhase", "no KernelPhase below v7: %s" % e)
        a = e.get("args", {})
        check(not any(k in a for k in V7_ARGS), "no v7 fields below v7: %s" % a)
        check(all(s["state"] != "KernelPhaseStop" for s in a.get("states", [])), "no KernelPhaseStop below v7")


def check_pftrace(trace, doc):
    cli, _, _ = env_paths()
    pf = os.path.join(os.path.dirname(trace), "t.pftrace")
    run([cli, "convert", "--detail", trace, "-o", pf])
    tracks, pevs = pftrace_read.read(pf)
    # the v7 values as typed arguments, as in the JSON
    def v7(evs):
        return collections.Counter((e["cat"], e["name"]) + tuple(e["args"].get(k) for k in
                                   V7_ARGS + ("phaseName", "phaseId", "channel", "pTimer"))
                                   for e in evs if e.get("cat") in ("Coll", "CollApi", "P2pApi", "P2p", "CeColl",
                                                                    "KernelPhase"))
    jv = v7([e for e in doc["traceEvents"] if e["ph"] in ("X", "b")])
    pv = v7([e for e in pevs if e.get("type") == 1])
    check(jv == pv, "v7 arguments in the protobuf: %s" % list((jv - pv).items())[:3])
    # Perfetto orders a track's events by time, keeping the written order for
    # equal times; replayed that way, every GPU slice must pair with its own
    # end and every KernelPhase must open inside a KernelCh.
    gpu = {u for u, t in tracks.items() if t["kind"] == "thread" and t["tid"] >= GPU_TRACKS + 0x1000}
    stacks, got = collections.defaultdict(list), collections.Counter()
    for e in sorted((e for e in pevs if e.get("track") in gpu and e.get("type") in (1, 2)), key=lambda e: e["ts"]):
        st = stacks[e["track"]]
        if e["type"] == 1:
            if e["cat"] == "KernelPhase":
                check(st and st[-1]["cat"] == "KernelCh", "KernelPhase opens inside a KernelCh")
            st.append(e)
        else:
            b = st.pop()
            got[(b["cat"], b["args"]["id"], e["ts"] - b["ts"])] += 1
    want = collections.Counter((e["cat"], e["args"]["id"], round(e["dur"] * 1000)) for e in doc["traceEvents"]
                               if e["ph"] == "X" and e.get("tid", 0) >= GPU_TRACKS + 0x1000)
    check(got == want and sum(got.values()) == OPS * NCH * 4 * DEVICES,
          "GPU slices nest as written: %s" % list((want - got).items())[:3])


def check_tsv():
    """Recordings of NCCL 2.31 carry the v7 fields as key=value too."""
    cli, plugin, fake_exe = env_paths()
    d = tmpdir()
    lines = [
        "1\t100\t1000\tI\t1\t4660\t1\t2\t1\tt7\t65535",
        "2\t100\t1100\tS\t1\t10\tCollApi\t0\t0\tfunc=AllGather\tcount=8\tdtype=ncclInt8\troot=0\tuserTag=77",
        "3\t100\t1200\tE\t10",
        "4\t100\t1300\tS\t1\t11\tColl\t10\t1\tseq=0\tfunc=AllGather\tcount=8\tdtype=ncclInt8\tnCh=1\t"
        "algo=LL_R\tproto=\tkernelVariant=AGxLL_R\tisSymColl=1\tuserTag=77",
        "5\t100\t1400\tE\t11",
        "6\t200\t1500\tS\t1\t12\tKernelCh\t11\t1\tch=1\tptimer=90000",
        "7\t200\t1600\tS\t1\t13\tKernelPhase\t12\t1\tch=1\tphaseId=1\tphaseName=compute\tptimer=90100",
        "8\t200\t1700\tR\t13\t31\tptimer=90400",
        "9\t200\t1800\tE\t13",
        "10\t200\t1900\tR\t12\t22\tptimer=90500",
        "11\t200\t2000\tE\t12",
        "12\t100\t2100\tF\t1",
    ]
    rec = os.path.join(d, "v7.tsv")
    open(rec, "w").write("\n".join(lines) + "\n")
    run([fake_exe, "--plugin", plugin, "--replay", rec], env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all"})
    js = os.path.join(d, "t.json")
    run([cli, "convert", "--detail", trace_files(d)[0], "-o", js])
    c = by_cat(events(json.load(open(js))))
    a = c["Coll"][0]["args"]
    check(a["userTag"] == 77 and a["kernelVariant"] == "AGxLL_R" and a["isSymColl"] == 1, "Coll from TSV: %s" % a)
    check(c["CollApi"][0]["args"]["userTag"] == 77, "CollApi from TSV")
    p = c["KernelPhase"][0]["args"]
    check((p["phaseName"], p["phaseId"], p["channel"], p["pTimer"]) == ("compute", 1, 1, 90100) and
          p["states"][0]["state"] == "KernelPhaseStop" and p["states"][0]["pTimer"] == 90400,
          "KernelPhase from TSV: %s" % p)


def main():
    ops = ["--nccl231", str(OPS), "--threads", str(DEVICES)]
    doc7, trace7, v = fake(ops)
    check(v == 7, "NCCL 2.31's host loads ncclProfiler_v7: %d" % v)
    cats = check_v7_values(doc7)
    print("ok v7: tags, variants, %d KernelPhase on %d profiler threads and nested on the GPU tracks"
          % (len(cats["KernelPhase"]), DEVICES))
    check_pftrace(trace7, doc7)
    print("ok v7 protobuf: same values, GPU slices nest when ordered by time")

    # a v6 plugin under NCCL 2.31: the adapters drop KernelPhase, its state and the v7 fields
    doc6, _, v = fake(["--version", "6"] + ops)
    check(v == 6, "forced v6: %d" % v)
    check_no_v7(doc6)
    check(signature(doc6) == signature(doc7, drop_v7=True), "v6 sees everything but the v7 parts")
    check_threads(doc6, events(doc6), v7=False)
    print("ok v6 under the 2.31 pattern: %d events, no v7 parts" % sum(signature(doc6).values()))

    # the v7 trace replayed: into v7 all of it comes back, into v6 the v7 parts drop cleanly
    _, plugin, fake_exe = env_paths()
    docr, _, v = fake(["--replay", trace7])
    check(v == 7 and signature(docr) == signature(doc7), "v7 trace replayed at v7: same events and values")
    check_v7_values(docr)
    docr6, _, v = fake(["--version", "6", "--replay", trace7])
    check(v == 6, "replay forced to v6")
    check_no_v7(docr6)
    check(signature(docr6) == signature(doc7, drop_v7=True), "v7 trace replayed at v6: all but the v7 parts")
    print("ok replay of the v7 trace at v7 and v6")

    # default mask: KernelPhase stays off and KernelCh comes for a sample of the
    # operations, which the fake takes from the word it re-reads at each enqueue
    # as NCCL does: by count alone (no period), 1 in 32 of 8 is the first one;
    # the lean mask has none; asking for KernelPhase brings KernelCh
    docd, _, _ = fake(["--nccl231", "8"], events_mask=None,
                      extra_env={"NCCLSCOPE_KERNEL_SAMPLE_MS": "0"})
    cd = by_cat(events(docd))
    check("KernelPhase" not in cd and len(cd["Coll"]) == 8, "default mask: %s" % list(cd))
    check(len(cd.get("KernelCh", [])) == 2, "default mask: KernelCh of the first operation's 2 channels "
          "only, got %d" % len(cd.get("KernelCh", [])))
    docs4, _, _ = fake(["--nccl231", "8"], events_mask=None,
                       extra_env={"NCCLSCOPE_KERNEL_SAMPLE_MS": "0", "NCCLSCOPE_KERNEL_SAMPLE": "4"})
    k4 = len(by_cat(events(docs4)).get("KernelCh", []))
    # 16 operations (a Coll and a P2p each round): the 1st, 5th, 9th and 13th
    # are sampled, all of them Colls: 4 x 2 KernelCh
    check(k4 == 8, "one in 4 of 16 operations sampled: 4 x 2 KernelCh, got %d" % k4)
    docl, _, _ = fake(["--nccl231", "8"], events_mask="lean")
    check("KernelCh" not in by_cat(events(docl)), "lean mask: no KernelCh")
    check([e["args"].get("userTag", 0) for e in cd["Coll"]] == [tag(i) for i in range(8)], "tags at default mask")
    docp, _, _ = fake(["--nccl231", "8"], events_mask="Coll,KernelPhase")
    cp = by_cat(events(docp))
    check(len(cp["KernelPhase"]) == 8 * NCH * 3 and len(cp["KernelCh"]) == 8 * NCH, "KernelPhase brings KernelCh: %s"
          % {k: len(x) for k, x in cp.items()})
    check(sum(1 for e in docp["traceEvents"] if e.get("cat") == "KernelPhase" and e["tid"] >= GPU_TRACKS) == 8 * NCH * 3,
          "KernelPhase drawn on the GPU with KernelCh asked implicitly")
    print("ok masks: KernelPhase off by default, brings KernelCh when asked")

    check_tsv()
    print("ok v7 recording lines")


if __name__ == "__main__":
    main()
