# SPDX-License-Identifier: Apache-2.0
"""convert --split for every output: each part stands alone in its format.
JSON parts (.json, .json.gz) are complete documents; protobuf parts (.pftrace,
.pftrace.gz) are complete traces (gzip where asked) holding no JSON text,
each describing the tracks its events use. Together the parts hold what the
unsplit output holds."""
import glob
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pftrace_read  # noqa: E402
from nsctest import check, fail, run, tmpdir  # noqa: E402

DATA = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
TRACE = os.path.join(DATA, "h200x4_procs")


def slices(events):
    return sorted((e["ts"], e.get("name"), e.get("track") is not None) for e in events
                  if e.get("type") == 1)


def read_pftrace(path, tmp):
    data = open(path, "rb").read()
    if path.endswith(".gz"):
        check(data[:2] == b"\x1f\x8b", "%s is not gzip" % path)
        data = gzip.decompress(data)
    # the JSON document's frame (nested argument values are JSON inside
    # annotations, which is fine)
    check(b'],"metadata":' not in data and b"traceEvents" not in data and b'"continued"' not in data,
          "%s holds the JSON document's text" % path)
    plain = os.path.join(tmp, "part.pftrace")
    with open(plain, "wb") as f:
        f.write(data)
    try:
        tracks, events = pftrace_read.read(plain)
    except (ValueError, KeyError, IndexError) as e:
        fail("%s does not decode as a Perfetto trace: %r" % (path, e))
    for e in events:
        if "track" in e:
            check(e["track"] in tracks, "%s: an event on a track the part does not describe" % path)
    return tracks, events


def main():
    cli = os.environ["NSC_CLI"]
    tmp = tmpdir()
    whole = os.path.join(tmp, "whole.pftrace")
    run([cli, "convert", TRACE, "-o", whole])
    _, all_events = read_pftrace(whole, tmp)
    for suffix in (".pftrace.gz", ".pftrace"):
        out = os.path.join(tmp, "t" + suffix)
        run([cli, "convert", TRACE, "--split", "1", "-o", out])
        parts = sorted(glob.glob(os.path.join(tmp, "t-[0-9][0-9][0-9]" + suffix)))
        check(len(parts) >= 3, "%s: %d parts of a 4 MB trace split at 1 MB" % (suffix, len(parts)))
        check(not os.path.exists(out), "%s: the unsplit name was written too" % suffix)
        got = []
        for k, p in enumerate(parts):
            check(p.endswith("-%03d%s" % (k, suffix)), "part %d is named %s" % (k, p))
            _, events = read_pftrace(p, tmp)
            got += events
            meta = [e for e in events if e.get("name") == "ncclscope metadata"]
            check(len(meta) == (1 if k == len(parts) - 1 else 0),
                  "%s: the metadata instant belongs to the last part only" % p)
        check(slices(got) == slices(all_events),
              "%s: the parts' slices differ from the unsplit trace's (%d, %d)"
              % (suffix, len(slices(got)), len(slices(all_events))))
        print("ok %s: %d parts, %d slices as unsplit" % (suffix, len(parts), len(slices(got))))
    # JSON parts: each a complete document; the last carries the metadata.
    whole_json = os.path.join(tmp, "whole.json")
    run([cli, "convert", TRACE, "-o", whole_json])
    n_all = len(json.load(open(whole_json))["traceEvents"])
    out = os.path.join(tmp, "j.json.gz")
    run([cli, "convert", TRACE, "--split", "1", "-o", out])
    parts = sorted(glob.glob(os.path.join(tmp, "j-[0-9][0-9][0-9].json.gz")))
    check(len(parts) >= 3, "json.gz: %d parts" % len(parts))
    n = 0
    for k, p in enumerate(parts):
        doc = json.loads(gzip.decompress(open(p, "rb").read()))
        meta = doc["metadata"]["ncclscope"]
        check(meta.get("continued") is (True if k < len(parts) - 1 else None),
              "%s: continued %r" % (p, meta.get("continued")))
        n += sum(1 for e in doc["traceEvents"] if e["ph"] != "M")
    n_all_data = sum(1 for e in json.load(open(whole_json))["traceEvents"] if e["ph"] != "M")
    check(n == n_all_data, "json parts hold %d events, unsplit %d" % (n, n_all_data))
    print("ok .json.gz: %d parts, %d events (of %d with names) as unsplit" % (len(parts), n, n_all))


main()
