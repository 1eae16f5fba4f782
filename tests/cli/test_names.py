# SPDX-License-Identifier: Apache-2.0
"""Names in several scripts and invalid bytes, from a real trace (the plugin
under names_driver.c): a communicator name, an operation's name and mark
texts reach every JSON output (convert's .json, stats --json, hang --json,
the data in report's page) as the same characters: valid UTF-8 kept as it
is (not one \\u00XX per byte, which turned grüße into grÃ¼Ã\x9fe), each
invalid byte sequence as one U+FFFD (as Python's decode(errors="replace")
counts them), and only JSON's own escapes (quote, backslash, controls)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, env_paths, run, tmpdir, trace_files  # noqa: E402

COMM = "grüße-αβγ-中文-🚀".encode()
FUNC = "Réduire-Σ-全部".encode()
MARKS = [
    "café ελληνικά 日本語 😀".encode(),
    b"bad \xff\xfe \xc3( \xed\xa0\x80 \xc0\xaf end\xe4\xb8",  # lone, cut, surrogate, overlong, truncated
    b'say "hi" \\ tab\there',
]


def want(b):
    return b.decode("utf-8", "replace")


def strings(x):
    """Every string value and key in a parsed JSON document."""
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)


def strict_json(data, what):
    try:
        text = data.decode("utf-8")  # strict: an invalid byte fails here
    except UnicodeDecodeError as e:
        check(False, "%s is not UTF-8: %s" % (what, e))
    check("\\u00" not in text.replace("\\u0009", ""), "%s escapes bytes one by one: %s" % (
        what, re.findall(r".{20}\\u00.{20}", text)[:3]))
    return json.loads(text)


def main():
    driver = sys.argv[1]
    cli, plugin, _ = env_paths()
    d = tmpdir()
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_FLUSH_MS="10",
               NCCLSCOPE_EVENTS="Coll,KernelCh,ProxyOp,ProxyStep")
    p = subprocess.Popen([driver.encode(), plugin.encode(), COMM, FUNC] + MARKS, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    check(line == b"hung\n", "driver: %r %r" % (line, p.stderr.read() if p.poll() is not None else ""))
    time.sleep(0.5)  # two flushes
    p.send_signal(signal.SIGKILL)
    p.wait()
    files = trace_files(d)
    check(len(files) == 1, "one trace: %s" % files)

    # convert: the marks as instant events, the comm name and the operation
    out = os.path.join(d, "t.json")
    run([cli, "convert", files[0], "-o", out], ok=(0, 2))
    doc = strict_json(open(out, "rb").read(), "convert's JSON")
    marks = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "i" and e["name"] in map(want, MARKS)]
    check(marks == [want(m) for m in MARKS], "marks: %r, want %r" % (marks, [want(m) for m in MARKS]))
    all_strings = list(strings(doc))
    check(any(want(COMM) in s for s in all_strings), "the comm name %r is in no string" % want(COMM))
    check(want(FUNC) in all_strings, "the operation %r is no event name" % want(FUNC))
    check("\ufffd" in want(MARKS[1]) and want(MARKS[1]).count("\ufffd") == 9, repr(want(MARKS[1])))

    # stats --json: the operation's rows
    r = subprocess.run([cli, "stats", "--json", files[0]], capture_output=True)
    check(r.returncode in (0, 2), r.stderr)
    st = strict_json(r.stdout, "stats --json")
    check(want(FUNC) in list(strings(st)), "stats --json has no row of %r: %s" % (want(FUNC), r.stdout[:500]))

    # hang --json: rank 1 never entered the fifth collective
    r = subprocess.run([cli, "hang", "--json", files[0]], capture_output=True)
    check(r.returncode == 4, "hang: exit %d %s" % (r.returncode, r.stderr))
    h = strict_json(r.stdout, "hang --json")
    check(len(h["hangs"]) == 1 and h["hangs"][0]["name"] == want(COMM) and h["hangs"][0]["op"] == want(FUNC),
          "hang: %s" % h["hangs"])

    # report: the page is UTF-8, its script's data (operation names) JSON
    html = os.path.join(d, "r.html")
    run([cli, "report", files[0], "-o", html], ok=(0, 2))
    page = open(html, "rb").read().decode("utf-8")
    m = re.search(r"names:(\[.*?\]),colors:", page)
    check(m and want(FUNC) in json.loads(m.group(1)), "report's names: %s" % (m and m.group(1)))
    check(want(FUNC) in page, "the operation's name in the page's text")
    print("ok: names in 5 scripts and invalid bytes kept through convert, stats, hang and report")


if __name__ == "__main__":
    main()
