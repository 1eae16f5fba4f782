#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A synthetic job of N ranks made from recorded ranks, as real trace files.

    bench/synth_job.py --from tests/data/h200x4_procs --ranks 1024 --out /tmp/job1024

Each synthetic rank r copies recorded file r % S (S recorded files, one rank
each) block by block: the record chunks are copied byte for byte (they stay
zstd frames of packed records, exactly as the plugin wrote them), and only
the blocks that say who and when are rewritten:
  - SESSION: a new host (`synth-0000`, ..., --per-host ranks each) and pid;
    its start anchor moved like the ANCHOR blocks;
  - COMMS: each communicator gets nranks x N/S ranks and the copy's rank
    (copy c of recorded rank k of an n-rank comm is rank c*n + k); same
    commHash, so the N files form one N-rank job whose collectives match
    by (commHash, seqNumber) as a real job's do;
  - ANCHOR: CLOCK_MONOTONIC and CLOCK_REALTIME moved by the host's offset
    (hosts booted at different times: the converter's clock alignment has
    to find them again from the collectives) plus a per-rank jitter (up to
    --jitter-us: ranks enqueue at different times, so stragglers differ);
    every record time moves with them, the GPU timers do not (the GPU
    clock mapping absorbs it, as it would on a real machine).
seqNumbers are those recorded (every rank of a comm shares them, as in a
real job); the operations per rank are the recorded ones.

Written uncompressed where rewritten (a reader accepts raw blocks); the
COMMS block is decompressed with libzstd through ctypes (the build needs
libzstd anyway).
"""
import argparse
import ctypes
import ctypes.util
import os
import random
import struct
import sys

BLOCK = struct.Struct("<IHHIIII")  # magic, type, flags, stored_len, raw_len, seq, check
BLOCK_MAGIC = 0x4B4C4253
T_SESSION, T_COMMS, T_ANCHOR = 1, 2, 4
F_ZSTD = 1
COMM = struct.Struct("<IiiiQQ96s")  # struct nsc_comm_info, 128 bytes


def header_check(h20):
    x = 2166136261
    for b in h20:
        x = ((x ^ b) * 16777619) & 0xFFFFFFFF
    return x


def block(btype, flags, payload, raw_len, seq):
    h = struct.pack("<IHHIII", BLOCK_MAGIC, btype, flags, len(payload), raw_len, seq)
    return h + struct.pack("<I", header_check(h)) + payload


_zstd = None


def unzstd(data, raw_len):
    global _zstd
    if _zstd is None:
        _zstd = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
        _zstd.ZSTD_decompress.restype = ctypes.c_size_t
        _zstd.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        _zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]
    out = ctypes.create_string_buffer(raw_len)
    n = _zstd.ZSTD_decompress(out, raw_len, data, len(data))
    if _zstd.ZSTD_isError(n) or n != raw_len:
        raise ValueError("zstd: cannot decompress a COMMS block")
    return out.raw[:n]


def blocks(data):
    off = 16
    while off + BLOCK.size <= len(data):
        magic, btype, flags, slen, rlen, seq, _ = BLOCK.unpack_from(data, off)
        if magic != BLOCK_MAGIC:
            raise ValueError("not a block at offset %d" % off)
        yield btype, flags, data[off + BLOCK.size: off + BLOCK.size + slen], rlen, seq, \
            data[off: off + BLOCK.size + slen]
        off += BLOCK.size + slen


def synth_rank(src, copy, copies, host, pid, shift_ns):
    """One synthetic file's bytes from a recorded file's."""
    out = [src[:16]]
    for btype, flags, payload, rlen, seq, raw in blocks(src):
        if btype == T_SESSION:
            s = bytearray(payload)
            struct.pack_into("<I", s, 8, pid)
            ticks, mono, real = struct.unpack_from("<QQQ", s, 24)
            struct.pack_into("<QQQ", s, 24, ticks, mono + shift_ns, real + shift_ns)
            s[64:128] = host.encode().ljust(64, b"\0")[:64]
            out.append(block(btype, 0, bytes(s), len(s), seq))
        elif btype == T_ANCHOR:
            ticks, mono, real = struct.unpack_from("<QQQ", payload, 0)
            p = struct.pack("<QQQ", ticks, mono + shift_ns, real + shift_ns) + payload[24:]
            out.append(block(btype, 0, p, len(p), seq))
        elif btype == T_COMMS:
            raw_comms = unzstd(payload, rlen) if flags & F_ZSTD else payload
            c = bytearray()
            for i in range(0, len(raw_comms) - COMM.size + 1, COMM.size):
                serial, rank, nranks, nnodes, cid, init, name = COMM.unpack_from(raw_comms, i)
                if rank >= 0 and nranks > 0:
                    rank, nranks = copy * nranks + rank, nranks * copies
                    nnodes = max(1, nnodes) * copies
                c += COMM.pack(serial, rank, nranks, nnodes, cid, init, name)
            c += raw_comms[len(c):]
            out.append(block(btype, 0, bytes(c), len(c), seq))
        else:
            out.append(raw)  # records, strings, stats, end: as recorded
    return b"".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="directory of recorded .nsc files (one rank each)")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-host", type=int, default=8, help="ranks per synthetic host (8)")
    ap.add_argument("--jitter-us", type=float, default=50.0, help="per-rank clock jitter, at most (50)")
    ap.add_argument("--host-offset-ms", type=float, default=5.0, help="hosts' clocks differ by up to this (5)")
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    srcs = sorted(os.path.join(a.src, f) for f in os.listdir(a.src) if f.endswith(".nsc"))
    if not srcs or a.ranks % len(srcs):
        sys.exit("synth_job: --ranks must be a multiple of the %d recorded files" % len(srcs))
    data = [open(p, "rb").read() for p in srcs]
    # recorded rank of each file: its first comm's rank (the files are then used in rank order)
    os.makedirs(a.out, exist_ok=True)
    rnd = random.Random(a.seed)
    copies = a.ranks // len(srcs)
    host_shift = {}
    for r in range(a.ranks):
        h = r // a.per_host
        if h not in host_shift:
            host_shift[h] = 0 if h == 0 else int(rnd.uniform(-1, 1) * a.host_offset_ms * 1e6)
        shift = host_shift[h] + int(rnd.uniform(0, a.jitter_us) * 1e3)
        host = "synth-%04d" % h
        pid = 100000 + r
        body = synth_rank(data[r % len(srcs)], r // len(srcs), copies, host, pid, shift)
        with open(os.path.join(a.out, "%s-%d.nsc" % (host, pid)), "wb") as f:
            f.write(body)
    print("synth_job: %d ranks on %d hosts from %d recorded files -> %s" %
          (a.ranks, len(host_shift), len(srcs), a.out))


if __name__ == "__main__":
    main()
