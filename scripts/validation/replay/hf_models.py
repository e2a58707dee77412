#!/usr/bin/env python3
"""Real PyTorch models (random weights from their public configs; nothing downloaded) run under
the PyTorch profiler, for `jouleprof kernels` / `jouleprof replay` (docs/validation/replay.md).

    python3 hf_models.py --model llama-3.2-1b --work generate --trace llama.json.gz
    jouleprof measure -- python3 hf_models.py ... --trace llama.json.gz   # markers: window "work"

The traced work is bracketed by a marker window "work" (after torch.cuda.synchronize()), so the
energy jouleprof measures is that of the very execution the trace records. `--repeat N` runs the
work N times inside that window, all of it traced: a measured window long enough for the energy
counter (its ~100 ms resolution is ±1% of a 10 s window, ±8% of a 1.2 s one).
"""
import argparse
import json
import os
import time

import torch
import transformers
from transformers import BloomConfig, BloomForCausalLM, LlamaConfig, LlamaForCausalLM

LLAMA_3_2_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                    num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True,
                    max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                    rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                  "original_max_position_embeddings": 8192, "rope_type": "llama3"})
BLOOM_560M = dict(vocab_size=250880, hidden_size=1024, n_layer=24, n_head=16)
MODELS = {
    "llama-3.2-1b": (LlamaConfig, LlamaForCausalLM, LLAMA_3_2_1B),
    "bloom-560m": (BloomConfig, BloomForCausalLM, BLOOM_560M),
    # Two-layer models of the same architectures, for small committed test traces.
    "llama-tiny": (LlamaConfig, LlamaForCausalLM, dict(LLAMA_3_2_1B, vocab_size=1024, hidden_size=256, intermediate_size=512,
                                                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)),
    "bloom-tiny": (BloomConfig, BloomForCausalLM, dict(vocab_size=1024, hidden_size=128, n_layer=2, n_head=4)),
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
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--work", choices=["generate", "forward"], required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=16, help="new tokens (generate)")
    ap.add_argument("--forwards", type=int, default=1, help="forward passes (forward)")
    ap.add_argument("--repeat", type=int, default=1, help="the work this many times in the traced, measured window")
    ap.add_argument("--trace", help="write the PyTorch profiler's Chrome trace here (.json or .json.gz)")
    ap.add_argument("--info", help="write a JSON of what ran here")
    args = ap.parse_args()

    torch.manual_seed(0)
    cfg_cls, model_cls, cfg = MODELS[args.model]
    config = cfg_cls(**cfg)
    with torch.device("cuda"):
        model = model_cls(config).to(torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.prompt), device="cuda")
    mark = Markers()

    # Phases of each traced generate: the first forward is the prefill, the rest the decode. Each
    # phase is a record_function range in the trace AND a marker window of the same name, both
    # ending after a synchronize, so `jouleprof replay` can compare them phase by phase (the
    # repeats' ranges and windows of one name are summed).
    phase = dict(active=False, calls=0, decode=None)
    if args.work == "generate":
        forward = model.forward

        def phased_forward(*a, **k):
            if not phase["active"]:
                return forward(*a, **k)
            phase["calls"] += 1
            if phase["calls"] > 1:
                return forward(*a, **k)
            torch.cuda.synchronize()
            mark(f"begin prefill t={time.time():.6f}")
            with torch.profiler.record_function("prefill"):
                out = forward(*a, **k)
                torch.cuda.synchronize()
            mark(f"end prefill t={time.time():.6f}")
            mark(f"begin decode t={time.time():.6f}")
            phase["decode"] = torch.profiler.record_function("decode")
            phase["decode"].__enter__()
            return out

        model.forward = phased_forward

    def work():
        if args.work == "generate":
            model.generate(ids, max_new_tokens=args.gen, min_new_tokens=args.gen, do_sample=False,
                           pad_token_id=0)
        else:
            for _ in range(args.forwards):
                model(ids, use_cache=False)

    with torch.inference_mode():
        work()  # warm-up: cuBLAS handles, kernel selection, allocator
        work()
        torch.cuda.synchronize()
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        prof = torch.profiler.profile(activities=acts, record_shapes=True) if args.trace else None
        if prof:
            prof.start()
        torch.cuda.synchronize()
        t0 = time.time()
        mark(f"begin work t={t0:.6f}")
        repeat_s = []
        for _ in range(args.repeat):
            r0 = time.time()
            phase.update(active=True, calls=0, decode=None)
            work()
            torch.cuda.synchronize()
            if phase["decode"] is not None:
                phase["decode"].__exit__(None, None, None)
                mark(f"end decode t={time.time():.6f}")
            phase["active"] = False
            repeat_s.append(time.time() - r0)
        t1 = time.time()
        mark(f"end work t={t1:.6f}")
        if prof:
            prof.stop()
            prof.export_chrome_trace(args.trace)
    info = dict(model=args.model, work=args.work, batch=args.batch, prompt=args.prompt, gen=args.gen,
                forwards=args.forwards, repeat=args.repeat, seconds=t1 - t0, repeat_seconds=repeat_s, torch=torch.__version__,
                transformers=transformers.__version__, gpu=torch.cuda.get_device_name(),
                attn=getattr(config, "_attn_implementation", None))
    print(json.dumps(info))
    if args.info:
        with open(args.info, "w") as f:
            json.dump(info, f)


if __name__ == "__main__":
    main()
