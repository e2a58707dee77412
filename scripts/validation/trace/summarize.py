"""Summary of scripts/device-trace.sh's outputs: conservation, dropped records, attribution
accuracy, overheads, the HF profile and the TP run. python3 summarize.py OUT_DIR"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]


def load(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return None
    try:
        return json.load(open(p))
    except Exception as e:  # noqa: BLE001
        print(f"{name}: unreadable ({e})")
        return None


def trace_of(r):
    t = r.get("trace") if r else None
    return json.loads(t) if isinstance(t, str) else t


def run_window(r):
    return next(w for w in r["windows"] if w["kind"] == "run")


print("== conservation and dropped records (every traced run)")
for p in sorted(glob.glob(os.path.join(out, "*.json"))):
    r = json.load(open(p))
    t = trace_of(r) if isinstance(r, dict) else None
    if not t:
        continue
    worst = 0.0
    for g in t["gpus"]:
        for m in g["methods"]:
            s = m["attributed_energy_j"] + m["idle_static_energy_j"] + m["unattributed_energy_j"]
            worst = max(worst, abs(s - m["measured_energy_j"]))
    print(f"{os.path.basename(p)}: activities {t['activities']}, dropped {t['dropped_records']}, complete {t['complete']}, "
          f"max |attributed+idle+unattributed-measured| = {worst:.3g} J, processes {len(t['processes'])}")

print("\n== attribution accuracy (per-class energy above idle vs each class alone), per round")


def split_of(g):
    return next(m for m in g["methods"] if m["method"] == "split")


def accuracy_round(r):
    """Expected per-class energy in a mixed run: (the class's power while busy alone - the mixed
    run's idle) x its busy time in the mixed run; every method's per-class error against it."""
    power = {}
    for c in ("gemm", "copy"):
        x = load(f"acc_{c}_r{r}.json")
        if not x:
            return
        g = trace_of(x)["gpus"][0]
        busy = sum(y["busy_s"] for y in split_of(g)["by_class"] if y["key"] == c)
        w = run_window(x)
        T = w["t1_s"] - w["t0_s"]
        gap = T - g["busy_s"]
        # total power while the class runs: the run's energy less its idle stretches at the baseline
        power[c] = (split_of(g)["measured_energy_j"] - g["idle_power_w"] * gap) / busy
        print(f"r{r} {c} alone: {T:.2f} s run, busy {busy:.3f} s, idle {g['idle_power_w']:.1f} W, "
              f"{power[c]:.1f} W while busy (measured {split_of(g)['measured_energy_j']:.1f} J by {g['measured_method']})")
    for case in ("burst", "fine", "long"):
        x = load(f"acc_{case}_r{r}.json")
        if not x:
            continue
        g = trace_of(x)["gpus"][0]
        w = run_window(x)
        T = w["t1_s"] - w["t0_s"]
        busy = {y["key"]: y["busy_s"] for y in split_of(g)["by_class"]}
        idle = g["idle_power_w"]
        truth = {c: (power[c] - idle) * busy.get(c, 0) for c in ("gemm", "copy")}
        above = split_of(g)["measured_energy_j"] - idle * T
        print(f"r{r} {case}: run {T:.2f} s, idle {idle:.1f} W, measured above idle {above:.1f} J; expected: "
              + ", ".join(f"{c} {truth[c]:.1f} J (busy {busy.get(c, 0):.2f} s)" for c in truth)
              + f" (sum {sum(truth.values()):.1f} J)")
        for m in g["methods"]:
            got = {y["key"]: y["energy_j"] for y in m["by_class"]}
            errs = [f"{c} {got.get(c, 0):.1f} J ({100 * (got.get(c, 0) - truth[c]) / truth[c]:+.1f}%)" for c in truth if truth[c]]
            extra = ""
            if m.get("class_fits"):
                extra = "; fit " + ", ".join(f"{c} {f['active_power_w']:.0f}±{f['stderr_w']:.0f} W" for c, f in m["class_fits"].items()) \
                    + f", static {m['intercept_power_w']:.0f} W, R² {m['r_squared']:.3f}"
            print(f"  {m['method']:10s} {'; '.join(errs)}; unattributed {m['unattributed_energy_j']:.1f} J{extra}")


for r in range(1, 10):
    accuracy_round(r)

print("\n== overhead: jouleprof-llm engine decode (tokens/s)")
def tps(name):
    r = load(name)
    if not r:
        return None
    rows = r.get("decode") or []
    return rows[0]["tokens_per_s"] if rows else None
for i in (1, 2):
    a, b = tps(f"eng_U{i}.json"), tps(f"eng_T{i}.json")
    if a and b:
        print(f"pair {i}: untraced {a:.1f}, traced {b:.1f} tok/s: {100 * (a / b - 1):+.2f}% slower")

for name in ("hf_H1.json", "hf_H2.json", "tp.json", "long.json"):
    r = load(name)
    t = trace_of(r) if r else None
    if not t:
        continue
    print(f"\n== {name}")
    for ph in t.get("phases", []):
        print(f"phase {ph['name']}: {ph['duration_s']:.3f} s, {ph['energy_j']:.2f} J ({ph['method']}), counts {ph['counts']}, "
              f"J/token {ph['energy_per_token_j']}")
    for g in t["gpus"]:
        split = next(m for m in g["methods"] if m["method"] == "split")
        print(f"GPU {g['gpu']}: kernels {g['kernels']}, busy {g['busy_s']:.2f} s, measured {split['measured_energy_j']:.1f} J, "
              f"idle/static {split['idle_static_energy_j']:.1f} J, attributed {split['attributed_energy_j']:.1f} J, "
              f"unattributed {split['unattributed_energy_j']:.1f} J")
        print("  classes: " + ", ".join(f"{x['key']} {x['energy_j']:.2f} J ({100 * x['share']:.1f}%)" for x in g["by_class"]))
        for key in ("by_component", "by_layer", "by_phase"):
            rows = g.get(key) or []
            if rows:
                print(f"  {key}: " + ", ".join(f"{x['key']} {x['energy_j']:.3f} J" for x in rows[:20]))
        print("  top kernels: " + "; ".join(f"{x['key'][:60]} {x['energy_j']:.2f} J" for x in g["by_kernel"][:6]))
