#!/usr/bin/env python3
"""Summary of scripts/device-replay.sh's output folder: prediction vs measurement per model, the
per-tier breakdown, per-kernel repeatability (CI half-width of kernels >= 10 us) and the import
benchmark."""
import json
import os
import sys

out = sys.argv[1]
for name in ("llama", "bloom"):
    path = os.path.join(out, f"{name}_replay.json")
    if not os.path.exists(path):
        print(f"{name}: no replay result")
        continue
    r = json.load(open(path))
    p, c = r["prediction"], r.get("comparison", {})
    print(f"\n## {name}  (replay GPU {r['replay_gpu']}, gaps {r['gap_power_w']:.1f} W, idle {r['idle_power_w']:.1f} W)")
    if c:
        print(f"time   predicted {c['predicted_duration_s']:.4f} s  measured {c['measured_duration_s']:.4f} s  error {100*c['duration_error']:+.2f}%")
        u = c.get("measured_uncertainty_j", float("nan"))
        pu = p.get("predicted_energy_half_width_j", float("nan"))
        print(f"energy predicted {c['predicted_energy_j']:.3f} J +- {pu:.3f} ({100*pu/c['predicted_energy_j']:.2f}%)  "
              f"measured {c['measured_energy_j']:.3f} J +- {u:.3f} "
              f"({100*u/c['measured_energy_j']:.2f}%)  error {100*c['energy_error']:+.2f}%")
    ip = os.path.join(out, f"{name}_info.json")
    if os.path.exists(ip):
        info = json.load(open(ip))
        rs = info.get("repeat_seconds", [])
        if rs:
            print(f"repeats: {len(rs)}, each {min(rs):.4f}-{max(rs):.4f} s (spread {100*(max(rs)-min(rs))/min(rs):.2f}%)")
    ep = os.path.join(out, f"{name}_engine.json")
    if os.path.exists(ep):  # the energy counter at the trial edges against the power samples
        e = json.load(open(ep))
        print(f"engine: counter update period {1e3*e.get('counter_update_s', 0):.2f} ms (0: unknown)")
        ratios, notes = [], set()
        for it in e.get("items", []):
            if it.get("status") == "ok" and it.get("counter_mean_power_w"):
                ratios.append(it["counter_mean_power_w"] / it["power_w"] - 1)
            if it.get("counter_note"):
                notes.add(it["counter_note"])
        if ratios:
            ratios.sort()
            print(f"counter vs samples, {len(ratios)} rows: median {100*ratios[len(ratios)//2]:+.2f}%, "
                  f"range {100*ratios[0]:+.2f}% .. {100*ratios[-1]:+.2f}%")
        for n in sorted(notes)[:5]:
            print("counter note:", n)
        cx = e.get("context", {})
        if cx.get("counter_mean_power_w"):
            print(f"context: counter {cx['counter_mean_power_w']:.1f} W vs samples {cx['power_w']:.1f} W "
                  f"({cx.get('counter_trials')} trials, latest read {cx.get('counter_max_late_ms', 0):.2f} ms after its edge)")
        elif cx.get("counter_note"):
            print("context counter:", cx["counter_note"])
    print(f"kernels {p['kernel_energy_j']:.3f} J over {p['predicted_gpu_duration_s']*1e3:.2f} ms (traced {p['traced_gpu_duration_s']*1e3:.2f} ms); "
          f"gaps {p['gap_energy_j']:.3f} J over {p['gap_duration_s']*1e3:.2f} ms")
    print("| tier | rows | replayed | extrapolated | traced ms | replayed ms | predicted ms | predicted J |")
    print("|---|---|---|---|---|---|---|---|")
    for t in r["tiers"]:
        print(f"| {t['tier']} | {t['rows']} | {t['replayed_rows']} | {t['extrapolated_rows']} | {t['traced_duration_s']*1e3:.3f} | "
              f"{t.get('replayed_duration_s', float('nan'))*1e3:.3f} | {t['predicted_duration_s']*1e3:.3f} | {t['predicted_energy_j']:.4f} |")
    print(f"| gaps | | | | {p['gap_duration_s']*1e3:.3f} | {p['gap_duration_s']*1e3:.3f} | {p['gap_duration_s']*1e3:.3f} | {p['gap_energy_j']:.4f} |")
    ks = [k for k in r["kernels"] if k["status"] == "replayed"]
    long = [k for k in ks if k["replayed_mean_s"] >= 10e-6 and k["replayed_energy_per_call_j"] > 0]
    hw = sorted(100 * k["energy_per_call_half_width_j"] / k["replayed_energy_per_call_j"] for k in long)
    if hw:
        print(f"repeatability: {len(long)} replayed kernels >= 10 us: CI half-width median {hw[len(hw)//2]:.2f}%, max {hw[-1]:.2f}%, "
              f"{sum(1 for x in hw if x <= 2)} of {len(hw)} <= 2%")
    off = [k for k in ks if k.get("time_off_by_more_than_10_percent")]
    share = sum(k["count"] * k["traced_mean_s"] for k in off) / max(sum(k["count"] * k["traced_mean_s"] for k in ks), 1e-12)
    print(f"time check: {len(off)} of {len(ks)} replayed rows > 10% off their traced time ({100*share:.1f}% of replayed traced time)")
    cx = r.get("context", {})
    if cx.get("pass_duration_s"):
        print(f"context: {cx['activities']} activities ({cx['stand_ins']} stand-ins), traced {cx['traced_span_s']*1e3:.2f} ms, "
              f"replayed {cx['pass_duration_s']*1e3:.2f} ms, {cx['pass_energy_j']:.3f} J +- {cx['pass_energy_half_width_j']:.3f}; "
              f"isolated kernels {cx['isolated_duration_s']*1e3:.2f} ms {cx['isolated_energy_j']:.3f} J; "
              f"gaps {cx['gap_duration_s']*1e3:.2f} ms at {cx['gap_power_w']:.1f} W (isolated gap power {r.get('isolated_gap_power_w', 0):.1f} W)")
    elif cx:
        print(f"context: not measured: {cx.get('reason')}")
    if r.get("phases"):
        print("| phase | ranges | predicted s | measured s | time error | predicted J | measured J | energy error |")
        print("|---|---|---|---|---|---|---|---|")
        for ph in r["phases"]:
            ms, mj = ph.get("measured_duration_s"), ph.get("measured_energy_j")
            te = "-" if ms is None else "%+.1f%%" % (100 * ph["duration_error"])
            ee = "-" if mj is None else "%+.1f%%" % (100 * ph["energy_error"])
            print("| %s | %d | %.4f | %s | %s | %.3f | %s | %s |" % (ph["phase"], ph["ranges"], ph["predicted_duration_s"],
                  "-" if ms is None else "%.4f" % ms, te, ph["predicted_energy_j"],
                  "-" if mj is None else "%.3f ± %.3f" % (mj, ph.get("measured_uncertainty_j", 0)), ee))
    for w in r.get("warnings", []):
        print("warning:", w)
bp = os.path.join(out, "bench.json")
if os.path.exists(bp):
    b = json.load(open(bp))
    j, py = b["jouleprof"], b.get("python_json", {})
    print(f"\n## import: {b['file_mb']:.0f} MB, {b['events']} events")
    print(f"jouleprof {j['mb_per_s']:.0f} MB/s, peak RSS {j['peak_rss_mb']:.0f} MB; python json {py.get('mb_per_s', float('nan')):.0f} MB/s, "
          f"peak RSS {py.get('peak_rss_mb', float('nan')):.0f} MB; ratio {b.get('speedup', float('nan')):.1f}x")
