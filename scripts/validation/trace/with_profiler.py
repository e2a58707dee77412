"""A program that uses CUPTI itself: matrix products before, inside and after a torch.profiler
window, for `jouleprof trace` (issue 16: such a workload is detected and reported, not broken).

    python with_profiler.py [--before N] [--inside N] [--after N]

Prints one JSON line: the products run in each part and whether the profiler saw kernels.
"""
import argparse
import json

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=int, default=200)
    ap.add_argument("--inside", type=int, default=200)
    ap.add_argument("--after", type=int, default=200)
    a = ap.parse_args()
    x = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)

    def work(n):
        for _ in range(n):
            torch.mm(x, x)
        torch.cuda.synchronize()

    work(a.before)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        work(a.inside)
    seen = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    work(a.after)
    print("with_profiler " + json.dumps({"before": a.before, "inside": a.inside, "after": a.after,
                                         "profiler_cuda_events": seen}), flush=True)


if __name__ == "__main__":
    main()
