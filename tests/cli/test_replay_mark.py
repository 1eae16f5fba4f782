# SPDX-License-Identifier: Apache-2.0
"""A replayed trace says it is one. `ncclscope replay` re-times the host
calls and keeps the recorded GPU timers, so host and GPU times of its trace
do not relate: the replay host marks the SESSION block of what the plugin
wrote (trace_format.h, NSC_SESSION_REPLAY_MARK), and convert then skips its
GPU clock check with a one-line note instead of "N GPU starts mapped before
their enqueue"; info says it; stats keeps GPU time and drops queue time.
The recorded trace itself is not marked."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402


def main():
    cli, plugin, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs", "vm-2367.nsc")
    d = tmpdir()
    out = os.path.join(d, "out")
    before = open(src, "rb").read()
    r = run([cli, "replay", "--plugin", plugin, src], env={"NCCLSCOPE_DIR": out, "NCCLSCOPE_EVENTS": "all"})
    check("1 trace file(s) in %s marked as replayed" % out in r.stderr, r.stderr)
    check(open(src, "rb").read() == before, "the input is unchanged")
    files = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".nsc")]
    check(len(files) == 1, files)

    r = rep = run([cli, "convert", "-v", files[0], "-o", os.path.join(d, "t.json")])
    check("replayed by ncclscope replay" in r.stderr and "before their enqueue" not in r.stderr
          and "notice delay" not in r.stderr, r.stderr)
    meta = json.load(open(os.path.join(d, "t.json")))["metadata"]["ncclscope"]
    check(meta["files"][0].get("replayed") is True, meta["files"][0])
    r = run([cli, "convert", "-v", src, "-o", os.path.join(d, "o.json")])
    check("replayed" not in r.stderr and "notice delay" in r.stderr, r.stderr)
    check("replayed" not in json.load(open(os.path.join(d, "o.json")))["metadata"]["ncclscope"]["files"][0], "original")

    check("replayed        by ncclscope replay" in run([cli, "info", files[0]]).stdout, "info")
    check("replayed" not in run([cli, "info", src]).stdout, "info of the recording")
    st = json.loads(run([cli, "stats", files[0], "--json"]).stdout)
    orig = json.loads(run([cli, "stats", src, "--json"]).stdout)
    check(all(x["gpu_p50_us"] is not None and x["queue_p50_us"] is None for x in st["rows"]), st["rows"])
    check(sorted(x["gpu_p50_us"] for x in st["rows"]) == sorted(x["gpu_p50_us"] for x in orig["rows"]),
          "GPU time is the recording's")
    print("ok: replayed trace marked; convert notes it in one line (%r), info says it, stats keeps GPU "
          "time only" % rep.stderr.splitlines()[0])


if __name__ == "__main__":
    main()
