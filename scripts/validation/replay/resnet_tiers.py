#!/usr/bin/env python3
"""torchvision ResNet-50 inference (random weights) run back to back for >= --seconds inside a
marker window "work", all of it traced by the PyTorch profiler with shapes (record_shapes: the
convolutions' sizes, strides and concrete stride/padding/dilation/groups), for the shape tiers of
`jouleprof kernels` / `jouleprof replay` (scripts/device-replay-tiers.sh).

    jouleprof measure -- python3 resnet_tiers.py --batch 32 --trace resnet.json --info info.json
"""
import argparse

import torch
import torchvision

from traced_window import report, run_traced


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=7.5, help="the traced, measured window lasts at least this long")
    ap.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--trace", required=True, help="the PyTorch profiler's Chrome trace (.json or .json.gz)")
    ap.add_argument("--info", help="write a JSON of what ran here")
    args = ap.parse_args()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().eval().to(dtype=dtype, memory_format=fmt)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=dtype).to(memory_format=fmt)
    iters, seconds, per_iter = run_traced(lambda: model(x), args.seconds, args.trace)
    info = dict(model="resnet50", batch=args.batch, dtype=args.dtype, channels_last=args.channels_last, iterations=iters,
                seconds=seconds, untraced_iteration_s=per_iter, torch=torch.__version__, torchvision=torchvision.__version__,
                cudnn=torch.backends.cudnn.version(), gpu=torch.cuda.get_device_name())
    report(info, args.info)


if __name__ == "__main__":
    main()
