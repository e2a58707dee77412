# The prediction's ± (the formula of src/replay/replay.cpp) from archived replay results + engine outputs:
#   python3 prediction_half_width.py run1 run2   (each run*/NAME.tgz untarred into run*/NAME/)
import json, math, sys
for d in sys.argv[1:]:
    for name in ("bloom", "llama"):
        try:
            r = json.load(open(f"{d}/{name}/{name}_replay.json"))
            e = json.load(open(f"{d}/{name}/{name}_engine.json"))
        except FileNotFoundError:
            continue
        rows = {k["row"]: k for k in r["kernels"]}
        cx = r["context"]
        iso_var = 0
        for key, n in e["context"]["row_counts"].items():
            k = rows[int(key)]
            if k["status"] == "replayed":
                iso_var += (n * k["energy_per_call_half_width_j"]) ** 2
        gap_hw = math.sqrt(cx["pass_energy_half_width_j"] ** 2 + iso_var) / cx["gap_duration_s"]
        p = r["prediction"]
        var = (gap_hw * p["gap_duration_s"]) ** 2
        for k in r["kernels"]:
            if k["status"] == "replayed" and k.get("replayed_energy_per_call_j", 0) > 0:
                var += (k["count"] * k["energy_per_call_half_width_j"] * k["energy_per_call_j"] / k["replayed_energy_per_call_j"]) ** 2
        hw = math.sqrt(var)
        c = r["comparison"]
        print(f"{d} {name}: gap power {cx['gap_power_w']:.1f} ± {gap_hw:.1f} W; predicted {p['predicted_energy_j']:.1f} ± {hw:.1f} J "
              f"({100*hw/p['predicted_energy_j']:.1f}%); measured {c['measured_energy_j']:.1f} ± {c.get('measured_uncertainty_j', float('nan')):.1f}; "
              f"error {100*c['energy_error']:+.2f}%, time {100*c['duration_error']:+.2f}%")
