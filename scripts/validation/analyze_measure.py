#!/usr/bin/env python3
"""Turns the files written by scripts/device-validate.sh into the tables of
docs/validation/measure.md (markdown on stdout) and a resolution figure (PNG in OUT)."""
import csv
import datetime
import json
import os
import statistics
import sys
import time

D, OUT = sys.argv[1], sys.argv[2]


def load(name):
    with open(os.path.join(D, name)) as f:
        return json.load(f)


def timeline(name):
    series = {}
    with open(os.path.join(D, name)) as f:
        for row in csv.DictReader(f):
            if row["device"] != "gpu0":
                continue
            series.setdefault(row["metric"], []).append((float(row["t_s"]), float(row["value"])))
    return series


def windows(res, kind=None, name=None):
    return [w for w in res["windows"] if (kind is None or w["kind"] == kind) and (name is None or w["name"] == name)]


def between(s, a, b):
    return [v for t, v in s if a <= t <= b]


def fmt(x, d=1):
    return "n/a" if x is None else f"{x:.{d}f}"


gpu = load("steady.json")["gpus"][0]
print(f"Machine: {gpu['name']} ({gpu['uuid']}), driver {gpu['driver_version']}, power limit "
      f"{fmt(gpu['power_limit_w'], 0)} W; jouleprof {load('steady.json')['provenance']['git_revision']}; "
      f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.\n")

# 1. Resolution -------------------------------------------------------------------------------
sq = load("square50.json")
tl = timeline("square50.csv")
w = windows(sq, "phase", "square")[0]
a, b = w["t0_s"] + 2.0, w["t0_s"] + 8.0
print("## 1. Resolution: 50 ms on / 50 ms off bf16 GEMM load\n")
print("| series (gpu0) | source | samples in 6 s | mean W | min W | max W | stdev W |")
print("|---|---|---:|---:|---:|---:|---:|")
for metric, src in [("power_sample_w", "driver sample buffer (nvmlDeviceGetSamples), drained every 100 ms"),
                    ("power_instant_w", "field 186, polled every 100 ms"),
                    ("power_average_w", "nvmlDeviceGetPowerUsage (1-s average), polled every 100 ms")]:
    v = between(tl.get(metric, []), a, b)
    if v:
        print(f"| {metric} | {src} | {len(v)} | {statistics.mean(v):.0f} | {min(v):.0f} | {max(v):.0f} | "
              f"{statistics.pstdev(v):.0f} |")
samples = [(t, v) for t, v in tl["power_sample_w"] if a <= t <= a + 0.4]
avg = tl["power_average_w"]
print("\nExcerpt (0.4 s): driver samples vs the 1-s average polled at 100 ms\n")
print("| t (s) | sample W | GetPowerUsage W (latest poll) |")
print("|---:|---:|---:|")
for t, v in samples:
    last = [x for tt, x in avg if tt <= t]
    print(f"| {t:.3f} | {v:.0f} | {last[-1]:.0f} |" if last else f"| {t:.3f} | {v:.0f} | |")
spacing = [t2 - t1 for (t1, _), (t2, _) in zip(tl["power_sample_w"], tl["power_sample_w"][1:])]
print(f"\nSample spacing: median {1e3 * statistics.median(spacing):.1f} ms, "
      f"max {1e3 * max(spacing):.1f} ms over {len(spacing) + 1} samples.\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for metric, label, style in [("power_sample_w", "driver samples (~20 ms)", "-o"),
                                 ("power_instant_w", "field 186 polled @100 ms", "-s"),
                                 ("power_average_w", "GetPowerUsage polled @100 ms (1-s avg)", "-^")]:
        pts = [(t, v) for t, v in tl.get(metric, []) if a <= t <= a + 1.5]
        if pts:
            ax.plot([p[0] - a for p in pts], [p[1] for p in pts], style, ms=3, lw=1, label=label)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("power (W)")
    ax.set_title(f"{gpu['name']}: 50 ms on / 50 ms off GEMM load (jouleprof measure --timeline)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "measure-resolution.png"), dpi=110)
except Exception as e:  # the tables above stand without the figure
    print(f"(figure not drawn: {e})\n")

# 2. Consistency -------------------------------------------------------------------------------
print("## 2. Consistency: counter difference vs integrated sample timeline\n")
print("| workload | window | duration s | counter J | timeline J | timeline − counter |")
print("|---|---|---:|---:|---:|---:|")
worst = 0
for label, f, kind in [("steady GEMM", "steady.json", "run"), ("bursty 200/300 ms", "bursty.json", "run"),
                       ("square 50/50 ms", "square50.json", "run"), ("idle", "steady.json", "idle")]:
    for w in windows(load(f), kind):
        g = w["gpus"][0]
        if g["counter_energy_j"] is None:
            continue
        d = g["timeline_vs_counter"]
        if kind == "run":
            worst = max(worst, abs(d))
        print(f"| {label} | {w['name']} {w['run'] if w['run'] >= 0 else ''} | {w['duration_s']:.2f} | "
              f"{g['counter_energy_j']:.1f} | {g['timeline_energy_j']:.1f} | {100 * d:+.2f}% |")
print(f"\nLargest disagreement on the ≥ 10 s load windows: {100 * worst:.2f}%.\n")

# 3. Short windows ------------------------------------------------------------------------------
st = load("steady.json")
steady_w = statistics.mean(w["gpus"][0]["mean_power_w"] for w in windows(st, "run"))
bu = load("bursts16.json")
print("## 3. Short windows: 16 ms GEMM bursts from idle\n")
print(f"Reference: steady GEMM power {steady_w:.0f} W (mean of the steady runs above).\n")
print("| window | duration ms | energy J | ± J | method | within-window timeline J | mean W |")
print("|---|---:|---:|---:|---|---:|---:|")
bursts = [w for w in windows(bu, "phase") if w["name"].startswith("burst") and w["name"] != "bursts"]
for w in bursts:
    g = w["gpus"][0]
    print(f"| {w['name']} | {1e3 * w['duration_s']:.1f} | {g['energy_j']:.2f} | {g['uncertainty_j']:.2f} | "
          f"{g['method']} | {g['timeline_energy_j']:.2f} | {g['mean_power_w']:.0f} |")
enc = windows(bu, "phase", "bursts")
if enc:
    enc = enc[0]
    btl = timeline("bursts16.csv")["power_sample_w"]
    # The idle level between bursts: samples at least 150 ms after a burst and before the next.
    gaps = [v for t, v in btl if enc["t0_s"] <= t <= enc["t1_s"] and
            all(not (w["t0_s"] - 0.05 <= t <= w["t1_s"] + 0.15) for w in bursts)]
    p0 = statistics.median(gaps)
    dur = sum(w["duration_s"] for w in bursts)
    expect = enc["gpus"][0]["counter_energy_j"] - p0 * (enc["duration_s"] - dur)
    got = sum(w["gpus"][0]["energy_j"] for w in bursts)
    raw = sum(w["gpus"][0]["timeline_energy_j"] for w in bursts)
    unc = sum(w["gpus"][0]["uncertainty_j"] for w in bursts)
    print(f"\nCheck against the energy counter: the enclosing {enc['duration_s']:.2f} s window has "
          f"{enc['gpus'][0]['counter_energy_j']:.1f} J by counter; minus the idle level between bursts "
          f"({p0:.1f} W, median of {len(gaps)} samples) over the gaps, the {len(bursts)} bursts hold "
          f"**{expect:.1f} J**. Sum of the bursts' estimates: **{got:.1f} J** (± {unc:.1f} J summed); the "
          f"within-window timeline alone would say {raw:.1f} J.")
print()

# 4. Overhead ----------------------------------------------------------------------------------
print("## 4. Overhead: the same 1500 GEMMs bare and under `jouleprof measure`, interleaved\n")
pairs, bare, meas = [], [], []
with open(os.path.join(D, "overhead.txt")) as f:
    for line in f:
        p = line.split()
        if len(p) >= 4 and p[1] == "iters":
            (bare if p[0] == "bare" else meas).append(float(p[4]))
for x, y in zip(bare, meas):
    pairs.append(y / x - 1)
print("| pair | bare s | measured s | slowdown |")
print("|---:|---:|---:|---:|")
for i, (x, y) in enumerate(zip(bare, meas)):
    print(f"| {i + 1} | {x:.4f} | {y:.4f} | {100 * (y / x - 1):+.2f}% |")
if pairs:
    print(f"\nMedian slowdown {100 * statistics.median(pairs):+.2f}% over {len(pairs)} pairs.")
cpu = []
for name in ["steady.json", "bursty.json", "llama1b.json"]:
    r = load(name)
    cpu.append((name, r["provenance"]["sampler_cpu_s"], r["duration_s"]))
print("\n| measurement | sampler thread CPU s | wall s | share of one core |")
print("|---|---:|---:|---:|")
for name, c, dur in cpu:
    print(f"| {name} | {c:.3f} | {dur:.1f} | {100 * c / dur:.2f}% |")
print()

# 5. nvidia-smi agreement ------------------------------------------------------------------------
print("## 5. Agreement with nvidia-smi on the steady load\n")
smi = []
with open(os.path.join(D, "smi.csv")) as f:
    for row in csv.reader(f):
        try:
            ts = time.mktime(datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timetuple())
            ms = int(row[0].strip().split(".")[-1]) / 1000.0
            vals = [float(x) if x.strip() not in ("[N/A]", "N/A") else None for x in row[1:]]
            smi.append((ts + ms, vals))
        except (ValueError, IndexError):
            continue
origin = st["origin_realtime_ns"] / 1e9
stl = timeline("steady.csv")
print("Same interval for every column: each steady run less its first 2 s (the 1-s average settling) "
      "and last 0.5 s. The counter column is the difference of the energy-counter reads inside the "
      "interval (taken every 5 s) over their time difference.\n")
print("| run | interval | nvidia-smi power.draw W | nvidia-smi power.draw.instant W | jouleprof samples W | jouleprof counter W |")
print("|---|---|---:|---:|---:|---:|")
for w in windows(st, "run"):
    a, b = w["t0_s"] + 2, w["t1_s"] - 0.5  # skip the 1-s average's settling
    rows = [v for t, v in smi if origin + a <= t <= origin + b]
    draw = [v[0] for v in rows if v and v[0] is not None]
    inst = [v[1] for v in rows if len(v) > 1 and v[1] is not None]
    s = between(stl["power_sample_w"], a, b)
    reads = [(t, v) for t, v in stl.get("energy_j", []) if a <= t <= b]
    ctr = (reads[-1][1] - reads[0][1]) / (reads[-1][0] - reads[0][0]) if len(reads) >= 2 else None
    print(f"| {w['run']} | {a:.1f}–{b:.1f} s | {fmt(statistics.mean(draw) if draw else None)} | "
          f"{fmt(statistics.mean(inst) if inst else None)} | {fmt(statistics.mean(s) if s else None)} | "
          f"{fmt(ctr)} |")
print()

# 6. A real workload -----------------------------------------------------------------------------
ll = load("llama1b.json")
print("## 6. PyTorch Llama-3.2-1B (random weights, bf16, eager), prompt 128, 128 generated tokens\n")
print(f"Idle baseline {fmt(ll['gpus'][0]['idle_power_w'])} W. Each row is one marked phase.\n")
print("| phase | duration ms | GPU energy J | ± J | method | above idle J | tokens | J/token | above-idle J/token |")
print("|---|---:|---:|---:|---|---:|---:|---:|---:|")  # note column omitted; see the JSON
for w in windows(ll, "phase"):
    g = w["gpus"][0]
    n = w["counts"].get("tokens", 0)
    ai = w["gpu_above_idle_energy_j"]
    print(f"| {w['name']} | {1e3 * w['duration_s']:.1f} | {w['gpu_energy_j']:.2f} | {g['uncertainty_j']:.2f} | "
          f"{g['method']} | {fmt(ai, 2)} | {n:.0f} | {w['gpu_energy_j'] / n:.4f} | "
          f"{fmt(ai / n if ai is not None and n else None, 4)} |")
s = ll["statistics"]
for k in ["phase:prefill:gpu_energy_per_tokens_j", "phase:decode:gpu_energy_per_tokens_j"]:
    if k in s:
        print(f"\n{k}: mean {s[k]['mean']:.4f} J, 95% CI ± {s[k]['ci95_half_width']:.4f} J (n={s[k]['n']})")
