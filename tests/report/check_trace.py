#!/usr/bin/env python3
"""Exports a trace with the CLI and checks it with Python's own JSON parser (independent of the
writer): the tracks Perfetto and chrome://tracing need, one time base, windows as slices."""
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

cli = sys.argv[1]


def run(*args, cwd):
    # The default store (where measure may record) is the test's own, never the user's.
    env = dict(os.environ, JOULEPROF_DB=str(Path(cwd) / "default.db"))
    r = subprocess.run([cli, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        sys.exit(f"jouleprof {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


with tempfile.TemporaryDirectory() as d:
    db = str(Path(d) / "runs.db")
    run("measure", "--device", "sim", "--runs", "2", "--idle", "0.5", "--json", "r.json", "--timeline", "t.csv",
        "--tag", "name=<b>x</b>", "-q", cwd=d)
    run("runs", "--db", db, "import", "r.json", "--timeline", "t.csv", cwd=d)
    run("export-trace", "last", "--db", db, "-o", "trace.json", cwd=d)
    text = (Path(d) / "trace.json").read_text()
    trace = json.loads(text)  # strict: no trailing commas, NaN or Infinity
    result = json.loads((Path(d) / "r.json").read_text())

events = trace["traceEvents"]
assert trace.get("displayTimeUnit") == "ms"
assert trace["otherData"]["origin_realtime_ns"] == result["origin_realtime_ns"]
procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
gpu_pids = [p for p, n in procs.items() if n.startswith("GPU ")]
assert len(gpu_pids) == len(result["gpus"]), procs
counters = defaultdict(list)
for e in events:
    assert e["ph"] in ("M", "C", "X"), e
    if e["ph"] == "C":
        assert isinstance(e["ts"], (int, float)) and isinstance(e["args"]["value"], (int, float))
        counters[(e["pid"], e["name"])].append(e["ts"])
for pid in gpu_pids:
    for metric in ("power_sample_w", "power_instant_w", "sm_clock_mhz", "temperature_c", "gpu_util_pct"):
        ts = counters.get((pid, metric))
        assert ts, f"no {metric} track for {procs[pid]}"
        assert ts == sorted(ts), f"{metric} not in time order"
slices = [e for e in events if e["ph"] == "X"]
assert len(slices) == len(result["windows"]), (len(slices), len(result["windows"]))
# Same time base: slices at the windows' times (µs), power samples inside the run.
# Repeats are named as the summary names them: "repeat N" from 1 after the warm-ups, "warm-up N".
warmups = sum(1 for w in result["windows"] if w["kind"] == "warmup")
for w in result["windows"]:
    name = w["name"]
    if w["kind"] == "warmup":
        name = f"warm-up {w['run'] + 1}"
    elif w["kind"] == "run":
        name = f"repeat {w['run'] - warmups + 1}"
    match = [s for s in slices if s["name"] == name and abs(s["ts"] - w["t0_s"] * 1e6) < 1]
    assert match, f"no slice for window {name}"
    assert abs(match[0]["dur"] - (w["t1_s"] - w["t0_s"]) * 1e6) < 1
    assert abs(match[0]["args"]["gpu_energy_j"] - w["gpu_energy_j"]) < 1e-6 * max(1, w["gpu_energy_j"])
power = counters[(gpu_pids[0], "power_sample_w")]
run_windows = [w for w in result["windows"] if w["kind"] == "run"]
inside = [t for t in power if run_windows[0]["t0_s"] * 1e6 <= t <= run_windows[-1]["t1_s"] * 1e6]
assert len(inside) > 0.5 * len(power), "power samples are not on the windows' time base"
# Nested slices on one thread must nest properly (Chrome's JSON importer needs it).
by_tid = defaultdict(list)
for s in slices:
    by_tid[(s["pid"], s["tid"])].append((s["ts"], s["ts"] + s["dur"]))
for spans in by_tid.values():
    spans.sort(key=lambda x: (x[0], -x[1]))
    stack = []
    for a, b in spans:
        while stack and stack[-1] <= a + 1e-3:
            stack.pop()
        assert not stack or b <= stack[-1] + 1e-3, "overlapping slices on one thread"
        stack.append(b)
print(f"trace ok: {len(events)} events, {len(counters)} counter tracks, {len(slices)} slices")
