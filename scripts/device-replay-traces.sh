#!/usr/bin/env bash
# Device call 1 of issue 18: the PyTorch profiler traces for tests/data (two-layer models) and
# the full-size models' traces for development. Everything under $OUT.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/replay-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=scripts/validation/replay/hf_models.py
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw --format=csv,noheader
python3 $PY --model llama-tiny --work generate --batch 2 --prompt 16 --gen 3 --trace "$OUT/llama_tiny_generate.json.gz" --info "$OUT/llama_tiny.info.json"
python3 $PY --model bloom-tiny --work forward --batch 2 --prompt 32 --forwards 1 --trace "$OUT/bloom_tiny_forward.json" --info "$OUT/bloom_tiny.info.json"
python3 $PY --model llama-3.2-1b --work generate --batch 4 --prompt 256 --gen 32 --trace "$OUT/llama1b_generate.json.gz"
python3 $PY --model bloom-560m --work forward --batch 4 --prompt 512 --forwards 10 --trace "$OUT/bloom560m_forward.json.gz"
ls -la "$OUT"
