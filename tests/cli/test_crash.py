# SPDX-License-Identifier: Apache-2.0
"""kill -9 in the middle of a run: every flushed block converts, and a torn
tail gives a clear error (file, offset) and a non-zero exit. A flight-mode
crash dump (its blocks stored uncompressed, each with its payload's
checksum): a single bit flipped in any of its payloads is reported as damage
with the file and the block's offset, the block skipped and the rest read;
the intact dump reads clean."""
import os
import random
import re
import struct
import signal
import subprocess
import sys
import time

import nsctrace as T
from nsctest import *


def killed(cli, plugin, fake):
    d = tmpdir()
    # small chunks: the file holds many blocks when it is killed, so tearing
    # the last one leaves the others
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_EVENTS="all", NCCLSCOPE_FLUSH_MS="50",
               NCCLSCOPE_CHUNK_KB="64")
    p = subprocess.Popen([fake, "--plugin", plugin, "--synthetic", "-1", "--threads", "2"], env=env,
                         stdout=subprocess.DEVNULL)
    # until a few chunks are on disk; looked at often: the fake host writes
    # megabytes a second, and a file ten times the size proves no more but
    # takes seconds to convert and parse as JSON
    deadline = time.time() + 20
    while time.time() < deadline:
        time.sleep(0.005)
        fs = trace_files(d)
        if fs and os.path.getsize(fs[0]) > 200000:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    f = trace_files(d)[0]
    size = os.path.getsize(f)
    check(size > 200000, "trace too small after the kill: %d bytes" % size)
    # As killed: all complete blocks convert; no END block, so events still
    # open show as unfinished.
    doc, p1 = convert([f], os.path.join(d, "killed.json"), ok=(0, 2))
    n_killed = len(events(doc))
    check(n_killed > 1000, "only %d events recovered" % n_killed)
    check(doc["metadata"]["ncclscope"]["files"][0]["complete"] == 0, "a killed trace cannot be complete")
    info = run([cli, "info", f], ok=(0, 2)).stdout
    check("closed cleanly  no" in info, info)
    # Tear the last block, as a kill during write(2) would.
    with open(f, "r+b") as fh:
        fh.truncate(size - 37)
    doc2, p2 = convert([f], os.path.join(d, "torn.json"), ok=(2,))
    check("offset" in p2.stderr and "truncated" in p2.stderr and f in p2.stderr, p2.stderr)
    n_torn = len(events(doc2))
    check(n_torn > 1000 and n_torn <= n_killed, "torn: %d events, killed: %d" % (n_torn, n_killed))
    print("ok: %d events after kill -9, %d after tearing the tail; error: %s" % (n_killed, n_torn, p2.stderr.splitlines()[0]))


def group_api(info):
    m = re.search(r"GroupApi=(\d+)", info)
    return int(m.group(1)) if m else 0


def packed_records(data, b):
    """Records in a PACKED block's segments (docs/format.md: thread,
    nrecords, nbytes, then nbytes of packed records, per segment)."""
    p, end, n = b.payload_offset, b.payload_offset + b.stored_len - 4, 0
    while p + 12 <= end:
        _, nrec, nbytes = struct.unpack_from("<III", data, p)
        n += nrec
        p += 12 + nbytes
    return n


def crash_dump_flips(cli, plugin, churn):
    d = tmpdir()
    # the drainer waits 5 s between rounds: the records stay in the ring and
    # the handler stores them raw, in many PACKED blocks of 512 records
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_MODE="flight", NCCLSCOPE_DRAIN_US="5000000")
    if "ASAN_OPTIONS" in env:  # under ASan: let the job's own SIGSEGV handler (ours) be installed
        env["ASAN_OPTIONS"] += ":handle_segv=0:allow_user_segv_handler=1"
    p = subprocess.run([churn, "--plugin", plugin, "--stream", "0.1", "--crash"], env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == -signal.SIGSEGV, "the job dies of its SIGSEGV: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
    files = trace_files(d)
    check(len(files) == 1 and "-crash-" in files[0], "one crash dump: %s" % files)
    f = files[0]
    total = int(re.search(r"events (\d+)", p.stdout).group(1))
    info = run([cli, "info", f]).stdout
    check("damage          none" in info and group_api(info) == total,
          "the intact dump reads clean with all %d events:\n%s" % (total, info))
    data = open(f, "rb").read()
    bl = T.blocks(data)
    check(bl and bl[-1].type == T.END and bl[-1].offset + T.HDR.size + bl[-1].stored_len == len(data),
          "the dump is whole blocks up to END")
    raw = [b for b in bl if not b.flags & T.F_ZSTD]
    check(all(b.flags & T.F_SUM for b in raw), "a block stored raw without its checksum: %s" %
          [(b.offset, b.type, b.flags) for b in raw if not b.flags & T.F_SUM])
    packed = [b for b in raw if b.type == T.PACKED]
    check(len(packed) >= 10, "only %d raw PACKED blocks in the dump" % len(packed))
    # 12 flips among the records, one in every other kind of raw block (the
    # END block's payload is its checksum alone), one in a checksum
    rng = random.Random(4242)
    targets = [(b, rng.randrange(b.stored_len - 4)) for b in rng.sample(packed, 12)]
    for t in sorted({b.type for b in raw} - {T.PACKED}):
        b = rng.choice([x for x in raw if x.type == t])
        targets.append((b, rng.randrange(b.stored_len)))
    targets.append((packed[0], packed[0].stored_len - 1 - rng.randrange(4)))
    for k, (b, at) in enumerate(targets):
        bit = rng.randrange(8)
        m = bytearray(data)
        m[b.payload_offset + at] ^= 1 << bit
        mf = os.path.join(d, "flip%d.nsc" % k)
        open(mf, "wb").write(m)
        what = "block %d (type %d) payload byte %d bit %d" % (b.seq, b.type, at, bit)
        pi = run([cli, "info", mf], ok=(0, 2))
        where = "%s: offset %d: " % (mf, b.offset)
        check(pi.returncode == 2 and where in pi.stderr and "checksum" in pi.stderr and
              "damage          yes" in pi.stdout,
              "%s: info accepted the flip (exit %d)\nstderr: %s" % (what, pi.returncode, pi.stderr[-1500:]))
        n = group_api(pi.stdout)
        if b.type == T.PACKED:  # that block skipped (its records), the rest read
            held = packed_records(data, b)
            check(total - held <= n < total, "%s: %d of %d events read (the block held %d records)" %
                  (what, n, total, held))
        elif b.type != T.SESSION:
            check(n == total, "%s: %d of %d events read" % (what, n, total))
        if k < 2 or b.type == T.STRINGS:
            _, pc = convert([mf], os.path.join(d, "flip%d.json" % k), ok=(2,))
            check(where in pc.stderr and "checksum" in pc.stderr, "%s: convert: %s" % (what, pc.stderr[-1500:]))
        os.unlink(mf)
    print("ok: crash dump of %d events in %d blocks (%d raw PACKED) reads clean; %d single bit flips "
          "all reported with their offset" % (total, len(bl), len(packed), len(targets)))


def main():
    cli, plugin, fake = env_paths()
    killed(cli, plugin, fake)
    crash_dump_flips(cli, plugin, sys.argv[1])


main()
