# SPDX-License-Identifier: Apache-2.0
"""What the outputs say when KernelCh was sampled (NCCLSCOPE_KERNEL_SAMPLE):
real NCCL recordings replayed into the plugin at default settings (the mask
word re-read at each enqueue, as NCCL does). Every rank's operations of each
communicator have GPU time for at least one in 32, only where KernelCh was
asked for (the ops table's `sampled`), and info, stats (text, --json,
--by-caller), report, hang and convert name the sample, so that figures
from it never read as if every operation were timed.

usage: test_sampled_outputs.py"""
import collections
import csv
import glob
import json
import os
import subprocess

from nsctest import check, convert, env_paths, run, tmpdir, trace_files

HERE = os.path.dirname(os.path.abspath(__file__))
REC = os.path.join(HERE, "..", "data", "recordings")


def replay(recordings):
    """The recordings (one process each) replayed at default settings into one directory."""
    cli, plugin, _ = env_paths()
    d = tmpdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("NCCLSCOPE_")}
    base["NCCLSCOPE_DIR"] = os.path.join(d, "t")
    for rec in recordings:
        p = subprocess.run([cli, "replay", "--plugin", plugin, rec], env=base, capture_output=True, text=True)
        check(p.returncode == 0, "replay %s: %s" % (rec, p.stderr[-2000:]))
    return d


def ops_table(cli, d):
    run([cli, "export", os.path.join(d, "t"), "-o", os.path.join(d, "ex")])
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "ex", "ops", "*", "*.csv"))):
        rows += list(csv.DictReader(open(f)))
    return rows


def check_job(name, recordings):
    cli, _, _ = env_paths()
    d = replay(recordings)
    files = trace_files(os.path.join(d, "t"))
    check(len(files) == len(recordings), "%s: %s" % (name, files))
    rows = ops_table(cli, d)
    per = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        gpu = int(r["gpu_ns"]) > 0
        check(not gpu or r["sampled"] == "1", "%s: GPU time on an operation not sampled: %s" % (name, r))
        check(r["kernel_ch_recorded"] == "1", "%s: the default settings record KernelCh: %s" % (name, r))
        per[(r["host"], r["pid"], r["comm"])][0] += 1
        per[(r["host"], r["pid"], r["comm"])][1] += gpu
    for k, (n, g) in sorted(per.items()):
        check(g * 32 >= n, "%s: %s: %d of %d operations with GPU time, want >= 1 in 32" % (name, k, g, n))
    sampled = sum(int(r["sampled"]) for r in rows)
    check(0 < sampled < len(rows), "%s: a sample: %d of %d" % (name, sampled, len(rows)))
    # info, per file: how many operations asked for KernelCh
    k = 0
    for f in files:
        out = run([cli, "info", f]).stdout
        line = [x for x in out.splitlines() if x.startswith("KernelCh sampled: ")]
        check(len(line) == 1 and "NCCLSCOPE_KERNEL_SAMPLE" in line[0], "%s: info: %s" % (name, out))
        k += int(line[0].split()[2])
    check(k == sampled, "%s: info says %d sampled, the ops table %d" % (name, k, sampled))
    # stats: the text names the setting, --json the counts and each row's
    text = run([cli, "stats", os.path.join(d, "t")]).stdout
    check("KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): %d of %d rank-operations" % (sampled, len(rows)) in text
          and "gpu~" in text, "%s: stats text: %s" % (name, text))
    js = json.loads(run([cli, "stats", "--json", os.path.join(d, "t")]).stdout)
    ks = js.get("kernel_sampled", {})
    check(ks.get("sampled") == sampled and ks.get("operations") == len(rows) and
          "NCCLSCOPE_KERNEL_SAMPLE" in ks.get("note", ""), "%s: stats --json: %s" % (name, ks))
    for r in js["rows"]:
        check("sampled" in r and r["gpu_ops"] <= r["sampled"] <= r["rank_ops"], "%s: row %s" % (name, r))
        check(r["gpu_ops"] == 0 or r["timing"] == "gpu (sampled)" or r["sampled"] == r["rank_ops"],
              "%s: a sampled row's timing: %s" % (name, r))
    check(sum(r["sampled"] for r in js["rows"]) == sampled, "%s: rows' sampled" % name)
    bc = run([cli, "stats", "--by-caller", os.path.join(d, "t")]).stdout
    check("KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE)" in bc, "%s: --by-caller: %s" % (name, bc))
    # report: above its tables
    html = os.path.join(d, "r.html")
    run([cli, "report", os.path.join(d, "t"), "-o", html])
    page = open(html).read()
    check("id='kernel-sample'" in page and "%d of %d" % (sampled, len(rows)) in page, "%s: report" % name)
    # hang: a complete run, nothing stuck; the sample said
    h = run([cli, "hang", os.path.join(d, "t")], ok=(0,)).stdout
    check("KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): %d of %d operations" % (sampled, len(rows)) in h,
          "%s: hang: %s" % (name, h))
    hj = json.loads(run([cli, "hang", "--json", os.path.join(d, "t")]).stdout)
    check(hj["hangs"] == [] and hj["kernel_sampled"]["sampled"] == sampled, "%s: hang --json: %s" % (name, hj))
    # convert: an operation slice not sampled says so
    doc, _ = convert(files, os.path.join(d, "t.json"))
    said = [e for e in doc["traceEvents"] if e.get("ph") == "X" and
            "not sampled" in str(e.get("args", {}).get("completion", ""))]
    check(said, "%s: convert: no operation says it was not sampled" % name)
    print("ok %s: %d of %d operations sampled, >= 1 in 32 of every rank's comm timed; info, stats, report, "
          "hang and convert say so" % (name, sampled, len(rows)))


def main():
    check_job("allreduce_64B", [os.path.join(REC, "allreduce_64B", "events-vm-1611.tsv")])
    check_job("torch_multiproc", sorted(glob.glob(os.path.join(REC, "torch_multiproc", "*.tsv"))))


if __name__ == "__main__":
    main()
