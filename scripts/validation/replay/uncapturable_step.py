"""A step that cannot be captured as a CUDA graph (a host synchronisation inside: `.item()`), given
to jouleprof.torch.replay_step: it must fall back to the shape tiers (docs/replay.md, "Faults and
limits") and predict the step. Prints the reason line, the tier rows and the prediction beside the
step's own time measured with CUDA events (not an energy check: one JSON line last).

    PYTHONPATH=.pydev/py python3 uncapturable_step.py ENGINE      # ENGINE: the jouleprof-replay binary
"""
import json
import sys

import torch

import jouleprof.torch as jt

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(64 * 56 * 56, 1000)).cuda().half()
x = torch.randn(32, 64, 56, 56, device="cuda", dtype=torch.half)


def step():
    y = model(x)
    if y.float().abs().max().item() > 1e9:  # a host sync: not capturable
        print("overflow")
    return y


r = jt.replay_step(step, tier_options={"engine": sys.argv[1], "store": False, "device": "auto", "idle_s": 1.0})
print("captured:", r.captured)
print("reason:", r.reason)
if r.tiers is not None:
    print(r.tiers.text[:3000])
    tiers = {t["tier"]: t["rows"] for t in r.tiers.data.get("tiers", [])}
    t, e = r.predict()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    start.record()
    for _ in range(20):
        step()
    end.record()
    torch.cuda.synchronize()
    print(json.dumps({"captured": r.captured, "rows_per_tier": tiers, "predicted_s": t, "predicted_j": e,
                      "step_s_cuda_events": start.elapsed_time(end) / 20e3}))
