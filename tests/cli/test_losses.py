# SPDX-License-Identifier: Apache-2.0
"""Everything the plugin could not keep is shown: a version-3 STATS block's
write losses (with the errno's name), records abandoned at exit, lost comm
descriptions, the string table's overflow and record memory reach `info`,
convert's metadata and stderr, `stats` (text and --json) and the report;
events whose names were lost ("?") are counted; ring drops and other losses
are reported apart and as a total. And a STOP pairs with a START of its own
type only (a STOP with the id of another type is an orphan of its type)."""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(__file__))
import nsctrace as T  # noqa: E402
from nsctest import SKIP, check, convert, data_dir, env_paths, events, run, tmpdir  # noqa: E402


def main():
    cli, _, _ = env_paths()
    if T.zstd() is None:
        print("SKIP: libzstd cannot be loaded from python: crafted traces cannot be made")
        sys.exit(SKIP)
    d = tmpdir()
    src = os.path.join(data_dir(), "h200x4_procs", "vm-2367.nsc")
    data = open(src, "rb").read()

    # ---- version 3 counters ----
    v3 = os.path.join(d, "v3.nsc")
    counters = dict(lost_write=1234, lost_exit=56, write_errno=28, write_errors=7,
                    string_overflow=3, comm_overflow=2, memory_peak=5 << 20,
                    memory_budget=64 << 20)
    open(v3, "wb").write(T.as_v3(data, **counters))
    info = run([cli, "info", v3]).stdout
    for want in ("lost            1290 records in all: 0 dropped, 1234 to write errors, 56 still in "
                 "memory at exit",
                 "write errors    7 failed writes, the last: ENOSPC (errno 28, No space left on device)",
                 "strings         3 past the plugin's table",
                 "comms lost      2 descriptions not kept",
                 "record memory   peak 5.0 MiB of a 64.0 MiB budget",
                 "dropped         0 records"):
        check(want in info, "info lacks %r:\n%s" % (want, info))
    print("ok: info shows the version-3 counters")

    doc, r = convert([v3], os.path.join(d, "v3.json"))
    meta = doc["metadata"]["ncclscope"]
    f = meta["files"][0]
    for k, v in (("lost_records", 1290), ("lost_write_records", 1234), ("lost_exit_records", 56),
                 ("write_errors", 7), ("write_errno", 28), ("write_error", "ENOSPC"),
                 ("string_overflow", 3), ("comm_overflow", 2), ("memory_peak_bytes", 5 << 20),
                 ("memory_budget_bytes", 64 << 20), ("dropped_records", 0)):
        check(f.get(k) == v, "metadata %s = %r, expected %r" % (k, f.get(k), v))
    check(meta["lost_records"] == 1290 and meta["lost_write_records"] == 1234 and
          meta["lost_exit_records"] == 56 and meta["dropped_records"] == 0, meta)
    for want in ("1234 records lost to write errors (7 failed writes, the last: ENOSPC",
                 "56 records were still in memory", "3 strings past the plugin's table",
                 "2 comm descriptions were not kept",
                 "1290 records lost by the plugin in all (1234 to write errors, 56 at exit)"):
        check(want in r.stderr, "convert's stderr lacks %r:\n%s" % (want, r.stderr))
    lost = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "ncclscope lost records"]
    check(lost and lost[0]["args"]["lost"] == 1290, "lost-records counter: %s" % lost)
    print("ok: convert's metadata, counter track and warnings")

    txt = run([cli, "stats", v3]).stdout
    check("lost by the plugin: 1290 records (0 dropped, 1234 to write errors, 56 at exit); 7 failed "
          "writes, the last: ENOSPC" in txt and "3 strings past the plugin's table" in txt and
          "2 comm descriptions not kept" in txt and
          "record memory: peak 5.0 MiB of a 64.0 MiB budget" in txt, txt[:600])
    st = json.loads(run([cli, "stats", v3, "--json"]).stdout)["lost"]
    for k, v in (("records", 1290), ("dropped", 0), ("write_records", 1234), ("exit_records", 56),
                 ("failed_writes", 7), ("write_error", "ENOSPC"), ("string_overflow", 3),
                 ("comm_overflow", 2), ("memory_peak_bytes", 5 << 20),
                 ("memory_budget_bytes", 64 << 20)):
        check(st.get(k) == v, "stats --json lost.%s = %r, expected %r" % (k, st.get(k), v))
    html = os.path.join(d, "r.html")
    run([cli, "report", v3, "-o", html])
    check("1290 (0 dropped, 1234 to write errors, 56 at exit)" in open(html).read(), "report")
    print("ok: stats (text, --json) and report")

    # writing resumed: failed writes without a current errno; and a v2 file
    # says what its version cannot tell
    res = os.path.join(d, "resumed.nsc")
    open(res, "wb").write(T.as_v3(data, lost_write=10, write_errors=2))
    check("2 failed writes; writing resumed after them" in run([cli, "info", res]).stdout, "resumed")
    check("this format version records drops only" in run([cli, "info", src]).stdout, "v2 note")

    # ---- ring drops and the rest, apart and together ----
    def with_drops(b, p):
        if b.type != T.STATS:
            return None
        hs = struct.unpack_from("<I", p, 4)[0]
        rows = T.thread_stats(p, hs)
        rows = [(a, tid, rec, 100 + i, 10) for i, (a, tid, rec, _, _) in enumerate(rows)]
        return T.stats_v3(rows, drops_no_thread=5, lost_write=20, lost_exit=3, write_errno=5,
                          write_errors=1)
    both = os.path.join(d, "both.nsc")
    open(both, "wb").write(T.rebuild(T.as_v3(data), with_drops))
    info = run([cli, "info", both]).stdout
    check("dropped         206 records (5 from threads over the limit)" in info and
          "lost            229 records in all: 206 dropped, 20 to write errors, 3 still" in info and
          "EIO" in info, info)
    doc, r = convert([both], os.path.join(d, "both.json"))
    f = doc["metadata"]["ncclscope"]["files"][0]
    check(f["dropped_records"] == 206 and f["lost_records"] == 229 and f["write_error"] == "EIO", f)
    check("206 records dropped by the plugin, 229 records lost by the plugin in all" in r.stderr,
          r.stderr)
    print("ok: ring drops and write/exit losses apart and as a total")

    # ---- events whose names were lost ----
    # Drop the strings the datatypes use from the STRINGS block: every event
    # naming one shows "?", and each is counted once.
    gone = set()

    def strip_dtypes(b, p):
        if b.type != T.STRINGS:
            return None
        out, i = b"", 0
        while i < len(p):
            sid, ln = struct.unpack_from("<IH", p, i)
            s = p[i + 6:i + 6 + ln]
            if s.startswith(b"nccl"):
                gone.add(s.decode())
            else:
                out += p[i:i + 6 + ln]
            i += 6 + ln
        return out
    noname = os.path.join(d, "noname.nsc")
    open(noname, "wb").write(T.rebuild(data, strip_dtypes))
    check(gone, "the trace names datatypes")
    doc, r = convert([noname], os.path.join(d, "noname.json"))
    shown = [e for e in events(doc)
             if any(v == "?" for k, v in e["args"].items() if k in ("func", "datatype", "algo", "proto"))]
    meta = doc["metadata"]["ncclscope"]
    check(shown and meta["unnamed_events"] == len(shown) == meta["files"][0]["unnamed_events"],
          "unnamed %d, events showing ? %d" % (meta["unnamed_events"], len(shown)))
    check("%d events show \"?\"" % len(shown) in r.stderr, r.stderr)
    check("%d events name one and show \"?\"" % len(shown) in run([cli, "info", noname]).stdout, "info")
    check(json.loads(run([cli, "stats", noname, "--json"]).stdout)["lost"]["unnamed_events"] ==
          len(shown), "stats")
    print("ok: %d events whose strings were lost (%s) counted" % (len(shown), ", ".join(sorted(gone))))

    # ---- a STOP pairs with a START of its type ----
    v1 = os.path.join(data_dir(), "h200x2_mixed_64KiB.nsc")
    base, _ = convert([v1], os.path.join(d, "base.json"))
    bm = base["metadata"]["ncclscope"]
    changed = []

    def retype_stop(b, p):
        if b.type != T.CHUNK or changed:
            return None
        p = bytearray(p)
        i, starts = 0, {}
        while i + 8 <= len(p) and not changed:
            _, n = struct.unpack_from("<II", p, i)
            i += 8
            for k in range(n):
                o = i + 64 * k
                kind, et = p[o], p[o + 1]
                rid = struct.unpack_from("<Q", p, o + 16)[0]
                if kind == 1 and et == 11:   # a KernelLaunch START
                    starts[rid] = o
                elif kind == 3 and rid in starts and not changed:
                    p[o + 1] = 0             # its STOP now says Group
                    changed.append(rid)
            i += 64 * n
        return bytes(p)
    mixed = os.path.join(d, "retyped.nsc")
    open(mixed, "wb").write(T.rebuild(open(v1, "rb").read(), retype_stop))
    check(changed, "a KernelLaunch STOP to retype")
    doc, _ = convert([mixed], os.path.join(d, "retyped.json"))
    m = doc["metadata"]["ncclscope"]
    check(m["orphan_records_by_type"].get("Group", 0) == bm["orphan_records_by_type"].get("Group", 0) + 1
          and m["orphan_records"] == bm["orphan_records"] + 1, "orphans: %s" % m)
    check(m["unfinished_events"] == bm["unfinished_events"] + 1, "the START stays unfinished: %s" % m)
    ev = [e for e in events(doc) if e["cat"] == "KernelLaunch" and e["args"].get("unfinished")]
    check(len(ev) == 1, "one unfinished KernelLaunch: %d" % len(ev))
    print("ok: a STOP of another type is an orphan of its type, not the event's end")


if __name__ == "__main__":
    main()
