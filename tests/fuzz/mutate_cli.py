# SPDX-License-Identifier: Apache-2.0
"""Mutation fuzzer of the command line: mutants of the traces in tests/data
(bit flips, flips inside compressed or checksummed payloads, truncations,
duplicated and zeroed ranges, huge length fields in block headers, edited
header fields with a valid check, whole blocks dropped or repeated, and,
through libzstd, extreme values written into decompressed payloads stored
back uncompressed, with a valid payload checksum or none; a fifth of the
mutants start from the trace stored as a crash dump is, every block
uncompressed with its checksum)
go through `convert` (JSON and .pftrace), `info`, `stats` (text and --json),
`report` and `hang --json` (which may also exit 4 or 5). A mutant fails the test when a command crashes, prints a
sanitizer report, hangs (timeout), exits with anything but 0 or 2, exits 2
without naming the file, or exits 0/2 with an output that does not parse;
exit 3 is right only for a mutant that lost the file magic (not a trace any
more), with "not an ncclscope trace: FILE" on stderr.

Reproducible: mutant i of seed S is the same on every machine.
  NSC_FUZZ_SEED=S       seed (default below; printed)
  NSC_FUZZ_MUTANTS=N    how many mutants (default 240)
  NSC_FUZZ_ONLY=i       only mutant i (to reproduce a failure)
  NSC_FUZZ_KEEP=DIR     keep failing mutants there (default: a temporary directory, printed)
"""
import concurrent.futures
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import nsctrace as T  # noqa: E402

DEFAULT_SEED = 9013
DEFAULT_MUTANTS = 240
TIMEOUT_S = 60  # one command on a ~50 KB trace takes well under a second, even under ASan

EXTREMES64 = [0, 1, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF,
              0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x00FFFFFFFFFFFFFF, 1 << 62]
EXTREMES32 = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFF, 0x10000, 1 << 26, 88, 40]


def corpus():
    root = os.path.normpath(os.path.join(HERE, "..", "data"))
    out = []
    for d, _, fs in sorted(os.walk(root)):
        out += [os.path.join(d, f) for f in sorted(fs) if f.endswith(".nsc")]
    return out


# ---- mutations: each takes (rng, bytearray) and returns (bytearray, description) ----

def m_bitflip(rng, b):
    i = rng.randrange(16, len(b)) if len(b) > 16 else 0
    b[i] ^= 1 << rng.randrange(8)
    return b, "bit flip at %d" % i


def m_payload_flip(rng, b):
    bl = [x for x in T.blocks(bytes(b)) if x.flags & (T.F_ZSTD | T.F_SUM) and x.stored_len > 0]
    if not bl:
        return m_bitflip(rng, b)
    x = rng.choice(bl)
    i = x.payload_offset + rng.randrange(x.stored_len)
    b[i] ^= 1 << rng.randrange(8)
    return b, "flip in %s block %d (type %d) at %d" % (
        "compressed" if x.flags & T.F_ZSTD else "checksummed", x.seq, x.type, i)


def m_truncate(rng, b):
    n = rng.randrange(0, len(b))
    return b[:n], "truncated to %d" % n


def m_duplicate(rng, b):
    a = rng.randrange(0, len(b))
    n = rng.randrange(1, 2048)
    at = rng.randrange(0, len(b))
    chunk = b[a:a + n]
    return b[:at] + chunk + b[at:], "duplicated %d bytes from %d at %d" % (len(chunk), a, at)


def m_zero(rng, b):
    a = rng.randrange(0, len(b))
    n = rng.randrange(1, 512)
    b[a:a + n] = bytes(len(b[a:a + n]))
    return b, "zeroed %d bytes at %d" % (n, a)


def m_huge_length(rng, b):
    bl = T.blocks(bytes(b))
    if not bl:
        return m_bitflip(rng, b)
    x = rng.choice(bl)
    field = rng.choice(["stored", "raw"])
    v = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 64 << 20, (64 << 20) + 1, x.stored_len + 1,
                    max(x.stored_len - 1, 0), rng.randrange(1 << 32)])
    off = x.offset + (8 if field == "stored" else 12)
    struct.pack_into("<I", b, off, v)
    fixed = rng.random() < 0.7
    if fixed:  # with a valid check, so the reader believes the header
        struct.pack_into("<I", b, x.offset + 20, T.header_check(bytes(b[x.offset:x.offset + 20])))
    return b, "block %d (type %d): %s length %d%s" % (x.seq, x.type, field, v,
                                                       ", check recomputed" if fixed else "")


def m_header_field(rng, b):
    bl = T.blocks(bytes(b))
    if not bl:
        return m_bitflip(rng, b)
    x = rng.choice(bl)
    what = rng.choice(["type", "flags", "seq"])
    if what == "type":
        struct.pack_into("<H", b, x.offset + 4, rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 0, 9]))
    elif what == "flags":
        struct.pack_into("<H", b, x.offset + 6, rng.choice([0, 1, 2, 3]))
    else:
        struct.pack_into("<I", b, x.offset + 16, rng.choice([0, x.seq + 1, 0xFFFFFFFF, x.seq + 1000]))
    struct.pack_into("<I", b, x.offset + 20, T.header_check(bytes(b[x.offset:x.offset + 20])))
    return b, "block %d: %s changed, check recomputed" % (x.seq, what)


def m_blocks(rng, b):
    data = bytes(b)
    bl = T.blocks(data)
    if len(bl) < 2:
        return m_bitflip(rng, b)
    hs = struct.unpack_from("<I", data, 12)[0]
    parts = [data[x.offset:x.payload_offset + x.stored_len] for x in bl]
    i = rng.randrange(len(parts))
    op = rng.choice(["drop", "repeat", "swap"])
    if op == "drop":
        del parts[i]
    elif op == "repeat":
        parts.insert(rng.randrange(len(parts)), parts[i])
    else:
        j = rng.randrange(len(parts))
        parts[i], parts[j] = parts[j], parts[i]
    return bytearray(data[:hs] + b"".join(parts)), "block %d %s" % (i, op)


def m_payload_values(rng, b):
    """Extreme values into a decompressed payload, stored back uncompressed:
    reaches anchors, session, comms, STATS and records behind the checksums."""
    if T.zstd() is None:
        return m_bitflip(rng, b)
    data = bytes(b)
    bl = T.blocks(data)
    if not bl:
        return m_bitflip(rng, b)
    target = rng.choice(bl)
    desc = []

    def edit(blk, p):
        if blk.offset != target.offset or not p:
            return None
        p = bytearray(p)
        for _ in range(rng.randrange(1, 6)):
            if rng.random() < 0.5 and len(p) >= 8:
                o = rng.randrange(0, len(p) - 7) & ~(rng.choice([0, 7]))
                v = rng.choice(EXTREMES64 + [rng.getrandbits(64)])
                struct.pack_into("<Q", p, o, v)
                desc.append("u64 %#x at +%d" % (v, o))
            elif len(p) >= 4:
                o = rng.randrange(0, len(p) - 3) & ~(rng.choice([0, 3]))
                v = rng.choice(EXTREMES32 + [rng.getrandbits(32)])
                struct.pack_into("<I", p, o, v)
                desc.append("u32 %#x at +%d" % (v, o))
        return bytes(p)

    try:
        sums = rng.random() < 0.5  # the values behind a valid payload checksum
        out = T.rebuild(data, edit, checksum=sums)
    except ValueError:
        return m_bitflip(rng, b)
    return bytearray(out), "uncompressed%s; block %d (type %d): %s" % (
        " with checksums" if sums else "", target.seq, target.type, ", ".join(desc))


# (offset, size) of the fields of each uncompressed-able block payload that
# readers interpret (docs/format.md), for edits that land on a field.
FIELDS = {
    T.SESSION: [(0, 4), (4, 4), (8, 4), (12, 4), (16, 8), (24, 8), (32, 8), (40, 8), (48, 4),
                (52, 4), (56, 4), (60, 4)],
    T.ANCHOR: [(0, 8), (8, 8), (16, 8)],
    T.STATS: [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (40, 8), (48, 8), (56, 8),
              (64, 8), (72, 8), (80, 4), (84, 4)],
}
COMM_FIELDS = [(0, 4), (4, 4), (8, 4), (12, 4), (16, 8), (24, 8)]  # per 128-byte entry
SIGNED32 = [0x7FFFFFFF, 0x7FFFFFFE, 0x80000000, 0x80000001, 0xFFFFFFFF]
# v1 record fields, from byte 0 of a record: header, parent/state argument,
# and the descriptor's words (its int32 fields: root, peer, pid, nSteps, ...)
REC_FIELDS = [(4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (40, 8), (48, 4), (52, 4), (56, 4),
              (60, 4)]


def m_fields(rng, b):
    """Extreme values into the fields of SESSION, ANCHOR, COMMS and STATS
    (stored back uncompressed), and into v1 records' header fields."""
    if T.zstd() is None:
        return m_bitflip(rng, b)
    data = bytes(b)
    bl = [x for x in T.blocks(data) if x.type in (T.SESSION, T.ANCHOR, T.STATS, T.COMMS, T.CHUNK)]
    if not bl:
        return m_bitflip(rng, b)
    kind = rng.choice(sorted({x.type for x in bl}))  # each kind of block as likely
    target = rng.choice([x for x in bl if x.type == kind])
    desc = []

    def edit(blk, p):
        if blk.offset != target.offset:
            return None
        p = bytearray(p)
        for _ in range(rng.randrange(1, 4)):
            if blk.type == T.COMMS and len(p) >= 128:
                base = 128 * rng.randrange(len(p) // 128)
                o, n = rng.choice(COMM_FIELDS)
                o += base
            elif blk.type == T.CHUNK and len(p) >= 8 + 64:
                k = rng.randrange((len(p) - 8) // 64)  # first segment's records
                o, n = rng.choice(REC_FIELDS)
                o += 8 + 64 * k
            elif blk.type in FIELDS:
                o, n = rng.choice(FIELDS[blk.type])
            else:
                return None
            if o + n > len(p):
                continue
            v = rng.choice(EXTREMES64 if n == 8 else EXTREMES32 + SIGNED32)
            struct.pack_into("<Q" if n == 8 else "<I", p, o, v & ((1 << (8 * n)) - 1))
            desc.append("%d-byte field +%d = %#x" % (n, o, v))
        return bytes(p)

    try:
        sums = rng.random() < 0.5  # the values behind a valid payload checksum
        out = T.rebuild(data, edit, checksum=sums)
    except ValueError:
        return m_bitflip(rng, b)
    return bytearray(out), "uncompressed%s; block %d (type %d): %s" % (
        " with checksums" if sums else "", target.seq, target.type, ", ".join(desc) or "as is")


MUTATIONS = [(m_bitflip, 3), (m_payload_flip, 2), (m_truncate, 2), (m_duplicate, 2), (m_zero, 2),
             (m_huge_length, 2), (m_header_field, 2), (m_blocks, 1), (m_payload_values, 4),
             (m_fields, 6)]


def make_mutant(seed, i, files):
    rng = random.Random("%d:%d" % (seed, i))
    src = rng.choice(files)
    b = bytearray(open(src, "rb").read())
    descs = []
    # a fifth of the mutants start from the trace stored as crash dumps are:
    # every block uncompressed with its payload's checksum (F_SUM)
    if T.zstd() is not None and rng.random() < 0.2:
        b = bytearray(T.rebuild(bytes(b), checksum=True))
        descs.append("stored with checksums")
    fns = [f for f, w in MUTATIONS for _ in range(w)]
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if not b:
            break
        b, d = rng.choice(fns)(rng, b)
        descs.append(d)
    return src, bytes(b), "; ".join(descs)


# ---- running ----

def run(cmd, env):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, timeout=TIMEOUT_S)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"), time.monotonic() - t
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or b"", (e.stderr or b"").decode("utf-8", "replace"), TIMEOUT_S


def one(cli, seed, i, files, work, env):
    src, blob, desc = make_mutant(seed, i, files)
    d = os.path.join(work, "m%d" % i)
    os.makedirs(d)
    m = os.path.join(d, "mutant.nsc")
    with open(m, "wb") as f:
        f.write(blob)
    inputs = [m]
    # One mutant in four is merged with the intact rest of its job (clock
    # alignment and multi-file conversion on damaged input).
    if os.path.basename(os.path.dirname(src)) == "h200x4_procs" and i % 4 == 0:
        others = [os.path.join(os.path.dirname(src), x) for x in sorted(os.listdir(os.path.dirname(src)))
                  if x.endswith(".nsc") and x != os.path.basename(src)]
        inputs += others
    out_json, out_pf, out_html = (os.path.join(d, x) for x in ("t.json", "t.pftrace", "r.html"))
    cmds = [
        ("convert json", ["convert", *inputs, "-o", out_json], out_json, "json"),
        ("convert pftrace", ["convert", *inputs, "-o", out_pf], out_pf, "file"),
        ("info", ["info", m], None, None),
        ("stats", ["stats", *inputs] + (["--json"] if i % 2 else []), None,
         "stdout-json" if i % 2 else None),
        ("report", ["report", *inputs, "-o", out_html], out_html, "html"),
        # a cut or damaged trace may well look hung: 4 is a valid answer
        ("hang", ["hang", *inputs, "--json"], None, "stdout-json"),
    ]
    problems, secs = [], 0.0
    for name, args, out, kind in cmds:
        rc, so, se, dt = run([cli] + args, env)
        secs += dt
        why = None
        if rc is None:
            why = "hung (no exit within %d s)" % TIMEOUT_S
        elif rc < 0:
            why = "killed by signal %d" % -rc
        elif "runtime error" in se or "Sanitizer" in se:
            why = "sanitizer report"
        elif rc == 3:
            # a mutant that no longer starts with the file magic is not a
            # trace: refused before anything is written, and named
            if "not an ncclscope trace: " + m not in se:
                why = "exit 3 without 'not an ncclscope trace: FILE'"
            elif open(m, "rb").read(8) == b"NCCLSCP1":
                why = "exit 3 for a file that starts as a trace"
        elif rc not in ((0, 2, 4, 5) if name == "hang" else (0, 2)):
            why = "exit %d" % rc
        elif rc == 2 and m not in se:
            why = "exit 2 without naming the file"
        elif kind == "json":
            try:
                with open(out) as f:
                    json.load(f)
            except (OSError, ValueError) as e:
                why = "output is not JSON: %s" % e
        elif kind == "stdout-json":
            try:
                json.loads(so.decode("utf-8", "replace"))
            except ValueError as e:
                why = "--json output is not JSON: %s" % e
        elif kind in ("file", "html"):
            if not os.path.isfile(out) or os.path.getsize(out) == 0:
                why = "no output written"
            elif kind == "html" and not open(out, "rb").read().rstrip().endswith(b"</html>"):
                why = "HTML report cut short"
        if why:
            problems.append("%s: %s\n    stderr: %s" % (name, why, se[-1500:].strip()))
    if not problems:
        shutil.rmtree(d)
    return i, src, desc, problems, secs, d


def main():
    cli = os.environ["NSC_CLI"]
    seed = int(os.environ.get("NSC_FUZZ_SEED", DEFAULT_SEED))
    n = int(os.environ.get("NSC_FUZZ_MUTANTS", DEFAULT_MUTANTS))
    only = os.environ.get("NSC_FUZZ_ONLY")
    idx = [int(only)] if only else list(range(n))
    files = corpus()
    if not files:
        print("FAIL: no traces in tests/data")
        return 1
    env = dict(os.environ)
    # Sanitizer findings must stop the command (tests/run.sh sets these too).
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if "halt_on_error" not in env.get(k, ""):
            env[k] = (env.get(k, "") + ":halt_on_error=1").lstrip(":")
    keep = os.environ.get("NSC_FUZZ_KEEP")
    work = keep or tempfile.mkdtemp(prefix="nsc-fuzz-")
    os.makedirs(work, exist_ok=True)
    print("seed %d, %d mutants of %d traces, libzstd %s; reproduce one with NSC_FUZZ_SEED=%d "
          "NSC_FUZZ_ONLY=i" % (seed, len(idx), len(files),
                               "found" if T.zstd() else "missing (no payload mutations)", seed))
    t0 = time.monotonic()
    failed, secs = 0, 0.0
    workers = max(1, min(4, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        for i, src, desc, problems, s, d in ex.map(lambda k: one(cli, seed, k, files, work, env), idx):
            secs += s
            if problems:
                failed += 1
                print("FAIL mutant %d of %s (%s), kept in %s:" % (i, os.path.basename(src), desc, d))
                for p in problems:
                    print("  " + p)
    print("%d mutants x 6 commands in %.1f s (%.1f s of command time): %d failed" %
          (len(idx), time.monotonic() - t0, secs, failed))
    if not failed and not keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
