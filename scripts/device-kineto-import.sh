#!/usr/bin/env bash
# On the GPU machine: the Kineto importer's speed (docs/validation/replay.md, "Import speed") on
# a generated 1 GB trace and on real torch.compile traces (Triton cpu_ops with "grid" strings;
# reduce-overhead: CUDA-graph launches), each next to Python's json. Binaries from .pydev/ (built
# here by scripts/build-device-python.sh, plus bench/jouleprof_kineto_bench into .pydev/bin).
#   scripts/device-kineto-import.sh          (STEPS: profiled forwards per real trace, default 1500)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jp-kineto}; mkdir -p "$OUT"
B=.pydev/bin/jouleprof_kineto_bench
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } 2>&1 | tee "$OUT/machine.txt"
timeout 200 "$B" --size-gb 1.0 --template tests/data/replay/llama_tiny_generate.json.gz --json "$OUT/bench_generated.json" 2>&1 | tee -a "$OUT/log.txt"
for mode in default reduce-overhead; do
  timeout 240 python3 scripts/validation/replay/compiled_trace.py "/tmp/compiled_$mode.json" --steps "${STEPS:-1500}" --mode "$mode" 2>&1 \
    | grep -v -i warn | tail -3 | tee -a "$OUT/log.txt"
  ls -la "/tmp/compiled_$mode.json" | tee -a "$OUT/log.txt"
  timeout 200 "$B" --file "/tmp/compiled_$mode.json" --json "$OUT/bench_compiled_$mode.json" 2>&1 | tee -a "$OUT/log.txt"
done
