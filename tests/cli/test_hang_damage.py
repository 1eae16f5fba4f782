# SPDX-License-Identifier: Apache-2.0
"""A damaged HANG block: `ncclscope info` reports it (file, offset of the
block, what is wrong; exit 2) and `ncclscope hang` does not use it (the
stuck Send is named from the records alone, no "watchdog" source).

The block comes from a real firing (watchdog_driver --mode p2p-group), then
is rewritten (tests/cli/nsctrace.py) with counts past its payload, entry
sizes below version 3's, bytes its counts do not explain, an operation of
no known type, channels stopped that never started, a ProxyOp of an
operation the block does not hold. The file rewritten unchanged is intact
for both: the test can fail.

usage: test_hang_damage.py WATCHDOG_DRIVER"""
import json
import os
import struct
import sys

from nsctest import *
import nsctrace
from test_watchdog_p2p import drive

HANG = 9
HDR = struct.Struct("<IHHHHIIIIIIIQQQ")  # nsc_hang_header, 64 bytes
OP = 80
PROXY = struct.Struct("<QiiIiBBBB5HHII")   # nsc_hang_proxy, 48 bytes


def header(p):
    return list(HDR.unpack_from(p, 0))


def with_header(p, **kw):
    h = header(p)
    names = {"header_size": 0, "comm_size": 1, "op_size": 2, "proxy_size": 3, "ncomms": 5, "nops": 6,
             "nproxies": 7}
    for k, v in kw.items():
        h[names[k]] = v
    return HDR.pack(*h) + p[HDR.size:]


def op_at(p):
    h = header(p)
    return h[0] + h[1] * h[5]  # after the header and the comms


def patch(p, off, fmt, value):
    b = bytearray(p)
    struct.pack_into(fmt, b, off, value)
    return bytes(b)


def stray_proxy(p):
    h = header(p)
    proxy = PROXY.pack(0xDEAD, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
    return with_header(p + proxy, nproxies=h[7] + 1)


MUTATIONS = [
    ("counts past the payload", lambda p: with_header(p, nops=header(p)[6] + 1000),
     "shorter than its counts"),
    ("an entry size below version 3's", lambda p: with_header(p, op_size=8), "smaller than version 3's"),
    ("bytes its counts do not explain", lambda p: p + bytes(OP), "longer than its counts"),
    ("an operation of no known type", lambda p: patch(p, op_at(p) + 56, "<B", 9), "neither a Coll nor a P2p"),
    ("channels stopped that never started", lambda p: patch(p, op_at(p) + 32, "<Q", 0b111),
     "stopped that never started"),
    ("a ProxyOp of no operation of the block", stray_proxy, "a ProxyOp of an operation"),
]


def rewrite(src, dst, mutate):
    with open(src, "rb") as f:
        data = f.read()
    out = nsctrace.rebuild(data, lambda b, p: mutate(p) if b.type == HANG else None)
    with open(dst, "wb") as f:
        f.write(out)
    offs = [b.offset for b in nsctrace.blocks(out) if b.type == HANG]
    check(len(offs) == 1, "one HANG block: %s" % offs)
    return offs[0]


def main():
    if nsctrace.zstd() is None:
        print("SKIP: libzstd is not loadable (the blocks cannot be rewritten)")
        sys.exit(77)
    cli, f, _ = drive("p2p-group")
    d = tmpdir()
    good = os.path.join(d, "intact.nsc")
    rewrite(f, good, lambda p: p)
    r = run([cli, "info", good], ok=(0,))
    check("damage          none" in r.stdout, r.stdout)
    doc = json.loads(run([cli, "hang", good, "--json"], ok=(4,)).stdout)
    check(not doc["damaged"] and doc.get("watchdog", {}).get("files") == 1 and
          doc["hangs"][0]["stuck_ranks"][0].get("source") == "watchdog", "intact: the watchdog's view: %s" % doc)
    for i, (what, mutate, why) in enumerate(MUTATIONS):
        bad = os.path.join(d, "bad-%d.nsc" % i)
        off = rewrite(f, bad, mutate)
        r = run([cli, "info", bad], ok=(2,))
        where = "%s: offset %d:" % (bad, off)
        check(where in r.stderr and why in r.stderr and "damage          yes" in r.stdout,
              "info on a HANG block with %s: wants %r and %r:\n%s%s" % (what, where, why, r.stdout, r.stderr))
        r = run([cli, "hang", bad, "--json"], ok=(4,))
        doc = json.loads(r.stdout)
        check(doc["damaged"] and "watchdog" not in doc and len(doc["hangs"]) == 1 and
              doc["hangs"][0]["stuck_ranks"][0].get("source") is None and where in r.stderr,
              "hang must not use a HANG block with %s: %s\n%s" % (what, doc, r.stderr))
    print("ok: %d damaged HANG blocks reported by info (file, offset) and left unused by hang" % len(MUTATIONS))


main()
