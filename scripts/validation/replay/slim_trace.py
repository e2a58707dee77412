#!/usr/bin/env python3
"""Keeps only what `jouleprof kernels`/`replay` read from a PyTorch profiler trace (GPU activities,
CPU ops, runtime launches, user annotations, the top-level members), so the trace of a whole
run comes back from the GPU machine under its file-size limit.

    python3 slim_trace.py IN.json.gz OUT.json.gz
"""
import gzip
import json
import sys

KEEP = {"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime", "cuda_driver", "user_annotation"}
ARGS = {"External id", "correlation", "device", "grid", "block", "registers per thread", "shared memory", "bytes",
        "Input Dims", "Input type", "Input Strides"}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with gzip.open(src, "rt") if src.endswith(".gz") else open(src) as f:
        doc = json.load(f)
    events = []
    for e in doc.get("traceEvents", []):
        if e.get("cat") not in KEEP:
            continue
        if e["cat"] == "cuda_runtime" and "correlation" not in e.get("args", {}):
            continue
        e = {k: v for k, v in e.items() if k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args")}
        if "args" in e:
            e["args"] = {k: v for k, v in e["args"].items() if k in ARGS}
        events.append(e)
    doc["traceEvents"] = events
    with gzip.open(dst, "wt", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
