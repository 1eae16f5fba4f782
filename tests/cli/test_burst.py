# SPDX-License-Identifier: Apache-2.0
"""A burst on one thread fits at default settings: 360,000 records from one
thread as fast as it can call (alltoall's KernelCh bursts are ~200,000), no
record dropped, and the process's memory stays under the default budget."""
import os
import re

from nsctest import *


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    ops = 20000  # 18 records per operation with every event type
    p = run([fake, "--plugin", plugin, "--synthetic", str(ops)],
            env={"NCCLSCOPE_DIR": d, "NCCLSCOPE_EVENTS": "all"})
    rss_kb = int(re.search(r"maxrss_kb (\d+)", p.stdout).group(1))
    info = run([cli, "info", *trace_files(d)]).stdout
    m = re.search(r"^records\s+(\d+)", info, re.M)
    check(m and int(m.group(1)) >= 200000, "a burst of at least 200,000 records: %s" % info)
    dm = re.search(r"dropped\s+(\d+) records", info)
    check(dm and int(dm.group(1)) == 0, "no record dropped at defaults: %s" % info)
    check("closed cleanly  yes" in info, info)
    # NCCLSCOPE_MEMORY_MB defaults to 64; the process also holds its code and zstd
    check(rss_kb < 64 * 1024 + 32 * 1024, "RSS %d KiB within the default budget" % rss_kb)
    # umask 000 (a permissive job launcher): the trace is still not world-writable
    d2 = os.path.join(tmpdir(), "perm")
    old = os.umask(0)
    try:
        run([fake, "--plugin", plugin, "--synthetic", "10"], env={"NCCLSCOPE_DIR": d2})
    finally:
        os.umask(old)
    f = trace_files(d2)[0]
    check(os.stat(d2).st_mode & 0o777 == 0o750 and os.stat(f).st_mode & 0o777 == 0o640,
          "directory %o, file %o under umask 000" % (os.stat(d2).st_mode & 0o777, os.stat(f).st_mode & 0o777))
    print("ok: %s records from one thread in one burst, 0 dropped, max RSS %d KiB" % (m.group(1), rss_kb))


main()
