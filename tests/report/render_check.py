#!/usr/bin/env python3
"""Renders generated reports (two measure runs; the runs of a bench llm sweep) in headless Chromium
(Debian's chromium): no console or script errors, every chart rendered into the DOM, a screenshot
that is not blank, user text escaped.
Exit 77 (skipped) when chromium is not installed."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from pngcheck import ink_fraction  # noqa: E402

cli = sys.argv[1]
browser = next((b for b in ("chromium", "chromium-browser") if shutil.which(b)), None)
if browser is None:
    print("chromium is not installed (scripts/install-deps.sh installs it): skipped")
    sys.exit(77)

EVIL = "<script>alert(1)</script>"


def run(*args, cwd):
    # The default store (where measure may record) is the test's own, never the user's.
    env = dict(os.environ, JOULEPROF_DB=str(Path(cwd) / "default.db"))
    r = subprocess.run([cli, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        sys.exit(f"jouleprof {' '.join(args)} failed ({r.returncode}): {r.stderr}")


def chromium(d, *extra):
    profile = tempfile.mkdtemp(dir=d)  # a fresh profile each time
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
            *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def check(d, html_path, required, evil):
    """Renders html_path: no errors, every chart drawn (the `required` ones with a canvas), escaped
    user text, nothing external, a screenshot with ink. Returns (charts, ink)."""
    html = html_path.read_text()
    # Offline: nothing is loaded from elsewhere.
    markup = re.sub(r"<script[^>]*>.*?</script>", "<script></script>", html, flags=re.S)
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', markup), "the report loads external resources"
    url = html_path.as_uri()

    dom = chromium(d, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body, "no <body> in the DOM"
    attrs = dict(re.findall(r'(data-jp-[a-z-]+)="([^"]*)"', body.group(0)))
    expected = re.findall(r'<div class="chart" id="([^"]+)"', html)
    assert expected, "the report has no charts"
    assert attrs.get("data-jp-errors") == "0", f"script errors: {attrs.get('data-jp-error-text')}"
    assert attrs.get("data-jp-charts") == str(len(expected)), (attrs, len(expected))
    for cid in required:
        assert cid in expected, f"{html_path.name}: chart {cid} missing"
        el = re.search(rf'<div class="chart" id="{cid}"[^>]*data-jp-rendered="true"[^>]*>(.*?)</div>\s*</div>', dom.stdout, re.S)
        assert el and "<canvas" in el.group(1), f"{html_path.name}: chart {cid} has no canvas in the DOM"
    console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    bad = [l for l in console if re.search(r"error|uncaught", l, re.I)]
    assert not bad, "console errors:\n" + "\n".join(bad)
    if evil:
        # Escaping: the tag is text, never markup.
        assert EVIL not in dom.stdout.split("<script type=\"application/json\"")[0], "unescaped user text in the DOM"
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout, "the tag value is not shown as text"
        assert "alert(1)" not in re.sub(r"&lt;script&gt;alert\(1\)&lt;/script&gt;|\\u003cscript\\u003ealert\(1\)\\u003c/script\\u003e", "", dom.stdout), \
            "alert(1) appears outside escaped text"

    shot = html_path.with_suffix(".png")
    s = chromium(d, f"--screenshot={shot}", "--window-size=1280,1600", url)
    assert s.returncode == 0 and shot.exists(), s.stderr[-2000:]
    ink, colours, size = ink_fraction(str(shot))
    assert ink > 0.02 and colours > 20, f"{html_path.name}: screenshot looks blank: ink {ink:.3f}, {colours} colours, {size}"
    return len(expected), ink


with tempfile.TemporaryDirectory() as d:
    db = str(Path(d) / "runs.db")
    run("measure", "--device", "sim", "--runs", "2", "--idle", "0.5", "--json", "a.json", "--timeline", "a.csv",
        "--tag", "batch=1", "--tag", f"note={EVIL}", "-q", cwd=d)
    run("measure", "--device", "sim", "--runs", "2", "--idle", "0.5", "--json", "b.json", "--timeline", "b.csv",
        "--tag", "batch=8", "-q", cwd=d)
    run("runs", "--db", db, "import", "a.json", "--timeline", "a.csv", cwd=d)
    run("runs", "--db", db, "import", "b.json", "--timeline", "b.csv", cwd=d)
    run("report", "1", "2", "--db", db, "-o", "report.html", "--title", f"T {EVIL}", cwd=d)
    n1, ink1 = check(d, Path(d) / "report.html", ["timeline-0", "timeline-1", "windows-0", "repeats", "compare"], evil=True)

    # A bench llm sweep, one stored run per configuration: the scaling charts and the component stack.
    bdb = str(Path(d) / "bench.db")
    run("bench", "llm", "--device", "sim", "--model", "tiny", "--batch", "1,2", "--prompt", "16,32", "--gen", "4",
        "--min-seconds", "0.05", "--iso-seconds", "0.02", "--idle", "0.2", "--db", bdb, "--tag", f"note={EVIL}", "-q", cwd=d)
    run("report", "1", "2", "3", "4", "--db", bdb, "-o", "bench.html", cwd=d)
    n2, ink2 = check(d, Path(d) / "bench.html",
                     ["bench-energy-prompt", "bench-throughput-prompt", "bench-energy-batch", "bench-throughput-batch",
                      "bench-components", "timeline-0", "compare"], evil=True)
    print(f"report ok: {n1} charts, screenshot ink {ink1:.3f}; bench report ok: {n2} charts, screenshot ink {ink2:.3f}")
