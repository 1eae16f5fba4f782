"""ncclscope report: one self-contained HTML page (no scripts, nothing
fetched) with the files, a per-rank timeline, the stats tables, the
latency-by-size chart and the stragglers. Where Debian's Chromium is
installed it is rendered headless and the screenshot checked for content;
elsewhere that step is skipped with a message."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, tmpdir  # noqa: E402


def main():
    cli, _, _ = env_paths()
    src = os.path.join(data_dir(), "h200x4_procs")
    d = tmpdir()
    out = os.path.join(d, "report.html")
    run([cli, "report", src, "-o", out])
    html = open(out).read()
    check("<script" not in html.lower(), "no scripts")
    check(not re.search(r"\b(src|href)\s*=", html), "nothing to fetch (no src/href)")
    check(not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html), "no URLs besides the SVG namespace")
    for r in range(4):
        check(" rank %d/4" % r in html, "timeline row of rank %d" % r)
    check(html.count("<rect") > 1400, "a bar per operation: %d rects" % html.count("<rect"))
    check("Latency by message size" in html and "<polyline" in html, "latency chart")
    check("Stragglers" in html and html.count("<tr>") > 40, "tables")
    check(html.rstrip().endswith("</html>"), "complete document")
    print("ok: report.html, %d bytes, self-contained" % len(html))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: chromium not installed (apt-get install chromium); the screenshot check runs where it is")
        return
    png = os.path.join(d, "report.png")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1200,1600", "--screenshot=" + png, "file://" + out],
                   capture_output=True, timeout=120)
    check(os.path.exists(png) and os.path.getsize(png) > 50_000, "Chromium rendered a screenshot with content")
    print("ok: rendered by %s (%d bytes of PNG)" % (chromium, os.path.getsize(png)))


if __name__ == "__main__":
    main()
