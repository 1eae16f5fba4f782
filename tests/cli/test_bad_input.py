# SPDX-License-Identifier: Apache-2.0
"""Bad input to the CLI: clear errors naming the file and offset, non-zero
exits, no crash, and what is intact is still converted."""
import os
import shutil

import nsctrace
from nsctest import *


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    src = os.path.join(data_dir(), "h200x2_mixed_64KiB.nsc")
    good, _ = convert([src], os.path.join(d, "good.json"))
    n_good = len(events(good))
    data = open(src, "rb").read()
    # Not a trace at all (no file magic: empty, text, random bytes): every
    # command refuses it before reading or writing anything, exit 3, one
    # line naming it (it was exit 2, "DAMAGED input", and an empty output).
    import random
    rnd = random.Random(7)
    junk = {
        "not_a_trace.nsc": b"hello world, not a trace\n" * 10,
        "empty.nsc": b"",
        "random.nsc": bytes(rnd.randrange(256) for _ in range(5000)),
    }
    for name, blob in junk.items():
        p = os.path.join(d, name)
        open(p, "wb").write(blob)
        outs = [os.path.join(d, name + x) for x in (".json", ".pftrace", ".html", ".out", ".dir")]
        for args in (["convert", p, "-o", outs[0]], ["convert", p, "-o", outs[1]], ["info", p],
                     ["stats", p], ["stats", "--json", p, "-o", outs[3]], ["report", p, "-o", outs[2]],
                     ["hang", "--json", p], ["export", p, "-o", outs[4]],
                     ["replay", "--plugin", plugin, p], ["convert", src, p, "-o", outs[0]]):
            r = run([cli] + args, ok=(3,))
            check(r.stderr == "ncclscope %s: not an ncclscope trace: %s\n" % (args[0], p) and r.stdout == "",
                  "%s: %r" % (" ".join(args), r.stderr))
        check(not any(os.path.exists(o) for o in outs), "%s: nothing written" % name)
        # found in a directory, the same
        job = os.path.join(d, "job-" + name)
        os.makedirs(job)
        shutil.copy(src, job)
        shutil.copy(p, job)
        r = run([cli, "stats", job], ok=(3,))
        check("not an ncclscope trace: %s" % os.path.join(job, name) in r.stderr, r.stderr)
        print("ok %s -> exit 3, %s" % (name, r.stderr.strip()))
    # A trace that starts right and is damaged later: exit 2, the intact
    # parts used, the damage named with its offset.
    cases = {
        "future.nsc": (data[:8] + (99).to_bytes(4, "little") + data[12:], "format version 99"),
        "truncated.nsc": (data[: len(data) // 2], "truncated"),
        "flipped.nsc": (data[:3000] + bytes([data[3000] ^ 0xFF]) + data[3001:], "offset"),
        "header_only.nsc": (data[:16], None),
    }
    for name, (blob, expect) in cases.items():
        p = os.path.join(d, name)
        open(p, "wb").write(blob)
        r = run([cli, "convert", p, "-o", os.path.join(d, name + ".json")], ok=(0, 2) if expect is None else (2,))
        check((expect is None or expect in r.stderr) and (expect is None or p in r.stderr), "%s: %s" % (name, r.stderr))
        check("not an ncclscope trace" not in r.stderr, r.stderr)
        r2 = run([cli, "info", p], ok=(0, 2) if expect is None else (2,))
        check(expect is None or p in r2.stderr, "info %s: %s" % (name, r2.stderr))
        print("ok %s -> %s" % (name, (r.stderr.splitlines() or [""])[0]))
    # intact blocks around damage are still converted: a trace of many small
    # chunks with one byte flipped in the middle loses only that chunk. The
    # byte is inside the compressed payload of the chunk nearest the middle
    # (found by parsing the block headers), where the zstd checksum always
    # sees it; a flip in an uncompressed block can go unseen (see below).
    md = os.path.join(d, "multi")
    run([fake, "--plugin", plugin, "--synthetic", "3000"],
        env={"NCCLSCOPE_DIR": md, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_CHUNK_KB": "4"})
    mf = trace_files(md)[0]
    full, _ = convert([mf], os.path.join(d, "m.json"))
    n_full = len(events(full))
    blob = bytearray(open(mf, "rb").read())
    chunks = [b for b in nsctrace.blocks(bytes(blob))
              if b.type in (nsctrace.PACKED, nsctrace.CHUNK) and b.flags & nsctrace.F_ZSTD]
    check(len(chunks) >= 10, "a trace of many chunks: %d" % len(chunks))
    mid = min(chunks, key=lambda b: abs(b.offset - len(blob) // 2))
    blob[mid.payload_offset + mid.stored_len // 2] ^= 0x55
    bad = os.path.join(d, "multi_flipped.nsc")
    open(bad, "wb").write(bytes(blob))
    doc, r = convert([bad], os.path.join(d, "f2.json"), ok=(2,))
    n = len(events(doc))
    check(n_full * 0.9 < n < n_full, "one damaged chunk: %d events of %d" % (n, n_full))
    check("offset %d" % mid.offset in r.stderr, r.stderr)
    print("ok: one flipped byte of %d: %d of %d events converted" % (len(blob), n, n_full))
    # Uncompressed blocks have no checksum; what can be seen there is: an
    # anchor moved far in time, a session block whose fields are impossible.
    src_data = open(src, "rb").read()
    anchors = [b for b in nsctrace.blocks(src_data) if b.type == nsctrace.ANCHOR]
    session = nsctrace.blocks(src_data)[0]
    for name, off, what in (("anchor_ticks", anchors[0].payload_offset + 5, "anchor"),
                            ("anchor_mono", anchors[0].payload_offset + 8 + 6, "anchor"),
                            ("anchor_real", anchors[-1].payload_offset + 16 + 7, "anchor"),
                            ("session_clock", session.payload_offset + 12, "clock source"),
                            ("session_host", session.payload_offset + 64 + 40, "host name")):
        b = bytearray(src_data)
        b[off] ^= 0x55
        p = os.path.join(d, name + ".nsc")
        open(p, "wb").write(bytes(b))
        r = run([cli, "info", p], ok=(2,))
        check(what in r.stderr and p in r.stderr, "%s: %s" % (name, r.stderr))
        print("ok %s -> %s" % (name, r.stderr.strip().splitlines()[0]))
    doc, _ = convert([os.path.join(d, "truncated.nsc")], os.path.join(d, "t2.json"), ok=(2,))
    check(len(events(doc)) >= 0, "truncated file converted")
    # usage errors
    run([cli, "convert"], ok=(1,))
    run([cli, "frobnicate"], ok=(1,))
    r = run([cli, "convert", os.path.join(d, "missing.nsc"), "-o", os.path.join(d, "x.json")], ok=(3,))
    check("missing.nsc" in r.stderr, r.stderr)
    r = run([cli, "replay", "--plugin", "/nonexistent.so", src], ok=(3,))
    check("cannot load plugin" in r.stderr, r.stderr)


main()
