"""A real Kineto trace of torch.compile'd work (Inductor/Triton kernels, whose cpu_ops carry
"grid" strings and CUDA-graph ids), for the import benchmark (scripts/device-kineto-import.sh).

    python3 compiled_trace.py OUT.json [--steps N] [--layers L] [--mode default|reduce-overhead]
"""
import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=400)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--mode", default="default")
a = ap.parse_args()
cfg = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=a.layers, num_attention_heads=32,
                  num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True)
torch.manual_seed(0)
m = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
cm = torch.compile(m, mode=a.mode)
ids = torch.randint(0, cfg.vocab_size, (4, 128), device="cuda")
t0 = time.time()
with torch.inference_mode():
    for _ in range(3):
        cm(input_ids=ids, use_cache=False)
    torch.cuda.synchronize()
    print(f"compiled in {time.time() - t0:.1f} s", flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(a.steps):
            cm(input_ids=ids, use_cache=False)
        torch.cuda.synchronize()
t0 = time.time()
prof.export_chrome_trace(a.out)
print(f"exported {a.out} in {time.time() - t0:.1f} s", flush=True)
