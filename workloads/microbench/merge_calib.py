#!/usr/bin/env python3
"""Merges estimate_calib.py's phases.json with jouleprof measure's result JSON into the
measurement set that `jouleprof estimate --calibrate/--validate` reads.

Usage: merge_calib.py PHASES.json MEASURE.json OUT.json [--hw h100-sxm]
Each item: the estimator's model spec (built-in model or micro-graph), options, the measured
latency per call (CUDA-synchronized wall time / iterations) and energy per call (jouleprof's
window energy / iterations, total GPU energy including idle), plus the SM clock and temperature
read at the end of the phase. Split: the phase's own split, except two model runs that calibrate
the eager framework's per-op host overhead (resnet50_b1, llama1b_decode_b1_c512) go to train.
"""
import json
import sys

phases_path, measure_path, out_path = sys.argv[1:4]
hw = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--hw" else "h100-sxm"
ph = json.load(open(phases_path))
me = json.load(open(measure_path))
wins = {w["name"]: w for w in me["windows"] if w.get("kind") != "run"}
TRAIN_MODELS = {"resnet50_b1", "llama1b_decode_b1_c512"}
items = []
for p in ph["phases"]:
    if "error" in p or p["name"] not in wins:
        continue
    w = wins[p["name"]]
    k = p["kind"]
    it = {"name": p["name"], "split": "train" if p["name"] in TRAIN_MODELS else p["split"], "eager": True,
          "precision": p.get("dtype", "bf16"), "options": {}}
    if k == "gemm":
        it["model"] = f"gemm:{p['M']}x{p['N']}x{p['K']}"
    elif k in ("copy", "add", "relu"):
        it["model"] = f"{k}:{p['elements']}"
    elif k in ("softmax", "layernorm"):
        it["model"] = f"{k}:{p['rows']}x{p['cols']}"
    elif k == "attention":
        it["model"] = f"attention:{p['B']},{p['H']},{p['Sq']},{p['Skv']},{p['D']}" + (",causal" if p["causal"] else "")
    elif k == "llama_prefill":
        it["model"] = p.get("model", "llama-3.2-1b")
        it["options"] = {"phase": "prefill", "batch": p["batch"], "prompt": p["prompt"]}
    elif k == "llama_decode":
        it["model"] = p.get("model", "llama-3.2-1b")
        it["options"] = {"phase": "decode", "batch": p["batch"], "context": p["context"], "kv_concat": True}
    elif k == "bert":
        it["model"] = p["model"]
        it["options"] = {"batch": p["batch"], "seq": p["seq"]}
    elif k == "vision":
        it["model"] = p["model"]
        it["options"] = {"batch": p["batch"]}
    else:
        continue
    it.update(latency_s=p["latency_s"], iters=p["iters"], energy_j=w["gpu_energy_j"] / p["iters"],
              energy_uncertainty_j=(w["gpus"][0].get("uncertainty_j") or 0) / p["iters"],
              window_s=w["duration_s"], window_energy_j=w["gpu_energy_j"],
              nvml_counter_energy_j=p.get("nvml_counter_energy_j", 0) / p["iters"],
              sm_clock_mhz=p.get("sm_clock_mhz"), temperature_c=p.get("temperature_c"))
    items.append(it)
g = me["gpus"][0]
out = {"schema_version": 1, "hw_id": hw,
       "provenance": {"gpu": g.get("name"), "uuid": g.get("uuid"), "driver": g.get("driver_version"),
                      "power_limit_w": g.get("power_limit_w"), "idle_power_w": g.get("idle_power_w"),
                      "started_at_utc": me.get("started_at_utc"), "torch": ph.get("torch"), "cuda": ph.get("cuda"),
                      "transformers": ph.get("transformers"), "torchvision": ph.get("torchvision"),
                      "jouleprof": me["provenance"].get("git_revision"),
                      "command": "scripts/device-estimate.sh (jouleprof measure -- workloads/microbench/estimate_calib.py)",
                      "llama1b_decode_kernels_per_step": ph.get("llama1b_decode_kernels_per_step")},
       "idle_power_w": g.get("idle_power_w"), "items": items}
json.dump(out, open(out_path, "w"), indent=1)
print(f"{len(items)} items -> {out_path}")
