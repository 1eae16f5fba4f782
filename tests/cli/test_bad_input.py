"""Bad input to the CLI: clear errors naming the file and offset, non-zero
exits, no crash, and what is intact is still converted."""
import os

from nsctest import *


def main():
    cli, plugin, fake = env_paths()
    d = tmpdir()
    src = os.path.join(data_dir(), "h200x2_mixed_64KiB.nsc")
    good, _ = convert([src], os.path.join(d, "good.json"))
    n_good = len(events(good))
    data = open(src, "rb").read()
    cases = {
        "not_a_trace.nsc": (b"hello world, not a trace\n" * 10, "not an ncclscope trace"),
        "empty.nsc": (b"", "not an ncclscope trace"),
        "future.nsc": (data[:8] + (99).to_bytes(4, "little") + data[12:], "format version 99"),
        "truncated.nsc": (data[: len(data) // 2], "truncated"),
        "flipped.nsc": (data[:3000] + bytes([data[3000] ^ 0xFF]) + data[3001:], "offset"),
    }
    for name, (blob, expect) in cases.items():
        p = os.path.join(d, name)
        open(p, "wb").write(blob)
        r = run([cli, "convert", p, "-o", os.path.join(d, name + ".json")], ok=(2,))
        check(expect in r.stderr and p in r.stderr, "%s: %s" % (name, r.stderr))
        r2 = run([cli, "info", p], ok=(2,))
        check(p in r2.stderr, "info %s: %s" % (name, r2.stderr))
        print("ok %s -> %s" % (name, r.stderr.splitlines()[0]))
    # intact blocks around damage are still converted: a trace of many small
    # chunks with one byte flipped in the middle loses only that chunk
    md = os.path.join(d, "multi")
    run([fake, "--plugin", plugin, "--synthetic", "3000"],
        env={"NCCLSCOPE_DIR": md, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_CHUNK_KB": "4"})
    mf = trace_files(md)[0]
    full, _ = convert([mf], os.path.join(d, "m.json"))
    n_full = len(events(full))
    blob = bytearray(open(mf, "rb").read())
    blob[len(blob) // 2] ^= 0x55
    bad = os.path.join(d, "multi_flipped.nsc")
    open(bad, "wb").write(bytes(blob))
    doc, r = convert([bad], os.path.join(d, "f2.json"), ok=(2,))
    n = len(events(doc))
    check(n_full * 0.9 < n < n_full, "one damaged chunk: %d events of %d" % (n, n_full))
    check("offset" in r.stderr, r.stderr)
    print("ok: one flipped byte of %d: %d of %d events converted" % (len(blob), n, n_full))
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
