# SPDX-License-Identifier: Apache-2.0
"""A stalled flusher: rings fill, records are dropped and counted, memory stays
bounded, and the drop counts reach `ncclscope info` and the JSON."""
import os
import re

from nsctest import *


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    # 4 KiB rings (64 records) and a flusher that drains once an hour: only
    # finalize empties the rings.
    p = run([fake, "--plugin", plugin, "--synthetic", "200000", "--threads", "2"],
            env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_RING_KB": "4",
                 "NCCLSCOPE_DRAIN_US": "3600000000", "NCCLSCOPE_FLUSH_MS": "3600000"})
    rss_kb = int(re.search(r"maxrss_kb (\d+)", p.stdout).group(1))
    check(rss_kb < 64 * 1024, "RSS grew to %d KiB" % rss_kb)
    f = trace_files(d)[0]
    info = run([cli, "info", f]).stdout
    m = re.search(r"dropped\s+(\d+) records", info)
    check(m and int(m.group(1)) > 1000000, info)
    doc, conv = convert([f], os.path.join(d, "t.json"))
    meta = doc["metadata"]["ncclscope"]["files"][0]
    check(meta["dropped_records"] == int(m.group(1)), "JSON drops %s, info %s" % (meta["dropped_records"], m.group(1)))
    check(any(t["drops_events"] > 0 for t in meta["threads"]), meta)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "ncclscope dropped records"]
    check(counters and counters[0]["args"]["dropped"] == meta["dropped_records"], counters)
    # an event whose STOP was dropped shows as unfinished; there can be no
    # more of those than dropped records
    unfinished = doc["metadata"]["ncclscope"]["unfinished_events"]
    check(unfinished <= meta["dropped_records"], "unfinished %d > drops" % unfinished)
    print("ok: %s dropped, %d events kept, max RSS %d KiB" % (m.group(1), len(events(doc)), rss_kb))


main()
