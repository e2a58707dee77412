"""HF Llama-3.2-1B architecture (random weights, bf16) generate() for `jouleprof trace` validation.

    python hf_generate.py [--annotate] [--reps N] [--prompt P] [--gen G] [--json OUT]

Times each generate() after a warm-up (CUDA-synchronised wall clock) and prints one JSON line.
With --annotate, jouleprof.torch adds NVTX ranges per module (depth 4) and prefill/decode phases.
With --kineto-cuda, the timed calls run inside torch.profiler recording CUDA activities only (the
peer tracer, Kineto on CUPTI: kernels, copies and the CUDA runtime calls); its trace is not saved.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))


def build():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                      num_attention_heads=32, num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5,
                      rope_theta=500000.0, max_position_embeddings=131072, tie_word_embeddings=True,
                      rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--annotate", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0, help="repeat generate() until this long has passed (overrides --reps)")
    ap.add_argument("--kineto-cuda", action="store_true")
    ap.add_argument("--compile", action="store_true", help="torch.compile(mode='reduce-overhead'): CUDA graphs, static KV cache")
    ap.add_argument("--json")
    a = ap.parse_args()
    model = build()
    ids = torch.randint(0, 128000, (a.batch, a.prompt), device="cuda")
    kw = dict(max_new_tokens=a.gen, min_new_tokens=a.gen, do_sample=False, pad_token_id=0)
    if a.compile:
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)
        kw["cache_implementation"] = "static"
    with torch.no_grad():
        for _ in range(3 if a.compile else 1):  # warm-up (compiling and capturing the graphs) before the hooks
            model.generate(ids, **kw)
        torch.cuda.synchronize()
        handle = None
        if a.annotate:
            import jouleprof.torch as jt
            handle = jt.annotate(model, depth=4)
        profiler = None
        if a.kineto_cuda:
            from torch.profiler import ProfilerActivity, profile
            profiler = profile(activities=[ProfilerActivity.CUDA])
            profiler.__enter__()
        times = []
        start = time.perf_counter()
        while (len(times) < a.reps) if a.seconds <= 0 else (time.perf_counter() - start < a.seconds):
            t0 = time.perf_counter()
            model.generate(ids, **kw)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        if profiler is not None:
            profiler.__exit__(None, None, None)
        if handle is not None:
            handle.finish()
    reps = len(times)
    times.sort()
    res = {"annotate": a.annotate, "compile": a.compile, "traced": "CUDA_INJECTION64_PATH" in os.environ, "kineto_cuda": a.kineto_cuda, "reps": reps,
           "prompt": a.prompt, "gen": a.gen, "batch": a.batch, "generate_s": times,
           "median_s": times[len(times) // 2], "tokens": reps * a.batch * (a.prompt + a.gen)}
    print("hf_generate " + json.dumps(res), flush=True)
    if a.json:
        json.dump(res, open(a.json, "w"))


if __name__ == "__main__":
    main()
