"""Tensor-parallel Llama-2-7B architecture (random bf16 weights) over the GPUs of a torchrun job,
for `jouleprof trace` on two GPUs: column-parallel QKV/gate/up, row-parallel O/down with an NCCL
all-reduce after each (Megatron style), KV cache, prefill then greedy decode.

    torchrun --nproc_per_node 2 tp_llama.py [--prompt 512] [--gen 64] [--reps 2] [--kineto DIR]

--kineto DIR: the last timed run under torch.profiler (record_shapes), one Kineto trace per rank,
DIR/rank<r>.json.gz (for `jouleprof kernels` / `replay` with several ranks; not under `jouleprof
trace`, whose CUPTI subscription the profiler's would collide with).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


def rms(x, w, eps=1e-5):
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, pos, theta=10000.0):
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos[:, None].float() * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)


class Layer:
    def __init__(self, h, ffn, heads, tp):
        self.hl = heads // tp
        self.hd = h // heads
        r = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16) * 0.02
        self.wqkv = r(3 * self.hl * self.hd, h)
        self.wo = r(h, self.hl * self.hd)
        self.wgu = r(2 * ffn // tp, h)
        self.wd = r(h, ffn // tp)
        self.n1 = torch.ones(h, device="cuda", dtype=torch.bfloat16)
        self.n2 = torch.ones(h, device="cuda", dtype=torch.bfloat16)
        self.k = self.v = None

    def __call__(self, x, pos):
        T = x.shape[0]
        qkv = F.linear(rms(x, self.n1), self.wqkv).view(T, 3, self.hl, self.hd)
        q, k, v = rope(qkv[:, 0].transpose(0, 1), pos), rope(qkv[:, 1].transpose(0, 1), pos), qkv[:, 2].transpose(0, 1)
        self.k = k if self.k is None else torch.cat([self.k, k], 1)
        self.v = v if self.v is None else torch.cat([self.v, v], 1)
        o = F.scaled_dot_product_attention(q[None], self.k[None], self.v[None], is_causal=T > 1)[0]
        o = F.linear(o.transpose(0, 1).reshape(T, -1), self.wo)
        dist.all_reduce(o)
        x = x + o
        g, u = F.linear(rms(x, self.n2), self.wgu).chunk(2, -1)
        m = F.linear(F.silu(g) * u, self.wd)
        dist.all_reduce(m)
        return x + m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--kineto", default="")
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, tp = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.manual_seed(0)
    h, ffn, heads, vocab = 4096, 11008, 32, 32000
    layers = [Layer(h, ffn, heads, tp) for _ in range(a.layers)]
    emb = torch.randn(vocab, h, device="cuda", dtype=torch.bfloat16) * 0.02
    head = torch.randn(vocab // tp, h, device="cuda", dtype=torch.bfloat16) * 0.02
    nvtx = torch.cuda.nvtx

    def forward(ids, pos):
        x = emb[ids]
        for i, l in enumerate(layers):
            nvtx.range_push(f"layers.{i}")
            x = l(x, pos)
            nvtx.range_pop()
        logits = F.linear(x[-1:], head)
        full = [torch.empty_like(logits) for _ in range(tp)]
        dist.all_gather(full, logits)
        return torch.cat(full, -1).argmax(-1)

    times = []
    with torch.no_grad():
        for rep in range(a.reps + 1):
            for l in layers:
                l.k = l.v = None
            ids = torch.randint(0, vocab, (a.prompt,), device="cuda")
            torch.cuda.synchronize()
            prof = None
            if a.kineto and rep == a.reps:
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                              record_shapes=True)
                prof.__enter__()
            t0 = time.perf_counter()
            nvtx.range_push("prefill")
            tok = forward(ids, torch.arange(a.prompt, device="cuda"))
            nvtx.range_pop()
            nvtx.range_push("decode")
            for s in range(a.gen):
                tok = forward(tok, torch.tensor([a.prompt + s], device="cuda"))
            nvtx.range_pop()
            torch.cuda.synchronize()
            if rep > 0:
                times.append(time.perf_counter() - t0)
            if prof is not None:
                prof.__exit__(None, None, None)
                os.makedirs(a.kineto, exist_ok=True)
                prof.export_chrome_trace(os.path.join(a.kineto, f"rank{rank}.json.gz"))
    if rank == 0:
        print(f"tp_llama tp={tp} prompt={a.prompt} gen={a.gen} per-run s: {[round(t, 3) for t in times]}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
