#!/usr/bin/env python3
"""Screenshot test of the report's figures in headless Chromium, judged from the rendered layout
(not from pixels): for every chart, the title, the legend and the plot area (the grid) must not
overlap, the legend must lie inside the chart, and no two visible axis labels may overlap.
Figures: two measure runs compared (--by batch), repeats, energy per count, timelines, windows,
clocks, and a bench llm sweep (scaling, throughput, components; its legend has many entries) —
all simulated, so every title must say "(simulated)".
With FAKE_TRACED (a program that writes a trace file as the injection library would), also a
`jouleprof trace` run with four NVTX layers: its kernel-class and per-layer charts.
Usage: layout_check.py JOULEPROF [FAKE_TRACED] [--shots DIR]  (DIR: also keep a screenshot per report)
Exit 77 (skipped) when chromium is not installed."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

cli = os.path.abspath(sys.argv[1])
shots = Path(sys.argv[sys.argv.index("--shots") + 1]) if "--shots" in sys.argv else None
fake_traced = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else None
browser = next((b for b in ("chromium", "chromium-browser") if shutil.which(b)), None)
if browser is None:
    print("chromium is not installed (scripts/install-deps.sh installs it): skipped")
    sys.exit(77)

# Runs after the report's own glue: measures every chart's layout through ECharts' models and
# writes the problems found onto <body data-jp-layout="...">.
PROBE = r"""
<script>
(function () {
  function rectOf(group) {
    if (!group) return null;
    group.updateTransform && group.updateTransform();
    var r = group.getBoundingRect().clone();
    var m = group.getComputedTransform ? group.getComputedTransform() : group.transform;
    if (m) r.applyTransform(m);
    return r.width > 0 && r.height > 0 ? r : null;
  }
  function viewRect(inst, type) {
    var model = inst.getModel().getComponent(type);
    if (!model) return null;
    var view = inst.getViewOfComponentModel(model);
    return view ? rectOf(view.group) : null;
  }
  function texts(inst, type) {
    var out = [];
    inst.getModel().eachComponent(type, function (model) {
      var view = inst.getViewOfComponentModel(model);
      if (!view) return;
      view.group.traverse(function (el) {
        if (el.type !== 'text' || el.ignore || el.invisible) return;
        var t = el.style && el.style.text;
        if (t === undefined || t === '') return;
        // The label's oriented box (rotated labels are not axis-aligned): its four corners.
        var b = el.getBoundingRect(), m = el.getComputedTransform() || [1, 0, 0, 1, 0, 0];
        var pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(
            function (p) { return [m[0] * p[0] + m[2] * p[1] + m[4], m[1] * p[0] + m[3] * p[1] + m[5]]; });
        out.push({text: String(t), q: pts});
      });
    });
    return out;
  }
  function cut(a, b) {
    return a && b && a.x < b.x + b.width - 0.5 && b.x < a.x + a.width - 0.5 &&
           a.y < b.y + b.height - 0.5 && b.y < a.y + a.height - 0.5;
  }
  // Separating-axis test for two convex quadrilaterals (0.5 px tolerance).
  function quadsCut(a, b) {
    var polys = [a, b];
    for (var p = 0; p < 2; p++) {
      var q = polys[p];
      for (var i = 0; i < 4; i++) {
        var j = (i + 1) % 4, nx = q[j][1] - q[i][1], ny = q[i][0] - q[j][0];
        var len = Math.hypot(nx, ny);
        if (len === 0) continue;
        nx /= len; ny /= len;
        var amin = Infinity, amax = -Infinity, bmin = Infinity, bmax = -Infinity;
        a.forEach(function (v) { var d = v[0] * nx + v[1] * ny; amin = Math.min(amin, d); amax = Math.max(amax, d); });
        b.forEach(function (v) { var d = v[0] * nx + v[1] * ny; bmin = Math.min(bmin, d); bmax = Math.max(bmax, d); });
        if (amax <= bmin + 0.5 || bmax <= amin + 0.5) return false;
      }
    }
    return true;
  }
  function box(r) { return r ? [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)] : null; }
  var report = [];
  document.querySelectorAll('.chart[data-jp-rendered]').forEach(function (el) {
    var inst = echarts.getInstanceByDom(el);
    if (!inst) return;
    var problems = [];
    var title = viewRect(inst, 'title'), legend = viewRect(inst, 'legend');
    var gridModel = inst.getModel().getComponent('grid');
    var grid = gridModel && gridModel.coordinateSystem ? gridModel.coordinateSystem.getRect() : null;
    if (cut(title, legend)) problems.push('legend overlaps the title');
    if (cut(legend, grid)) problems.push('legend covers the plot area');
    if (cut(title, grid)) problems.push('title covers the plot area');
    if (legend && (legend.x < -1 || legend.y < -1 || legend.x + legend.width > inst.getWidth() + 1 ||
                   legend.y + legend.height > inst.getHeight() + 1)) problems.push('legend outside the chart');
    ['xAxis', 'yAxis'].forEach(function (ax) {
      var ts = texts(inst, ax);
      for (var i = 0; i < ts.length; i++)
        for (var k = i + 1; k < ts.length; k++)
          if (quadsCut(ts[i].q, ts[k].q)) problems.push(ax + ' labels overlap: "' + ts[i].text + '" and "' + ts[k].text + '"');
    });
    var opt = inst.getOption();
    var titleText = opt.title && opt.title[0] ? opt.title[0].text : '';
    report.push({id: el.id, title: titleText, problems: problems, legend: box(legend), grid: box(grid),
                 titleBox: box(title)});
  });
  document.body.setAttribute('data-jp-layout', JSON.stringify(report));
})();
</script>
"""


def run(*args, cwd):
    env = dict(os.environ, JOULEPROF_DB=str(Path(cwd) / "default.db"))
    r = subprocess.run([cli, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0:
        sys.exit(f"jouleprof {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


def chromium(d, width, *extra):
    profile = tempfile.mkdtemp(dir=d)
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={width},2400", "--virtual-time-budget=10000", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=180)


def check(d, html, width, name):
    probed = html.with_name(html.stem + "-probe.html")
    text = html.read_text()
    at = text.rfind("</body>")  # the last one: the charting library's source may contain the string
    probed.write_text(text[:at] + PROBE + text[at:])
    dom = chromium(d, width, "--dump-dom", probed.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'data-jp-layout="([^"]*)"', dom.stdout)
    assert m, f"{name}: the layout probe did not run"
    import html as h
    charts = json.loads(h.unescape(m.group(1)))
    expected = len(re.findall(r'<div class="chart" id="', text))
    assert len(charts) == expected, f"{name}: probed {len(charts)} of {expected} charts"
    bad = 0
    for c in charts:
        if "(simulated)" not in c["title"]:
            c["problems"].append("title does not say (simulated)")
        for p in c["problems"]:
            print(f"FAIL {name} @{width}px {c['id']} ({c['title']}): {p}  legend={c['legend']} grid={c['grid']} title={c['titleBox']}")
            bad += 1
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        chromium(d, width, f"--screenshot={shots / (name + '.png')}", html.as_uri())
    print(f"{name} @{width}px: {len(charts)} charts, {bad} layout problems")
    return bad


with tempfile.TemporaryDirectory(prefix="jouleprof-layout-") as d:
    db = str(Path(d) / "runs.db")
    work = ("echo begin prefill > $JOULEPROF_MARKERS; sleep 0.2; echo end prefill > $JOULEPROF_MARKERS; "
            "echo begin decode > $JOULEPROF_MARKERS; sleep 0.4; echo end decode > $JOULEPROF_MARKERS; "
            "echo count tokens 256 decode > $JOULEPROF_MARKERS")
    for batch, power in (("1", "300"), ("8", "420"), ("32", "610")):
        run("measure", "--device", "sim", "--idle", "0.5", "--runs", "3", "-q", "--db", db, "--tag", "batch=" + batch,
            "--tag", "model=llama-3.2-1b", "--sim-power", power, "--", "sh", "-c", work, cwd=d)
    run("bench", "llm", "--device", "sim", "--model", "tiny", "--batch", "1,4,16", "--prompt", "8,32", "--gen", "4",
        "--min-seconds", "0.05", "--iso-seconds", "0.05", "--idle", "0", "-q", "--db", db, cwd=d)
    listing = json.loads(run("runs", "--db", db, "list", "--json", cwd=d).stdout)
    measure_ids = [str(r["id"]) for r in listing if r["tags"].get("bench") != "llm"]
    bench_ids = [str(r["id"]) for r in listing if r["tags"].get("bench") == "llm"]
    run("report", *measure_ids, "--db", db, "--by", "batch", "-o", str(Path(d) / "measure.html"), "-q", cwd=d)
    run("report", *bench_ids, "--db", db, "-o", str(Path(d) / "bench.html"), "-q", cwd=d)
    if fake_traced:
        Path(d, "fake_inject.so").write_bytes(b"\x7fELF: a stand-in, never loaded (the fake program writes its trace file itself)")
        run("trace", "--device", "sim", "--idle", "0.3", "--db", str(Path(d) / "trace.db"), "-q", "--inject-lib",
            str(Path(d, "fake_inject.so")), "--", fake_traced, "1.6", "--layers", "4", cwd=d)
        run("report", "last", "--db", str(Path(d) / "trace.db"), "-o", str(Path(d) / "trace.html"), "-q", cwd=d)
    bad = 0
    for width in (1000, 1400):
        bad += check(d, Path(d) / "measure.html", width, "report-measure")
        bad += check(d, Path(d) / "bench.html", width, "report-bench")
        if fake_traced:
            bad += check(d, Path(d) / "trace.html", width, "report-trace")
    sys.exit(1 if bad else 0)
