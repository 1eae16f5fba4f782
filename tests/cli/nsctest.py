# SPDX-License-Identifier: Apache-2.0
"""Helpers for ncclscope's command-line tests: run the tools, read traces back
as JSON, and compare them with NCCL callback recordings."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77  # meson's exit code for a skipped test


def env_paths():
    return os.environ["NSC_CLI"], os.environ["NSC_PLUGIN"], os.environ["NSC_FAKE"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(cmd, env=None, ok=(0,)):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, errors="replace")
    if p.returncode not in ok:
        fail("%s exited %d\nstdout: %s\nstderr: %s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def trace_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".nsc"))


def convert(inputs, out, ok=(0,)):
    """The trace as JSON with every recorded event drawn (--detail: the
    default layout leaves the proxy threads' events out)."""
    cli, _, _ = env_paths()
    p = run([cli, "convert", "--detail", *inputs, "-o", out], ok=ok)
    with open(out) as f:
        return json.load(f), p


GPU_TRACKS = 0x40000000  # tids of the converter's derived GPU tracks (completion, channels)


def events(doc):
    """NCCL's events as slices: X events, and b events (their e partners are
    checked to exist). The converter's derived slices (enqueue-to-completion,
    KernelCh on GPU tracks) are left out: they describe these events again."""
    ends = {(e["cat"], e["id"]) for e in doc["traceEvents"] if e["ph"] == "e"}
    out = []
    for e in doc["traceEvents"]:
        if e.get("tid", 0) >= GPU_TRACKS or e.get("cat") == "completion":
            continue
        if e["ph"] == "X":
            out.append(e)
        elif e["ph"] == "b":
            check((e["cat"], e["id"]) in ends, "async slice %s without its end" % e["args"]["id"])
            out.append(e)
    return out


def thread_names(doc):
    names = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return names


_tmpdirs = []


def _remove_tmpdirs(owner=os.getpid()):
    if os.environ.get("NSC_KEEP_TMP") or os.getpid() != owner:
        return
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)


def tmpdir():
    """A temporary directory removed when the test exits (NSC_KEEP_TMP=1 keeps
    them for a post-mortem): a suite run thousands of times must not fill /tmp."""
    d = tempfile.mkdtemp(prefix="nsc-test-")
    if not _tmpdirs:
        atexit.register(_remove_tmpdirs)
    _tmpdirs.append(d)
    return d


def recordings():
    """The NCCL callback recordings shipped in tests/data/recordings (*.tsv,
    one process each; their README says what each run was)."""
    root = os.path.join(data_dir(), "recordings")
    check(os.path.isdir(root), "no directory " + root + " (the NCCL recordings ship with the repository)")
    out = []
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if os.path.isdir(p):
            out += [os.path.join(p, f) for f in sorted(os.listdir(p)) if f.endswith(".tsv")]
    check(out, "no NCCL recordings (*.tsv) under " + root)
    return out


def data_dir():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
