"""One model step run back to back for >= `seconds` inside the marker window "work" (jouleprof
measure's $JOULEPROF_MARKERS), all of it traced by the PyTorch profiler with shapes
(record_shapes: the ops' sizes, strides and concrete inputs), for the shape tiers of
`jouleprof kernels` / `jouleprof replay` (resnet_tiers.py, bert_tiers.py)."""
import json
import math
import os
import time

import torch


def run_traced(step, seconds, trace):
    """Warms `step` up, times it, then runs it >= `seconds` traced. Returns (iterations, traced
    seconds, untraced seconds per iteration)."""
    markers = os.environ.get("JOULEPROF_MARKERS")
    mark = open(markers, "w", buffering=1).write if markers else (lambda line: None)
    with torch.inference_mode():
        for _ in range(5):  # warm-up: cuDNN's algorithm choice, the allocator
            step()
        torch.cuda.synchronize()
        t = time.time()
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        per_iter = (time.time() - t) / 5
        iters = max(1, math.ceil(seconds / per_iter))
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        prof = torch.profiler.profile(activities=acts, record_shapes=True)
        prof.start()
        torch.cuda.synchronize()
        t0 = time.time()
        mark(f"begin work t={t0:.6f}\n")
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
        t1 = time.time()
        mark(f"end work t={t1:.6f}\n")
        prof.stop()
        prof.export_chrome_trace(trace)
    return iters, t1 - t0, per_iter


def report(info, path):
    """Prints what ran (one JSON line) and writes it to `path` when given."""
    print(json.dumps(info))
    if path:
        with open(path, "w") as f:
            json.dump(info, f)
