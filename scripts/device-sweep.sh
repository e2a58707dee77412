#!/usr/bin/env bash
# Issue 17 on the GPU machine: discovery and `--observe-only` sweeps ONLY. This script never
# changes clocks, power limits, persistence, compute mode or MIG: every sweep below carries
# --observe-only (jouleprof then writes no journal and makes no NVML set call).
# Carried: .devsweep/bin/jouleprof (the CPU build; NVML is loaded at run time) and .devsweep/lib.
# Usage (device): scripts/device-sweep.sh   (writes into $OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH="$PWD/.devsweep/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
J="$PWD/.devsweep/bin/jouleprof"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export JOULEPROF_DB="$OUT/runs.db" JOULEPROF_CONTROL_DIR="$OUT/journal"
n=$(nvidia-smi -L | wc -l)
{ date -u; hostname; nvidia-smi -L; nvidia-smi --query-gpu=index,name,driver_version,power.limit,power.min_limit,power.max_limit,clocks.applications.graphics,clocks.applications.memory,persistence_mode --format=csv; } > "$OUT/host.txt" 2>&1
nvidia-smi -q -d SUPPORTED_CLOCKS > "$OUT/nvidia-smi-supported-clocks.txt" 2>&1
"$J" sweep --discover --gpus all --json "$OUT/discover.json" > "$OUT/discover.txt" 2>&1
echo "discover rc=$?" >> "$OUT/discover.txt"
# A GEMM workload that marks its measured region (torch import and allocation are outside it).
cat > "$OUT/gemm.py" <<'PY'
import os, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize()
m = open(os.environ["JOULEPROF_MARKERS"], "w", buffering=1) if "JOULEPROF_MARKERS" in os.environ else None
if m: m.write("begin compute\n")
t = time.time()
while time.time() - t < float(os.environ.get("JOULEPROF_PARAM_SECONDS", "1.5")):
    for _ in range(20): a @ b
    torch.cuda.synchronize()
if m: m.write("end compute\n")
PY
# Observe-only: the schedule of a clock sweep (4 clocks from the table), nothing set.
"$J" sweep --observe-only --gpus 0 --clocks step:36 --runs 1 --warmup 0 --idle 0.5 --no-cpu --progress \
  --param seconds=1.5 --csv "$OUT/observe-gpu0.csv" --json "$OUT/observe-gpu0.json" -- python3 "$OUT/gemm.py" > "$OUT/observe-gpu0.txt" 2>&1
echo "observe gpu0 rc=$?" >> "$OUT/observe-gpu0.txt"
if [ "$n" -ge 2 ]; then
  # Both GPUs: one point per GPU in parallel (split), each worker its own CUDA_VISIBLE_DEVICES.
  "$J" sweep --observe-only --gpus all --clocks step:36 --runs 1 --warmup 0 --idle 0.5 --no-cpu --progress \
    --param seconds=1.5 --csv "$OUT/observe-all.csv" -- python3 "$OUT/gemm.py" > "$OUT/observe-all.txt" 2>&1
  echo "observe all rc=$? " >> "$OUT/observe-all.txt"
fi
ls "$OUT/journal" 2>/dev/null && echo "UNEXPECTED: a journal was written" >> "$OUT/discover.txt"
"$J" runs list > "$OUT/runs.txt" 2>&1
for f in "$OUT"/discover.txt "$OUT"/observe-*.txt; do echo "== $f"; tail -20 "$f"; done
