"""A Hugging Face Llama decoder compiled and launched as a CUDA graph, step after step, as a CUDA-graph
server runs it: the tracing overhead (a) of issue 33 on graph-launched work (docs/validation/trace.md).

    python graph_decode.py [--small] [--eager] [--batch B] [--prompt P] [--steps N] [--seconds S]

The model (random weights, bf16; --small: 4 layers of width 1024, as hf_generate.py) gets a static KV
cache filled by a prompt. One decode step (the model at position P, its next token's argmax) is
compiled with torch.compile (Inductor/Triton; --eager: not compiled), warmed up, and captured as one
CUDA graph. Each timed call replays the graph N times (default 32) and synchronises; calls are timed
for S seconds after a warm-up. The step resets transformers' StaticCache write counter inside itself,
so every replay is the same step (docs/replay.md, "Steps that change state"). Prints one JSON line,
`graph_decode {...}` (calls_s: each call's seconds); a failure prints `graph_decode_error {...}`, exit 3.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from hf_generate import build  # noqa: E402


def fail(stage, e):
    print("graph_decode_error " + json.dumps({"stage": stage, "error": f"{type(e).__name__}: {e}"[:2000]}), flush=True)
    sys.exit(3)


def decode_step(model, batch, prompt):
    from transformers import StaticCache
    cfg = model.config
    try:
        cache = StaticCache(config=cfg, max_cache_len=prompt + 64)
    except TypeError:
        cache = StaticCache(config=cfg, max_batch_size=batch, max_cache_len=prompt + 64, device="cuda", dtype=torch.bfloat16)
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    with torch.inference_mode():
        model(input_ids=ids, past_key_values=cache, cache_position=torch.arange(prompt, device="cuda"), use_cache=True)
    tok = torch.randint(0, cfg.vocab_size, (batch, 1), device="cuda")
    pos = torch.tensor([prompt], device="cuda")
    counters = [c for c in (getattr(l, "cumulative_length", None) for l in getattr(cache, "layers", [])) if torch.is_tensor(c)]

    def step():
        for c in counters:
            c.fill_(prompt)
        return model(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True).logits[:, -1].argmax(-1)
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--eager", action="store_true", help="capture the eager step (no torch.compile)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=3)
    a = ap.parse_args()
    try:
        model = build(a.small)
        step = decode_step(model, a.batch, a.prompt)
    except Exception as e:
        fail("model", e)
    t0 = time.perf_counter()
    try:
        fn = step if a.eager else torch.compile(step)
        with torch.inference_mode():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            for _ in range(50):
                g.replay()
            torch.cuda.synchronize()
    except Exception as e:
        fail("capture", e)
    warmup_s = time.perf_counter() - t0
    calls = []
    start = time.perf_counter()
    while time.perf_counter() - start < a.seconds or len(calls) < 3:
        c0 = time.perf_counter()
        for _ in range(a.steps):
            g.replay()
        torch.cuda.synchronize()
        calls.append(time.perf_counter() - c0)
    print("graph_decode " + json.dumps({"small": a.small, "compiled": not a.eager, "batch": a.batch, "prompt": a.prompt,
                                        "steps": a.steps, "warmup_s": warmup_s, "calls_s": calls}), flush=True)


if __name__ == "__main__":
    main()
