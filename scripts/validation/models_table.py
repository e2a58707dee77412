#!/usr/bin/env python3
"""The results tables of docs/validation/models.md from scripts/validate-models-v100.sh's JSON."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1] if len(sys.argv) > 1 else "models-v100-nested")


def row(name, j, sec=None):
    s = j if sec is None else j[sec]
    o = {x["objective"]: x for x in s["optimizer"]}
    e = o["energy"]
    ov = s["overall"]
    chosen = s.get("designs_chosen") or j.get("protocol", {}).get("designs_chosen", "")
    return (f"| {name} | {ov['power_mape_pct']:.2f} | {ov['time_mape_pct']:.2f} | {ov['energy_mape_pct']:.2f} | "
            f"{e['mean_energy_excess_pct']:.2f} / {e['within_2pct']} of {e['compared_with_measured']} | "
            + " | ".join(f"{o[k]['mean_objective_excess_pct']:.2f} / {o[k]['within_2pct']}" for k in ("edp", "ed2p", "slowdown:5"))
            + f" | {chosen} |")


print("| run | P MAPE % | T MAPE % | E MAPE % | energy: mean excess % / within 2% | edp | ed2p | slowdown:5 | designs chosen |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for f in sorted(out.glob("*.json")):
    j = json.loads(f.read_text())
    print(row(f.stem, j))
    if "locked_set" in j:
        print(row(f.stem + " LOCKED SET", j, "locked_set"))
