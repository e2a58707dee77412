#!/usr/bin/env bash
# On the GPU machine: the exact replay's validation (docs/validation/replay.md). Needs the Python
# extension built here by scripts/build-device-python.sh (.pydev/: Python 3.12, static libstdc++;
# the exact replay is pure C++ that loads libcuda at run time, so nothing is compiled there).
# Per family (workloads/replay/exact_families.py): one step captured as a CUDA graph and replayed
# kernel by kernel, then the step run back to back in a measured window of >= 7 s; the table last.
#   scripts/device-replay-exact.sh [FAMILIES]     e.g. resnet50,vit (default: all six)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jp-replay-exact}; mkdir -p "$OUT"
T0=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,uuid,serial,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
} 2>&1 | tee "$OUT/machine.txt"
export PYTHONPATH="$PWD/.pydev/py" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
python3 -c "import jouleprof, jouleprof._jouleprof as m; print('jouleprof', jouleprof.__version__, hasattr(m, 'replay_cuda_graph'))"
FAM=${1:-resnet50,vit,bert,llama_compiled,prefill,llama_decode}
timeout "${BUDGET_S:-540}" python3 workloads/replay/exact_families.py --out "$OUT/results.json" --families "$FAM" \
  ${EXACT_FLAGS:-} 2>&1 | grep -v -E "[A-Za-z]+Warning:|warnings\.warn\(" | tee "$OUT/log.txt" | tail -60
echo "device seconds in this script: $(( $(date +%s) - T0 ))"
