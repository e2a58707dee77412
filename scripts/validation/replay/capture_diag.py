#!/usr/bin/env python3
"""Where a captured step fails on replay (issue 32: StaticCache decode trips index_copy_ out of
bounds). One mode per process (a device assert is sticky):
  torch  the step captured (jouleprof.replay.capture) and replayed by PyTorch itself, its output
         compared with the eager step's;
  list   the graph's nodes as the exact replay lists them (kinds, copy directions, warnings);
  ours   the exact replay's whole-graph step only (max_rows 0).
  scripts/validation/replay/capture_diag.py FAMILY MODE     (families of workloads/replay/exact_families.py)
Prints one JSON line: {"family", "mode", "ok", ...}."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "workloads", "replay"))
import torch  # noqa: E402

from exact_families import FAMILIES  # noqa: E402
from jouleprof import _jouleprof  # noqa: E402
from jouleprof.replay import capture  # noqa: E402


def main():
    fam, mode = sys.argv[1], sys.argv[2]
    out = {"family": fam, "mode": mode}
    try:
        with torch.inference_mode():
            _, fn = FAMILIES[fam]()
            ref = fn().float().clone()
            torch.cuda.synchronize()
            g, o = capture(fn)
            if mode == "torch":
                if hasattr(g, "instantiate"):
                    g.instantiate()
                for _ in range(3):
                    g.replay()
                torch.cuda.synchronize()
                out["max_abs_diff_vs_eager"] = float((o.float() - ref).abs().max())
            elif mode == "list":
                groups, warnings = _jouleprof.list_cuda_graph(int(g.raw_cuda_graph()), "")
                out["kinds"] = {}
                for kind, name, count in groups:
                    k = kind + (" " + name if kind.startswith("memcpy") else "")
                    out["kinds"][k] = out["kinds"].get(k, 0) + count
                out["index_groups"] = [(name[:120], count) for kind, name, count in groups if "index" in name.lower()][:8]
                out["warnings"] = warnings
            elif mode == "ours":
                r = json.loads(_jouleprof.replay_cuda_graph(int(g.raw_cuda_graph()), {"max_rows": 0, "warmup_s": 0.5}))
                out["step"] = r.get("step")
                out["warnings"] = r.get("warnings")
            torch.cuda.synchronize()
        out["ok"] = True
    except Exception as e:  # noqa: BLE001 - the diagnostic reports whatever failed
        out["ok"] = False
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    print("capture_diag " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
