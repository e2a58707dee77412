#!/usr/bin/env python3
"""transformers BertModel from BertConfig() (BERT-base: 12 layers, 12 heads of 64; random weights)
in bf16 with attn_implementation "sdpa", inference at --batch x --tokens, run back to back for >=
--seconds inside a marker window "work" and traced with shapes (traced_window.py), for the
attention tier of `jouleprof kernels` / `jouleprof replay` (scripts/device-replay-tiers.sh MODEL=bert).
No attention mask is passed, so PyTorch's SDPA takes its fused path (flash attention on sm80+).

    jouleprof measure -- python3 bert_tiers.py --batch 32 --tokens 512 --trace bert.json --info info.json
"""
import argparse

import torch
import transformers

from traced_window import report, run_traced


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--seconds", type=float, default=7.5, help="the traced, measured window lasts at least this long")
    ap.add_argument("--trace", required=True, help="the PyTorch profiler's Chrome trace (.json or .json.gz)")
    ap.add_argument("--info", help="write a JSON of what ran here")
    args = ap.parse_args()
    torch.manual_seed(0)
    cfg = transformers.BertConfig()
    model = transformers.BertModel._from_config(cfg, attn_implementation="sdpa", torch_dtype=torch.bfloat16)
    model = model.cuda().eval()
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.tokens), device="cuda")
    iters, seconds, per_iter = run_traced(lambda: model(input_ids=ids), args.seconds, args.trace)
    info = dict(model="bert-base (BertConfig(), random weights)", batch=args.batch, tokens=args.tokens, dtype="bf16",
                attn_implementation=model.config._attn_implementation, iterations=iters, seconds=seconds,
                untraced_iteration_s=per_iter, torch=torch.__version__, transformers=transformers.__version__,
                cudnn=torch.backends.cudnn.version(), gpu=torch.cuda.get_device_name())
    report(info, args.info)


if __name__ == "__main__":
    main()
