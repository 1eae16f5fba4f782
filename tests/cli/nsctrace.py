# SPDX-License-Identifier: Apache-2.0
"""Reading and writing ncclscope trace files at the block level (docs/format.md),
for tests that need crafted or damaged traces: where each block is, its
payload (decompressed through libzstd when it is a zstd frame), and a new
file made of blocks written back uncompressed (flags 0), which every reader
accepts, or uncompressed with their payload's checksum (flags 2, as crash
dumps store them)."""
import ctypes
import ctypes.util
import struct

FILE_MAGIC = b"NCCLSCP1"
BLOCK_MAGIC = 0x4B4C4253
HDR = struct.Struct("<IHHIIII")  # magic, type, flags, stored, raw, seq, check
F_ZSTD = 1
F_SUM = 2  # the payload ends with FNV-1a 32 of the bytes before it

SESSION, COMMS, STRINGS, ANCHOR, CHUNK, STATS, END, PACKED = 1, 2, 3, 4, 5, 6, 7, 8
STATS_V3 = struct.Struct("<IIQQQQQQQQQiI")  # 88 bytes
STATS_V2 = struct.Struct("<IIQQQQ")          # 40 bytes
THREAD_STATS = struct.Struct("<IIQQQ")       # 32 bytes


def header_check(first20, x=2166136261):
    for c in first20:
        x = ((x ^ c) * 16777619) & 0xFFFFFFFF
    return x


def payload_check(data):
    """NSC_BLK_F_SUM's checksum: FNV-1a 32, as the header's check."""
    return header_check(data)


def block_header(btype, flags, stored, raw, seq):
    h = struct.pack("<IHHIII", BLOCK_MAGIC, btype, flags, stored, raw, seq)
    return h + struct.pack("<I", header_check(h))


class Block:
    def __init__(self, offset, btype, flags, stored_len, raw_len, seq, stored):
        self.offset, self.type, self.flags = offset, btype, flags
        self.stored_len, self.raw_len, self.seq = stored_len, raw_len, seq
        self.stored = stored

    @property
    def payload_offset(self):
        return self.offset + HDR.size


def blocks(data):
    """The blocks of an intact file, in order (stops at the first bad header
    or a block that runs past the end)."""
    if len(data) < 16:
        return []
    hsize = struct.unpack_from("<I", data, 12)[0]
    off, out = hsize, []
    while off + HDR.size <= len(data):
        magic, t, fl, sl, rl, seq, ck = HDR.unpack_from(data, off)
        if (magic != BLOCK_MAGIC or ck != header_check(data[off:off + 20]) or
                off + HDR.size + sl > len(data)):
            break
        out.append(Block(off, t, fl, sl, rl, seq, data[off + HDR.size:off + HDR.size + sl]))
        off += HDR.size + sl
    return out


_zstd = None


def zstd():
    """libzstd through ctypes, or None when it cannot be loaded."""
    global _zstd
    if _zstd is None:
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        try:
            lib = ctypes.CDLL(name)
            lib.ZSTD_decompress.restype = ctypes.c_size_t
            lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                            ctypes.c_size_t]
            lib.ZSTD_isError.restype = ctypes.c_uint
            lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
            _zstd = lib
        except OSError:
            _zstd = False
    return _zstd or None


def payload(b):
    """A block's raw payload (decompressed); None when libzstd is missing."""
    if b.flags & F_SUM:
        if struct.unpack_from("<I", b.stored, len(b.stored) - 4)[0] != payload_check(b.stored[:-4]):
            raise ValueError("block at %d: payload checksum mismatch" % b.offset)
        return b.stored[:-4]
    if not b.flags & F_ZSTD:
        return b.stored
    lib = zstd()
    if lib is None:
        return None
    out = ctypes.create_string_buffer(max(b.raw_len, 1))
    n = lib.ZSTD_decompress(out, b.raw_len, b.stored, len(b.stored))
    if lib.ZSTD_isError(n):
        raise ValueError("block at %d: zstd error" % b.offset)
    return out.raw[:n]


def raw_block(btype, data, seq, checksum=False):
    """A block stored uncompressed (with its payload's checksum: F_SUM)."""
    if checksum:
        return (block_header(btype, F_SUM, len(data) + 4, len(data), seq) + data +
                struct.pack("<I", payload_check(data)))
    return block_header(btype, 0, len(data), len(data), seq) + data


def file_header(version):
    return FILE_MAGIC + struct.pack("<II", version, 16)


def rebuild(data, replace=None, version=None, checksum=False):
    """The file again with every block stored uncompressed (checksum: each
    with its payload's checksum, F_SUM); replace(block, raw payload) may
    return a new payload (or None to keep it). Needs libzstd."""
    ver = version or struct.unpack_from("<I", data, 8)[0]
    out = bytearray(file_header(ver))
    for b in blocks(data):
        p = payload(b)
        if p is None:
            raise RuntimeError("libzstd is not available")
        if replace:
            q = replace(b, p)
            if q is not None:
                p = q
        out += raw_block(b.type, p, b.seq, checksum)
    return bytes(out)


def stats_v3(nthreads_stats=(), drops_no_thread=0, invalid_context=0, invalid_handle=0,
             string_overflow=0, lost_write=0, lost_exit=0, comm_overflow=0, memory_peak=0,
             memory_budget=0, write_errno=0, write_errors=0):
    """A version-3 STATS payload; nthreads_stats: (thread, tid, records,
    drops_ring, drops_events) tuples."""
    h = STATS_V3.pack(len(nthreads_stats), STATS_V3.size, drops_no_thread, invalid_context,
                      invalid_handle, string_overflow, lost_write, lost_exit, comm_overflow,
                      memory_peak, memory_budget, write_errno, write_errors)
    return h + b"".join(THREAD_STATS.pack(*t) for t in nthreads_stats)


def thread_stats(p, header_size):
    """The per-thread rows of a STATS payload."""
    n = struct.unpack_from("<I", p, 0)[0]
    return [THREAD_STATS.unpack_from(p, header_size + i * THREAD_STATS.size) for i in range(n)]


def as_v3(data, **counters):
    """A version-3 file from an older one: the same blocks stored
    uncompressed, the session saying version 3, and every STATS block a v3
    one with the file's thread rows and the given counters (stats_v3's
    keyword arguments; drops_no_thread etc. default to the file's)."""
    def edit(b, p):
        if b.type == SESSION:
            return struct.pack("<I", 3) + p[4:]
        if b.type != STATS:
            return None
        hs = struct.unpack_from("<I", p, 4)[0] or STATS_V2.size
        old = STATS_V2.unpack_from(p, 0)
        base = dict(drops_no_thread=old[2], invalid_context=old[3], invalid_handle=old[4],
                    string_overflow=old[5])
        base.update(counters)
        return stats_v3(thread_stats(p, hs), **base)
    return rebuild(data, edit, version=3)
