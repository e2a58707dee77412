#!/usr/bin/env python3
"""One line of scripts/device-replay-tiers.sh's result: family, predicted vs measured energy and
time, the share of the kernel table's rows (and of its GPU time) per tier, and how many planned
conv and batchnorm rows ran through cuDNN or as their memory-bound stand-in, and attention rows
through cuDNN's fused SDPA or unfused.

    tiers_line.py FAMILY KERNELS.json REPLAY.json ENGINE.json
"""
import json
import sys


def cudnn_counts(items):
    """{tier: (through cuDNN, stand-ins)} of the engine's conv, batchnorm and attention items. A
    stand-in says `fallback` (a conv/batchnorm: `"tier": "other"`; an attention replayed unfused:
    `"tier": "attention_unfused"`); its planned tier is `fallback_of` (engines before it: the
    fallback line's first word). An attention item without `path` (engines before the SDPA tier)
    ran unfused."""
    counts = {"conv": [0, 0], "batchnorm": [0, 0], "attention": [0, 0]}
    for i in items:
        if i.get("status") != "ok":
            continue
        if i.get("fallback"):
            tier = i.get("fallback_of") or i["fallback"].split()[0]
            if tier in counts:
                counts[tier][1] += 1
        elif i.get("tier") == "attention":
            counts["attention"][0 if i.get("path") == "cudnn_sdpa" else 1] += 1
        elif i.get("tier") in counts:
            counts[i["tier"]][0] += 1
    return {t: tuple(c) for t, c in counts.items()}


def main():
    family, kernels_path, replay_path, engine_path = sys.argv[1:5]
    k = json.load(open(kernels_path))
    r = json.load(open(replay_path))
    c = r.get("comparison", {})
    rows = sum(t["rows"] for t in k["tiers"]) or 1
    gpu = sum(t["total_duration_s"] for t in k["tiers"]) or 1
    shares = ", ".join(f"{t['tier']} {100*t['rows']/rows:.0f}%/{100*t['total_duration_s']/gpu:.0f}%"
                       for t in sorted(k["tiers"], key=lambda t: -t["total_duration_s"]))
    try:
        items = json.load(open(engine_path)).get("items", [])
    except (OSError, ValueError):
        items = []
    words = {"attention": ("through cuDNN SDPA", "unfused")}
    cudnn_items = "; ".join(f"{tier} items: {n} {words.get(tier, ('through cuDNN',))[0]}, {s} {words.get(tier, ('', 'stand-ins'))[1]}"
                            for tier, (n, s) in cudnn_counts(items).items())
    if c:
        pe, me, pt, mt = c["predicted_energy_j"], c["measured_energy_j"], c["predicted_duration_s"], c["measured_duration_s"]
        fig = (f"energy predicted {pe:.1f} J vs measured {me:.1f} J ({100*c['energy_error']:+.1f}%), "
               f"time {pt:.3f} s vs {mt:.3f} s ({100*c['duration_error']:+.1f}%)")
    else:
        fig = "no comparison (the measured window was not found)"
    print(f"{family}: {fig}; rows/GPU time per tier: {shares}; {cudnn_items}")


if __name__ == "__main__":
    main()
