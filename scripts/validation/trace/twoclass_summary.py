"""Summary of `scripts/device-trace.sh twoclass`: replay-informed per-class energy of the two-class
workload against the classes' known energy (issue 33: within 5% for 5-30 ms bursts and 0.2-2 ms
kernels).

    python3 twoclass_summary.py OUT

Known: each class alone (OUT/tc_gemm.json, tc_copy.json) gives its power while busy, P_c = (the
run's energy - its idle power x the idle stretches) / the class's busy time; in a mixed run the
class's energy above idle is then (P_c - the mixed run's idle power) x its busy time there, as in
summarize.py's accuracy check. Replay-informed: the `replay` method's per-class energy in the mixed
runs attributed again with --replay (OUT/tc_burst.json, tc_fine.json; else the runs as traced,
tc_NAME_insitu.json); the split's figures beside it.
"""
import json
import os
import sys


def trace_of(path):
    r = json.load(open(path))
    t = r.get("trace")
    return json.loads(t) if isinstance(t, str) else t, r


def method(g, name):
    return next((m for m in g["methods"] if m["method"] == name), None)


def run_seconds(r):
    w = next(w for w in r["windows"] if w["kind"] == "run")
    return w["t1_s"] - w["t0_s"]


def busy_power(out, c):
    """A class's power while busy, alone (W)."""
    t, r = trace_of(os.path.join(out, f"tc_{c}.json"))
    g = t["gpus"][0]
    split = method(g, "split")
    busy = sum(y["busy_s"] for y in split["by_class"] if y["key"] == c)
    gap = run_seconds(r) - g["busy_s"]
    return (split["measured_energy_j"] - g["idle_power_w"] * gap) / busy


def main():
    out = sys.argv[1]
    try:
        power = {c: busy_power(out, c) for c in ("gemm", "copy")}
    except (OSError, KeyError, StopIteration, ValueError, ZeroDivisionError) as e:
        print(f"twoclass: the classes' runs alone are not readable ({e}): no known figures")
        return 1
    print("known power while busy, alone: " + ", ".join(f"{c} {p:.1f} W" for c, p in power.items()))
    print("\n| regime | class | known J | replay-informed J | error | split J | split error |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    notes = []
    for case, label in (("burst", "5-30 ms bursts"), ("fine", "0.2-2 ms kernels")):
        path = os.path.join(out, f"tc_{case}.json")
        if not os.path.exists(path):  # the replay could not be used: the in-situ methods' figures
            path = os.path.join(out, f"tc_{case}_insitu.json")
        try:
            t, _ = trace_of(path)
            g = t["gpus"][0]
        except (OSError, KeyError, ValueError) as e:
            print(f"| {label} | (run not readable: {e}) | | | | | |")
            worst = float("inf")
            continue
        split, rep = method(g, "split"), method(g, "replay")
        busy = {y["key"]: y["busy_s"] for y in split["by_class"]}
        for c in ("gemm", "copy"):
            known = (power[c] - g["idle_power_w"]) * busy.get(c, 0)
            s = next((y["energy_j"] for y in split["by_class"] if y["key"] == c), 0.0)
            if rep is None:
                print(f"| {label} | {c} | {known:.1f} | (no replay method: was --replay given?) | | {s:.1f} | {100 * (s / known - 1):+.1f}% |")
                worst = float("inf")
                continue
            x = next((y["energy_j"] for y in rep["by_class"] if y["key"] == c), 0.0)
            err = 100 * (x / known - 1)
            worst = max(worst, abs(err))
            print(f"| {label} | {c} | {known:.1f} | {x:.1f} | {err:+.1f}% | {s:.1f} | {100 * (s / known - 1):+.1f}% |")
        info = g.get("replay") or {}
        notes.append(f"{label}: replay scale {info.get('scale')}, unmatched busy share {info.get('unmatched_busy_share')}")
    for n in notes:
        print(n)
    print(f"worst replay-informed error {worst:.1f}% (target 5%): {'met' if worst <= 5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
