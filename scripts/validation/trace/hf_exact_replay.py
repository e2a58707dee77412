"""The exact replay of hf_generate.py's model (the same Llama-3.2-1B architecture, batch 1, prompt
128): its prefill forward and one decode step (DynamicCache at position PROMPT + GEN/2), each
captured and replayed kernel by kernel (jouleprof.torch.replay_step), written as one
jouleprof.exact_replay document for `jouleprof trace --replay` (docs/validation/trace.md).

    PYTHONPATH=.pydev/py python3 hf_exact_replay.py OUT.json [--prompt 128] [--gen 64]
"""
import argparse
import json
import os
import sys

import torch

from jouleprof.replay import replay_step  # first: the built package on PYTHONPATH (hf_generate puts the source tree first)

sys.path.append(os.path.dirname(__file__))
from hf_generate import build  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--gen", type=int, default=64)
a = ap.parse_args()
opts = dict(trials=3, trial_s=0.15, settle_s=0.2, warmup_s=1.0, long_trial_s=0.5, row_cap_s=2.0, max_trials=6, coverage=0.97,
            max_rows=40, quiet=True)
model = build()
from transformers import DynamicCache  # noqa: E402

ids = torch.randint(0, 128000, (1, a.prompt), device="cuda")
docs = []
with torch.inference_mode():
    r = replay_step(lambda: model(input_ids=ids, use_cache=False).logits, **opts)
    print("prefill:", r.reason or r.text(top=5), flush=True)
    docs.append(r.data)
    cache = DynamicCache()
    model(input_ids=torch.randint(0, 128000, (1, a.prompt + a.gen // 2), device="cuda"), past_key_values=cache, use_cache=True)
    base = [(l.keys, l.values) for l in cache.layers]
    tok = torch.randint(0, 128000, (1, 1), device="cuda")

    def step():
        for l, (k, v) in zip(cache.layers, base):
            l.keys, l.values = k, v
        return model(input_ids=tok, past_key_values=cache, use_cache=True).logits
    r = replay_step(step, **opts)
    print("decode:", r.reason or r.text(top=5), flush=True)
    docs.append(r.data)
ok = [d for d in docs if d.get("rows")]
if not ok:
    sys.exit("hf_exact_replay: nothing replayed")
out = dict(ok[0])
out["rows"] = [row for d in ok for row in d["rows"]]
out["parts"] = ["prefill forward", f"decode step at position {a.prompt + a.gen // 2}"][:len(ok)]
json.dump(out, open(a.out, "w"), indent=1)
print(f"wrote {a.out}: {len(out['rows'])} rows", flush=True)
