#!/usr/bin/env python3
"""A Llama-architecture model in PyTorch (random weights from a config; nothing downloaded),
prefill then greedy decode, with jouleprof phase markers:

    jouleprof measure -- python3 scripts/workloads/llama_markers.py --model llama-3.2-1b

Markers are written to the FIFO in $JOULEPROF_MARKERS (if set) with explicit wall-clock times
taken after torch.cuda.synchronize(), so each window covers the GPU work of its phase.
"""
import argparse
import os
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

CONFIGS = {
    # Layer shapes of the public Hugging Face configs.
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True),
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False),
}


class Markers:
    def __init__(self):
        path = os.environ.get("JOULEPROF_MARKERS")
        self.f = open(path, "w", buffering=1) if path else None

    def __call__(self, line):
        if self.f:
            self.f.write(line + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3.2-1b", choices=sorted(CONFIGS))
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
                      rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                      rms_norm_eps=1e-5, **CONFIGS[args.model])
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    mark = Markers()
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt), device="cuda")

    def generate(marked):
        torch.cuda.synchronize()
        if marked:
            mark(f"begin prefill t={time.time():.6f}")
        out = model(ids, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        if marked:
            mark(f"end prefill t={time.time():.6f}")
            mark(f"count tokens {args.prompt * args.batch} prefill")
            mark(f"begin decode t={time.time():.6f}")
        past = out.past_key_values
        for _ in range(args.gen):
            out = model(nxt, past_key_values=past, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        if marked:
            mark(f"end decode t={time.time():.6f}")
            mark(f"count tokens {args.gen * args.batch} decode")

    with torch.inference_mode():
        generate(marked=False)  # warm-up: cuBLAS handles, kernels, allocator
        for _ in range(args.repeats):
            t0 = time.time()
            generate(marked=True)
            print(f"{args.model}: prompt {args.prompt}, gen {args.gen}, batch {args.batch}: "
                  f"{time.time() - t0:.3f} s", flush=True)


if __name__ == "__main__":
    main()
