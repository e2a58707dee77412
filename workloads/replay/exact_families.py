"""Validation of the exact replay (docs/validation/replay.md): per model family, one step captured
as a CUDA graph and replayed kernel by kernel in child processes (jouleprof.replay.replay_step_isolated),
then the same step run back to back as the program runs it (captured again here, the graph
replayed) inside a measured window of >= 7 s (jouleprof.Monitor), and the prediction (steps × Σ rows) against the window.

    python3 exact_families.py --out results.json [--families resnet50,vit,...] [--window-s 7.5]

Models are built from their public configurations with random weights (bf16), nothing downloaded.

A family's rows with a kernel that faults when replayed alone (llama_decode_static's index_copy_),
isolated by restart in child processes (docs/replay.md, "Isolating a faulting kernel"); no window:

    python3 exact_families.py --out isolated.json --families llama_decode_static --isolated
    (on the GPU machine: EXACT_FLAGS=--isolated BUDGET_S=300 scripts/device-replay-exact.sh llama_decode_static)

Why a graph's nodes form more rows than its layers explain (the listing's warnings name the argument
words that keep rows of one kernel apart), seconds per family:

    EXACT_FLAGS=--list scripts/device-replay-exact.sh prefill,llama_decode_static

The rows' repeatability on one GPU: each family replayed twice, the second's rows against the first's
by row id (--product-trials: replay_step's own trial options, longer than this validation's):

    EXACT_FLAGS="--isolated --repeat 2 --product-trials" BUDGET_S=560 scripts/device-replay-exact.sh resnet50,bert
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time
import traceback

import torch

import jouleprof
from jouleprof.replay import capture, replay_step_isolated

DEV = "cuda"
PROFILE = os.environ.get("EXACT_PROFILE") == "1"
BF16 = torch.bfloat16


def llama_1b_config(layers=16):
    from transformers import LlamaConfig
    return LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=layers, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=8192,
                       rope_theta=500000.0, tie_word_embeddings=True, rms_norm_eps=1e-5)


def llm(cfg, attn="sdpa"):
    from transformers import LlamaForCausalLM
    cfg._attn_implementation = attn
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(DEV, BF16).eval()


def fam_resnet50(batch=128):
    try:
        import torchvision
        m = torchvision.models.resnet50()
        what = "torchvision ResNet-50"
    except ImportError:
        from transformers import ResNetConfig, ResNetForImageClassification
        m = ResNetForImageClassification(ResNetConfig())
        what = "transformers ResNet-50"
    m = m.to(DEV, BF16).eval().to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device=DEV, dtype=BF16).to(memory_format=torch.channels_last)
    return f"CNN: {what}, batch {batch}, forward", lambda: m(x)


def fam_vit(batch=128):
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig()  # ViT-Base/16, 224
    cfg._attn_implementation = "sdpa"
    m = ViTModel(cfg).to(DEV, BF16).eval()
    x = torch.randn(batch, 3, 224, 224, device=DEV, dtype=BF16)
    return f"ViT-Base/16, batch {batch}, forward", lambda: m(pixel_values=x).last_hidden_state


def fam_bert(batch=32, seq=512):
    from transformers import BertConfig, BertModel
    cfg = BertConfig()  # BERT-base
    cfg._attn_implementation = "sdpa"
    m = BertModel(cfg).to(DEV, BF16).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=DEV)
    return f"BERT-base encoder, batch {batch} x {seq}, forward", lambda: m(input_ids=ids).last_hidden_state


def fam_llama_decode(batch=8, prompt=512):
    # transformers' DynamicCache: the step's torch.cat reads the prompt's cache and writes a new one
    # (eager HF decode as it runs); captured once, each replay is the same step at position prompt.
    from transformers import DynamicCache
    cfg = llama_1b_config()
    m = llm(cfg)
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device=DEV)
    try:
        cache = DynamicCache(config=cfg)
    except TypeError:
        cache = DynamicCache()
    m(input_ids=ids, past_key_values=cache, use_cache=True)
    tok = torch.randint(0, cfg.vocab_size, (batch, 1), device=DEV)
    base = [(l.keys, l.values) for l in cache.layers]

    def step():
        for l, (k, v) in zip(cache.layers, base):  # back to the prompt's cache: the same step every call
            l.keys, l.values = k, v
        return m(input_ids=tok, past_key_values=cache, use_cache=True).logits
    return f"Llama-3.2-1B arch. eager decode step (DynamicCache), batch {batch}, at position {prompt}", step


def fam_llama_decode_static(batch=8, prompt=512):
    from transformers import StaticCache
    cfg = llama_1b_config()
    m = llm(cfg)
    try:
        cache = StaticCache(config=cfg, max_cache_len=prompt + 64)
    except TypeError:
        cache = StaticCache(config=cfg, max_batch_size=batch, max_cache_len=prompt + 64, device=DEV, dtype=BF16)
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device=DEV)
    m(input_ids=ids, past_key_values=cache, cache_position=torch.arange(prompt, device=DEV), use_cache=True)
    tok = torch.randint(0, cfg.vocab_size, (batch, 1), device=DEV)
    pos = torch.tensor([prompt], device=DEV)
    # transformers 5 writes at its own device counter (StaticLayer.cumulative_length), advanced in
    # place by each step; replayed back to back the step would write past the cache's end. Reset
    # inside the step: every replay is the same step at position prompt (docs/replay.md).
    counters = [c for c in (getattr(l, "cumulative_length", None) for l in getattr(cache, "layers", [])) if torch.is_tensor(c)]

    def step():
        for c in counters:
            c.fill_(prompt)
        return m(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True).logits
    return f"Llama-3.2-1B arch. eager decode step, static KV cache, batch {batch}, at position {prompt}", step


def fam_llama_compiled(batch=8, seq=256, layers=16):
    cfg = llama_1b_config(layers)
    m = llm(cfg)
    cm = torch.compile(m)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=DEV)
    return (f"Llama-3.2-1B arch. under torch.compile (Inductor/Triton), forward {batch} x {seq}",
            lambda: cm(input_ids=ids, use_cache=False).logits)


def fam_prefill(batch=16, seq=1024):
    cfg = llama_1b_config()
    m = llm(cfg)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=DEV)
    return f"Llama-3.2-1B arch. prefill {batch} x {seq} (GPU-bound)", lambda: m(input_ids=ids, use_cache=False).logits


def step_of(key):
    """A family's step alone, under inference mode: the factory jouleprof.replay.replay_step_isolated
    runs in its child (module-level, so the spawn child imports it by name)."""
    with torch.inference_mode():
        _, fn = FAMILIES[key]()

    def step():
        with torch.inference_mode():
            return fn()
    return step


FAMILIES = {"resnet50": fam_resnet50, "vit": fam_vit, "bert": fam_bert, "llama_compiled": fam_llama_compiled,
            "prefill": fam_prefill, "llama_decode": fam_llama_decode, "llama_decode_static": fam_llama_decode_static}
DEFAULT = "resnet50,vit,bert,llama_compiled,prefill,llama_decode"
# The StaticCache step's index_copy_ reads its write position from a temporary that later nodes of
# the step overwrite: replayed alone it reads a stale index and asserts (docs/replay.md). Its whole
# step is measured; no node alone.
FAMILY_OPTIONS = {"llama_decode_static": {"rows": False}}


def smi(q):
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except Exception as e:
        return f"? ({e})"


def run_family(key, mon, opts, window_s):
    t0 = time.time()
    # The rows in child processes, restarted past a row that faults alone (BERT's embedding gather
    # reads an index temporary that later nodes overwrite): a fault never reaches this process.
    r = replay_step_isolated(step_of, key, **{**opts, **FAMILY_OPTIONS.get(key, {})})
    t_replay = time.time() - t0
    with torch.inference_mode():
        what, fn = FAMILIES[key]()
    out = {"family": key, "work": what, "captured": r.captured, "replay_wall_s": t_replay, "isolation": r.data.get("isolation")}
    if not r.captured:
        out["reason"] = r.reason
        return out
    with torch.inference_mode():
        g, _ = capture(fn)  # the step as the program runs it, for the window
    # One step's time as the program runs it, to size the window.
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        g.replay()
    e0.record()
    for _ in range(5):
        g.replay()
    e1.record()
    torch.cuda.synchronize()
    step_s = e0.elapsed_time(e1) / 5e3
    steps = max(1, math.ceil(window_s / step_s))
    temp0 = smi("temperature.gpu,clocks.sm")
    with mon.window(key) as w:
        for _ in range(steps):
            g.replay()
    res = w.result if hasattr(w, "result") else w
    meas_e, meas_t = res.energy_j, res.duration_s
    pred_t, pred_e = r.predict(steps)
    p = r.prediction
    rows = r.rows
    long_rows = [x for x in rows if x["status"] == "measured" and x.get("time_s", 0) >= 10e-6]
    cis = sorted(x["energy_per_call_half_width_j"] / x["energy_per_call_j"] for x in long_rows if x["energy_per_call_j"] > 0)
    out.update({
        "steps": steps, "step_s_events": step_s, "nodes": r.data.get("nodes"), "rows": len(rows),
        "rows_measured": sum(1 for x in rows if x["status"] == "measured"),
        "rows_timed": sum(1 for x in rows if x["status"] == "timed"),
        "rows_failed": sum(1 for x in rows if x["status"] in ("failed", "not_measured")),
        "not_replayed": r.data.get("not_replayed"),
        "measured_energy_j": meas_e, "measured_uncertainty_j": res.uncertainty_j, "measured_method": res.method,
        "measured_time_s": meas_t, "predicted_energy_j": pred_e, "predicted_time_s": pred_t,
        "predicted_energy_half_width_j": steps * (r.step["energy_half_width_j"] if r.step.get("measured") else p.get("energy_half_width_j", 0.0)),
        "energy_error": pred_e / meas_e - 1, "time_error": pred_t / meas_t - 1,
        "kernel_time_share_of_window": pred_t / meas_t,
        "share_exact_measured": p.get("measured_share"), "share_exact_timed": p.get("timed_share"),
        "whole_graph_step": r.step, "whole_graph_energy_error": (steps * r.step["energy_j"] / meas_e - 1) if r.step.get("measured") else None,
        "rows_ge_10us": len(long_rows), "rows_ge_10us_within_2pct": sum(1 for c in cis if c <= 0.02),
        "ci_max": cis[-1] if cis else None, "ci_median": cis[len(cis) // 2] if cis else None,
        "temperature_clock_before_window": temp0, "temperature_clock_after_window": smi("temperature.gpu,clocks.sm"),
        "warnings": r.warnings, "exact": r.data,
    })
    if PROFILE:
        out["in_graph"] = in_graph_check(g, rows)
    del r, g
    torch.cuda.empty_cache()
    return out


def in_graph_check(g, rows, replays=3):
    """Each row's kernels as they run inside the whole graph (torch.profiler / CUPTI, matched by
    name, grid and block) against the row's isolated time: where Σ rows and the window differ."""
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            g.replay()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    in_graph = {}
    for e in trace.get("traceEvents", []):
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        a = e.get("args", {})
        key = (e.get("name"), tuple(a.get("grid", [])), tuple(a.get("block", [])))
        t, n = in_graph.get(key, (0.0, 0))
        in_graph[key] = (t + e.get("dur", 0) * 1e-6 / replays, n + 1)
    out, total_graph, total_rows = [], sum(t for t, _ in in_graph.values()), 0.0
    for x in rows:
        if "time_s" not in x:
            continue
        key = (x["name"], tuple(x["grid"]), tuple(x["block"]))
        iso = x["count"] * x["time_s"]
        total_rows += iso
        t, n = in_graph.pop(key, (None, 0))
        out.append({"name": x["name"][:100], "grid": x["grid"], "count": x["count"], "isolated_s": iso, "in_graph_s": t,
                    "in_graph_calls": n / replays, "status": x["status"]})
    out.sort(key=lambda d: -abs((d["in_graph_s"] or 0) - d["isolated_s"]))
    unmatched = sorted(((t, k[0][:100], n / replays) for k, (t, n) in in_graph.items()), reverse=True)
    return {"in_graph_total_s": total_graph, "rows_total_s": total_rows, "largest_differences": out[:12],
            "unmatched_in_graph": unmatched[:8]}


def run_list(args):
    """--list: per family, the step captured and listed only (no replay, seconds each): its nodes, rows,
    and the listing's warnings (rows of one kernel that argument words keep apart, with the words)."""
    from jouleprof import _jouleprof
    from jouleprof.replay import capture
    for key in args.families.split(","):
        with torch.inference_mode():
            _, fn = FAMILIES[key]()
            g, _ = capture(fn)
        groups, warnings = _jouleprof.list_cuda_graph(int(g.raw_cuda_graph()))
        res = {"family": key, "nodes": sum(n for _, _, n in groups), "rows": len(groups), "warnings": warnings}
        print(json.dumps(res), flush=True)
        del g
        torch.cuda.empty_cache()


def run_isolated(args, opts):
    """--isolated: per family, its rows replayed in child processes (replay_step_isolated): how many
    processes, which rows faulted, the rows' statuses and the Σ rows prediction; one JSON line each.
    --repeat N (>= 2): the family replayed N times, each repeat's rows against the first's
    (ExactReplay.compare: the issue's "row figures repeatable within 2%", on one GPU in one call)."""
    from collections import Counter

    from jouleprof.replay import replay_step_isolated
    results, firsts = [], {}
    for key in [k for k in args.families.split(",") for _ in range(max(1, args.repeat))]:
        t0 = time.time()
        r = replay_step_isolated(step_of, key, **{k: v for k, v in opts.items() if k != "quiet"})
        p = r.prediction
        res = {"family": key, "captured": r.captured, "wall_s": time.time() - t0, "isolation": r.data.get("isolation"),
               "rows": len(r.rows), "statuses": dict(Counter(x["status"] for x in r.rows)),
               "rows_time_s": p.get("time_s"), "rows_energy_j": p.get("energy_j"), "failed_node_share": p.get("failed_node_share"),
               "step": r.step, "gpu": smi("uuid,temperature.gpu,clocks.sm"), "warnings": r.warnings[:40], "row_list": r.rows}
        if key in firsts:
            c = firsts[key].compare(r)
            res["repeatability_vs_first"] = {k: v for k, v in c.items() if k != "rows"} | {"largest": c["rows"][:5]}
        else:
            firsts[key] = r
        results.append(res)
        print(json.dumps({k: v for k, v in res.items() if k not in ("warnings", "row_list")}), flush=True)
        with open(args.out, "w") as f:
            json.dump({"results": results}, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--families", default=DEFAULT)
    ap.add_argument("--window-s", type=float, default=7.5)
    ap.add_argument("--max-rows", type=int, default=20)
    ap.add_argument("--coverage", type=float, default=0.95)
    ap.add_argument("--isolated", action="store_true",
                    help="each family's rows through replay_step_isolated (child processes, restarted past a faulting row); no window")
    ap.add_argument("--list", action="store_true", help="each family's step captured and listed only: rows and the listing's warnings")
    ap.add_argument("--repeat", type=int, default=1, help="with --isolated: each family N times, rows compared with the first")
    ap.add_argument("--product-trials", action="store_true",
                    help="the product's own trial options (replay_step's defaults) instead of this validation's shorter ones")
    args = ap.parse_args()
    opts = dict(trials=4, trial_s=0.15, settle_s=0.2, warmup_s=2.0, long_trial_s=0.5, row_cap_s=2.5, max_trials=6,
                coverage=args.coverage, max_rows=args.max_rows, quiet=False)
    if args.product_trials:
        opts = dict(coverage=args.coverage, max_rows=args.max_rows, quiet=False)
    if args.list:
        return run_list(args)
    if args.isolated:
        return run_isolated(args, opts)
    info = {"gpu": smi("name,driver_version,power.limit"), "torch": torch.__version__, "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "options": opts}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    print(json.dumps(info), flush=True)
    mon = jouleprof.Monitor(device="nvml", idle_s=1.0, sync=torch.cuda.synchronize)
    results = []
    for key in args.families.split(","):
        t0 = time.time()
        try:
            res = run_family(key, mon, opts, args.window_s)
        except Exception as e:
            res = {"family": key, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                   "traceback": traceback.format_exc()[-3000:]}
        res["wall_s"] = time.time() - t0
        results.append(res)
        brief = {k: v for k, v in res.items() if k not in ("exact", "traceback", "warnings")}
        print(json.dumps(brief), flush=True)
        if "traceback" in res:
            print(res["traceback"], flush=True)
        with open(args.out, "w") as f:
            json.dump({"info": info, "results": results}, f, indent=1)
    mon.finish()
    print("\n| family | window s | measured J | predicted J | energy | time | kernel share | exact measured / timed | rows >=10us within 2% |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        if "energy_error" not in r:
            print(f"| {r['family']} | - | - | - | {r.get('error') or r.get('reason')} | | | | |")
            continue
        print(f"| {r['family']} | {r['measured_time_s']:.2f} | {r['measured_energy_j']:.1f} ± {r['measured_uncertainty_j']:.1f} | "
              f"{r['predicted_energy_j']:.1f} ± {r['predicted_energy_half_width_j']:.1f} | {100 * r['energy_error']:+.1f}% | "
              f"{100 * r['time_error']:+.1f}% | {r['kernel_time_share_of_window']:.2f} | "
              f"{100 * r['share_exact_measured']:.0f}% / {100 * r['share_exact_timed']:.0f}% | "
              f"{r['rows_ge_10us_within_2pct']}/{r['rows_ge_10us']} (max {100 * (r['ci_max'] or 0):.1f}%) |")


if __name__ == "__main__":
    main()
