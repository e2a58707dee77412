#!/usr/bin/env python3
"""jouleprof's Python API and Zeus's ZeusMonitor on the same process and GPU (docs/validation/python.md).

A Hugging Face Llama-3.2-1B-architecture model (random weights from its config; nothing
downloaded) generates greedily; prefill and decode are windows. Repeats alternate between the
two monitors (A, B, A, B ...) so that neither one's calls sit inside the other's windows. Then
the per-call cost of a begin+end pair of each, and of one NVML energy-counter read.

    PYTHONPATH=DIR_WITH_jouleprof:ZEUS_SRC python3 scripts/validation/python_vs_zeus.py --out OUT_DIR
"""
import argparse
import json
import statistics
import subprocess
import time

import pynvml
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import jouleprof

try:
    from zeus.monitor import ZeusMonitor
except Exception as e:  # ImportError or an error on import; still measure jouleprof's side, and say so
    print(f"Zeus not importable: {e}")
    ZeusMonitor = None

LLAMA_3_2_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                    num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True,
                    max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                    rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                  "original_max_position_embeddings": 8192, "rope_type": "llama3"})


def gpu_state():
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,temperature.gpu,clocks.sm,clocks.mem,power.draw,power.limit",
                          "--format=csv,noheader", "-i", "0"], capture_output=True, text=True)
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", default="128,1024")
    ap.add_argument("--gen", default="128")
    args = ap.parse_args()
    prompts = [int(x) for x in args.prompts.split(",")]
    gens = [int(x) for x in args.gen.split(",")]

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(LlamaConfig(**LLAMA_3_2_1B)).to(torch.bfloat16).eval()
    sync = torch.cuda.synchronize

    jp = jouleprof.Monitor(gpus=[0], idle_s=2.0, sync=sync)
    zeus = None
    if ZeusMonitor:
        try:  # defaults: the energy counter at both edges (approx_instant_energy=False), torch sync
            zeus = ZeusMonitor(gpu_indices=[0])
        except Exception as e:  # still measure jouleprof's side, and say why
            print(f"ZeusMonitor failed: {type(e).__name__}: {e}")
    tools = ("jouleprof", "zeus") if zeus else ("jouleprof",)

    def generate(prompt, gen, begin, end):
        ids = torch.randint(0, LLAMA_3_2_1B["vocab_size"], (1, prompt), device="cuda")
        sync()
        begin("prefill")
        out = model(ids, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        pre = end("prefill")
        begin("decode")
        past = out.past_key_values
        for _ in range(gen):
            out = model(nxt, past_key_values=past, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[:, -1:].argmax(-1)
        dec = end("decode")
        return pre, dec

    rows = []
    with torch.inference_mode():
        for p in prompts:
            for g in gens:  # warm-up at every cache length measured: kernels, cuBLAS handles
                generate(p, g, lambda n: None, lambda n: None)
        time.sleep(1.0)
        for rep in range(args.repeats):
            for p in prompts:
                for g in gens:
                    for tool in tools:
                        if tool == "jouleprof":
                            pre, dec = generate(p, g, jp.begin_window, jp.end_window)
                            pre, dec = pre.resolve(), dec.resolve()
                            fig = [(w, w.energy_j, w.duration_s, w.method, w.uncertainty_j) for w in (pre, dec)]
                        else:
                            pre, dec = generate(p, g, zeus.begin_window, zeus.end_window)
                            fig = [(None, w.total_energy, w.time, "counter (Zeus)", None) for w in (pre, dec)]
                        for phase, (_, e, d, method, unc) in zip(("prefill", "decode"), fig):
                            rows.append(dict(rep=rep, tool=tool, prompt=p, gen=g, phase=phase, energy_j=e,
                                             duration_s=d, method=method, uncertainty_j=unc,
                                             tokens=p if phase == "prefill" else g))
                        time.sleep(0.3)
        state_after = gpu_state()

    # Per-call cost on the caller's thread (no GPU work in between; sync not counted).
    def pair_cost(begin, end, n):
        t = []
        for i in range(n):
            t0 = time.perf_counter_ns()
            begin("cost")
            end("cost")
            t.append(time.perf_counter_ns() - t0)
        return t

    jp_nosync = jouleprof.Monitor(gpus=[0], idle_s=0)
    jp_cost = pair_cost(jp_nosync.begin_window, jp_nosync.end_window, 5000)
    jp_nosync.finish(close_open=True)
    zeus_cost = pair_cost(lambda n: zeus.begin_window(n, sync_execution=False),
                          lambda n: zeus.end_window(n, sync_execution=False), 100) if zeus else [0]
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    nv = []
    for _ in range(200):
        t0 = time.perf_counter_ns()
        pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        nv.append(time.perf_counter_ns() - t0)

    m = jp.finish(store=f"{args.out}/runs.db", tags={"workload": "hf-llama-3.2-1b", "tool": "python-api"})
    with open(f"{args.out}/jouleprof-result.json", "w") as f:
        f.write(m.to_json())

    def us(v):
        return dict(median_us=statistics.median(v) / 1e3, p10_us=sorted(v)[len(v) // 10] / 1e3,
                    p90_us=sorted(v)[9 * len(v) // 10] / 1e3, n=len(v))

    cost = {"jouleprof_begin_end_pair": us(jp_cost), "zeus_begin_end_pair": us(zeus_cost),
            "nvml_energy_counter_read": us(nv)}
    summary = []
    for p in prompts:
        for g in gens:
            for phase in ("prefill", "decode"):
                line = dict(prompt=p, gen=g, phase=phase)
                for tool in tools:
                    sel = [r for r in rows if r["tool"] == tool and r["prompt"] == p and r["gen"] == g
                           and r["phase"] == phase]
                    e = [r["energy_j"] for r in sel]
                    line[tool] = dict(energy_j=e, median_energy_j=statistics.median(e),
                                      median_duration_ms=1e3 * statistics.median(r["duration_s"] for r in sel),
                                      zero_readings=sum(1 for x in e if x == 0),
                                      methods=sorted({r["method"] for r in sel}))
                summary.append(line)
    result = dict(gpu_after=state_after, measurement_warnings=m.warnings, run_id=m.run_id, rows=rows,
                  cost=cost, summary=summary, jouleprof_version=jouleprof.__version__)
    with open(f"{args.out}/python_vs_zeus.json", "w") as f:
        json.dump(result, f, indent=1)

    print(f"GPU after: {state_after}")
    print(f"{'prompt':>6} {'gen':>4} {'phase':8} {'ms':>7} | {'jouleprof J (median; all)':40} | {'Zeus J (median; all)':40}")
    for s in summary:
        j = s["jouleprof"]
        z = s.get("zeus", dict(median_energy_j=float("nan"), energy_j=[], zero_readings=0))
        print(f"{s['prompt']:>6} {s['gen']:>4} {s['phase']:8} {j['median_duration_ms']:7.1f} | "
              f"{j['median_energy_j']:8.3f}; {' '.join(f'{x:.2f}' for x in j['energy_j']):30} | "
              f"{z['median_energy_j']:8.3f}; {' '.join(f'{x:.2f}' for x in z['energy_j']):30} "
              f"({z['zero_readings']} zero)  {','.join(j['methods'])}")
    for k, v in cost.items():
        print(f"{k:28} median {v['median_us']:9.2f} us  p10 {v['p10_us']:9.2f}  p90 {v['p90_us']:9.2f}  (n={v['n']})")


if __name__ == "__main__":
    main()
