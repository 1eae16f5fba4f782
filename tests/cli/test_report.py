# SPDX-License-Identifier: Apache-2.0
"""ncclscope report: one self-contained HTML page drawn from the numbers of
`ncclscope stats`.

Static checks on two traces: tests/data/torch_ddp_2rank.nsc (rank 1 of a
2-process PyTorch DDP job on 2 x H200, recorded with the default mask: no
KernelCh, no ProxyOp: no completion at all, enqueue only; the page must say
so and show no latency for it) and the 4-process H200 job (KernelCh: GPU
time, split into wait and transfer, stragglers by GPU start). The wait matrix must name the job's ranks and its
rows must add up to what `stats --json` reports for each rank.

Where Debian's Chromium is installed, both pages are rendered headless: the
DOM after scripts (--dump-dom, with a measuring script appended to a copy of
the page) must show legend entries that do not overlap, lane labels clear of
the bars, and a zoom that redraws the window; the screenshot (PNG decoded
with zlib) must show the operations' colours. Elsewhere that part is skipped
with a message."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402

ALLREDUCE = (0x4E, 0x79, 0xA7)  # the first operation's colour (report.c)


def static_checks(html, name):
    check(html.rstrip().endswith("</html>"), "%s: complete document" % name)
    check(not re.search(r"<script[^>]*\bsrc\s*=", html, re.I), "%s: no external script" % name)
    check(not re.search(r"\b(src|href)\s*=", html), "%s: nothing to fetch (no src/href)" % name)
    check(not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html),
          "%s: no URLs besides the SVG namespace" % name)
    check(len(re.findall(r"<script", html)) <= 1, "%s: at most the one inline zoom script" % name)
    check(len(html) < 400_000, "%s: small page (%d bytes)" % (name, len(html)))
    # the GPU/host lead: the operations table's columns, in this order
    cols = re.search(r"<table class='ops'><tr>(.*?)</tr>", html).group(1)
    order = [c for c in re.findall(r"<th>([^<]*)</th>", cols)]
    check(order.index("GPU p50") < order.index("wait p50") < order.index("transfer p50") <
          order.index("busbw GB/s") < order.index("bw from") < order.index("queue p50") <
          order.index("host p50"), "%s: GPU time, its split, busbw, then queue and host: %s" % (name, order))


def lanes(html):
    """Lane labels of the overview, in order."""
    ov = re.search(r"<svg[^>]*id='overview'.*?</svg>", html, re.S).group(0)
    return re.findall(r"<text x='4'[^>]*>([^<]*)</text>", ov)


def wait_cells(html):
    """{(late, waited): wait_ns} and {rank: row total text} of the wait matrix."""
    cells = {}
    for m in re.finditer(r"data-late='(\d+)' data-waited='(\d+)' data-wait-ns='(\d+)'", html):
        cells[(int(m.group(1)), int(m.group(2)))] = int(m.group(3))
    return cells


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG")
    pos, idat, w = 8, [], 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            check(depth == 8 and ctype in (2, 6), "8-bit RGB(A) PNG (depth %d, type %d)" % (depth, ctype))
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                cur[i] = (cur[i] + cur[i - bpp]) & 255
        elif f == 2:
            cur = bytearray((a + b) & 255 for a, b in zip(cur, prev))
        elif f == 3:
            for i in range(stride):
                cur[i] = (cur[i] + ((cur[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(cur))
        prev = cur
    return w, h, bpp, rows


def colours(path):
    w, h, bpp, rows = png_pixels(path)
    seen = {}
    for r in rows:
        for x in range(0, w * bpp, bpp):
            px = r[x:x + 3]
            seen[px] = seen.get(px, 0) + 1
    return w * h, seen


# Appended to a copy of the page: measures what a reader sees and writes it
# into the DOM for --dump-dom, after clicking "zoom in" once.
MEASURE = """<script>
(function(){
function boxes(sel){return Array.prototype.map.call(document.querySelectorAll(sel),function(e){
  var r=e.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom];});}
function overlaps(b){var n=0;for(var i=0;i<b.length;i++)for(var j=i+1;j<b.length;j++){
  var a=b[i],c=b[j];if(a[0]<c[2]-0.5&&c[0]<a[2]-0.5&&a[1]<c[3]-0.5&&c[1]<a[3]-0.5)n++;}return n;}
var out={};
['#op-legend li','#chart-legend li'].forEach(function(s){var b=boxes(s);out[s]={n:b.length,overlaps:overlaps(b)};});
var ov=document.getElementById('overview');
if(ov){var lab=boxes('#overview text[x="4"]'),bars=boxes('#overview path'),hit=0;
  lab.forEach(function(a){bars.forEach(function(c){if(a[0]<c[2]&&c[0]<a[2]&&a[1]<c[3]&&c[1]<a[3])hit++;});});
  out.labels={n:lab.length,over_bars:hit};}
var d=document.getElementById('detail');
if(d){out.before={rects:d.querySelectorAll('rect').length,win:document.getElementById('win').textContent};
  var z=document.getElementById('zin');if(z&&!document.getElementById('zoom').hidden)z.click();
  out.after={rects:d.querySelectorAll('rect').length,win:document.getElementById('win').textContent,
             zoom_shown:!document.getElementById('zoom').hidden};}
var p=document.createElement('pre');p.id='measured';p.textContent=JSON.stringify(out);document.body.appendChild(p);
})();
</script></body>"""


def chromium_checks(chromium, html_path, d, name, expect_allreduce):
    page = open(html_path).read()
    probe = os.path.join(d, name + "-probe.html")
    with open(probe, "w") as f:
        f.write(page.replace("</body>", MEASURE))
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--window-size=1200,1600"]
    p = subprocess.run(base + ["--virtual-time-budget=3000", "--dump-dom", "file://" + probe],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"<pre id=\"measured\">(.*?)</pre>", p.stdout)
    check(m, "%s: the measuring script ran (chromium said: %s)" % (name, p.stderr[-500:]))
    got = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    print("  %s measured: %s" % (name, got))
    for sel in ("#op-legend li", "#chart-legend li"):
        check(got[sel]["n"] >= 1, "%s: legend %s drawn" % (name, sel))
        check(got[sel]["overlaps"] == 0, "%s: legend entries of %s overlap: %s" % (name, sel, got[sel]))
    check(got["labels"]["n"] >= 1 and got["labels"]["over_bars"] == 0,
          "%s: lane labels clear of the bars: %s" % (name, got["labels"]))
    check(got["after"]["zoom_shown"], "%s: the zoom buttons appear with scripts on" % name)
    check(got["after"]["win"] != got["before"]["win"], "%s: zoom in changed the window: %s" % (name, got))
    png = os.path.join(d, name + ".png")
    subprocess.run(base + ["--screenshot=" + png, "file://" + html_path], capture_output=True, timeout=120)
    check(os.path.exists(png), "%s: Chromium wrote a screenshot" % name)
    total, seen = colours(png)
    white = seen.get(b"\xff\xff\xff", 0)
    print("  %s: %d distinct colours, %.1f%% not white" % (name, len(seen), 100.0 * (total - white) / total))
    check(len(seen) > 50, "%s: the screenshot is not blank (%d colours)" % (name, len(seen)))
    check(total - white > total // 50, "%s: more than 2%% of the screenshot is drawn" % name)
    if expect_allreduce:
        check(seen.get(bytes(ALLREDUCE), 0) > 500, "%s: AllReduce's colour is on screen (%d px)"
              % (name, seen.get(bytes(ALLREDUCE), 0)))
    return png


def long_job(d):
    """A synthetic job of 80,000 operations over seconds (fake_nccl, NCCL
    2.31's call order, 4 ranks): the lanes stay 200 bins or fewer, scaled so
    that a GPU busy 0.1% of the time still shows its shape (not one solid
    bar, not an empty one), and the page stays small."""
    _, plugin, fake = env_paths()
    trace = os.path.join(d, "long")
    run([fake, "--plugin", plugin, "--nccl231", "20000", "--threads", "4"],
        env={"NCCLSCOPE_DIR": trace, "NCCLSCOPE_EVENTS": "all"})
    out = os.path.join(d, "long.html")
    run([os.environ["NSC_CLI"], "report", trace, "-o", out])
    html = open(out).read()
    static_checks(html, "long")
    check(len(lanes(html)) == 4, "long: 4 lanes: %s" % lanes(html))
    scale = float(re.search(r"a full lane is ([0-9.e+-]+)% of the bin", html).group(1))
    check(scale < 100, "long: the lanes are scaled to the busiest bin (%g%%)" % scale)
    ov = re.search(r"<svg[^>]*id='overview'.*?</svg>", html, re.S).group(0)
    heights = set()
    for path in re.findall(r" d='([^']*)'", ov):
        check(20 <= path.count("M") <= 200, "long: 20 to 200 bins per lane and operation (%d)" % path.count("M"))
        heights |= {round(-float(h), 1) for h in re.findall(r"v(-?[0-9.]+)", path)}
    check(len(heights) > 5, "long: bins of varying height, not one bar (%d heights)" % len(heights))
    check(max(heights) >= 0.4 * 24, "long: the busiest bin fills at least 40%% of a lane (%.1f px)" % max(heights))
    print("ok: long synthetic job, %d bytes, lanes at %g%% full scale" % (len(html), scale))


def main():
    cli, _, _ = env_paths()
    d = tmpdir()

    # rank 1 of a 2-process DDP job, enqueue only
    ddp_src = os.path.join(data_dir(), "torch_ddp_2rank.nsc")
    check(os.path.getsize(ddp_src) < 64 * 1024, "the DDP trace is small")
    ddp = os.path.join(d, "ddp.html")
    run([cli, "report", ddp_src, "-o", ddp])
    html = open(ddp).read()
    static_checks(html, "ddp")
    check(lanes(html) == ["rank 1/2 · vm pid 1664"], "ddp: one lane, rank 1 of 2: %s" % lanes(html))
    check("No completion recorded (enqueue only)</b> for 34 rank-operations" in html
          and "NCCLSCOPE_EVENTS=default,KernelCh" in html and "Enqueue time (no completion recorded) per rank" in html,
          "ddp: says it has no completion, how to get one, and draws enqueue time as such")
    rows = re.findall(r"<tr class='host'><td>8b5559bfbf3ef457</td><td>(\w+)</td>(.*?)</tr>", html)
    check(len(rows) == 8 and all("enqueue-only" in r and "no completion recorded (enqueue only)" in r
                                 and not re.search(r"\d (ns|us|ms)<", r) for _, r in rows),
          "ddp: every row enqueue-only, no time in it: %s" % rows)
    check("No operation with GPU time or a completion: no latency to draw" in html
          and "<polyline" not in html, "ddp: no latency chart drawn from enqueue times")
    check("No collective with every rank's GPU start" in html, "ddp: no wait matrix without GPU starts")
    print("ok: ddp report, %d bytes" % len(html))

    # the 4-process job: GPU time, the wait matrix against stats
    job_src = os.path.join(data_dir(), "h200x4_procs")
    job = os.path.join(d, "job.html")
    run([cli, "report", job_src, "-o", job])
    html = open(job).read()
    static_checks(html, "job")
    check(lanes(html) == ["rank %d/4 · vm pid %d" % (r, 2367 + r) for r in range(4)],
          "job: a lane per rank, in rank order: %s" % lanes(html))
    check("1408 with GPU time" in html and "GPU time per rank" in html, "job: GPU time leads")
    check("no-completion" not in html, "job: every operation has a completion")
    # the operations table: wait and transfer as stats gives them
    st = json.loads(run([cli, "stats", "--json", job_src]).stdout)
    for r in st["rows"]:
        label = {10: "1K", 15: "32K", 20: "1M", 2: "4B"}[r["size_max_bytes"].bit_length() - 1]
        m = re.search(r"<td>%s</td><td>%s</td><td>%s</td><td>%s</td>(.*?)</tr>" %
                      (r["comm"], r["op"], r["dtype"], label), html)
        check(m, "job: a row for %s %s" % (r["op"], label))
        cells = re.findall(r"<td>([^<]*)</td>", m.group(1))
        # count timing gpu50 gpu99 wait50 wait99 xfer50 xfer99 busbw algbw bw_from
        check(cells[10] == r["bw_from"] and abs(float(cells[8]) - r["busbw_GBps"]) < 0.006,
              "job: %s %s busbw %s from %s, stats %s" % (r["op"], label, cells[8], cells[10], r))
        if r["transfer_p50_us"] is None:
            check(cells[4] == cells[6] == "-", "job: %s: no split: %s" % (r["op"], cells))
        else:
            check(cells[4] != "-" and cells[6] != "-", "job: %s: split: %s" % (r["op"], cells))
    # bounded: at most 200 bins a lane, whatever the job's length
    ov = re.search(r"<svg[^>]*id='overview'.*?</svg>", html, re.S).group(0)
    for path in re.findall(r" d='([^']*)'", ov):
        check(path.count("M") <= 200, "job: at most 200 bins per lane and operation")
    det = re.search(r"<svg[^>]*id='detail'.*?</svg>", html, re.S).group(0)
    titles = re.findall(r"<title>\w+ (?:&times;(\d+) )?", det)
    drawn = sum(int(n or 1) for n in titles)
    check(len(titles) > 20 and drawn > 100, "job: the window draws operations (%d in %d rectangles)"
          % (drawn, len(titles)))
    cells = wait_cells(html)
    ranks = {r for cell in cells for r in cell}
    check(ranks == {0, 1, 2, 3}, "job: wait matrix names ranks 0-3: %s" % sorted(ranks))
    check(all(a != b for a, b in cells), "job: nobody waits for itself")
    stats = json.loads(run([cli, "stats", "--json", job_src]).stdout)
    late = {s["rank"]: s for s in stats["gpu_stragglers"]}
    for r in range(4):
        row = sum(v for (a, _), v in cells.items() if a == r) / 1e3
        check(abs(row - late[r]["wait_us"]) < 0.01 * late[r]["wait_us"] + 1,
              "job: rank %d's row adds to %.2f us, stats says %.2f" % (r, row, late[r]["wait_us"]))
        check(("%d of %d" % (late[r]["last"], late[r]["collectives"])) in html,
              "job: rank %d last in %d of %d collectives, as stats" % (r, late[r]["last"], late[r]["collectives"]))
    # the worst cell is the one stats' worst rank made the first wait
    worst = max(cells, key=cells.get)
    check(worst[0] == stats["gpu_stragglers"][0]["rank"], "job: the worst cell's late rank leads stats' table")
    print("ok: job report, %d bytes; wait matrix rows match stats (%s)" % (len(html), sorted(cells.items())[:3]))

    # two ranks in one process (one file): lanes by rank
    mix = os.path.join(d, "mix.html")
    run([cli, "report", os.path.join(data_dir(), "h200x2_mixed_64KiB.nsc"), "-o", mix])
    html = open(mix).read()
    check([l.split(" ·")[0] for l in lanes(html)] == ["rank 0/2", "rank 1/2"],
          "mix: a lane per GPU of the process: %s" % lanes(html))
    check({r for c in wait_cells(html) for r in c} == {0, 1}, "mix: wait matrix of ranks 0 and 1")

    # a replayed trace: GPU timers not on the replay's host clock; the report
    # says so on the page and prints nothing but its one line
    _, plugin, _ = env_paths()
    rdir = os.path.join(d, "replayed")
    run([cli, "replay", "--plugin", plugin, os.path.join(data_dir(), "h200x2_net_1MiB.nsc")],
        env={"NCCLSCOPE_DIR": rdir, "NCCLSCOPE_EVENTS": "all"})
    rep = os.path.join(d, "replayed.html")
    p = run([cli, "report", rdir, "-o", rep])
    check(p.stderr.strip().splitlines() == ["ncclscope report: 1 file(s) -> %s" % rep],
          "replayed: one line on stderr, no per-file diagnostics: %r" % p.stderr)
    html = open(rep).read()
    check("not on the host clock here" in html and "Host time (enqueue to completion) per rank" in html,
          "replayed: lanes in host time, saying why")

    long_job(d)

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: chromium not installed (apt-get install chromium); the rendering checks run where it is")
        return
    chromium_checks(chromium, ddp, d, "ddp", False)
    png = chromium_checks(chromium, job, d, "job", True)
    if os.environ.get("NSC_REPORT_PNG"):  # docs/report.png: NSC_REPORT_PNG=docs/report.png
        shutil.copy(png, os.environ["NSC_REPORT_PNG"])
    print("ok: rendered by %s" % chromium)


if __name__ == "__main__":
    main()
