#!/usr/bin/env bash
# On the GPU machine: replay-informed attribution of the HF Llama-3.2-1B-architecture generate
# (docs/validation/trace.md, "Replay-informed"). The run is traced with the NVTX module hooks; its
# model's prefill forward and a decode step are replayed exactly (hf_exact_replay.py); then
# `trace --from RUN --replay` attributes with the replayed kernels, next to each in-situ method.
# Binaries: .devbuild/trace (scripts/build-device-trace.sh) and .pydev (scripts/build-device-python.sh).
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbuild/trace}
OUT=${OUT:-/tmp/trace-replay}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 JOULEPROF_DATA_DIR=$PWD/data JOULEPROF_INJECT_LIB=$PWD/$BIN/libjouleprof_inject.so JOULEPROF_DB=$OUT/runs.db
JP=$BIN/jouleprof
HF=scripts/validation/trace/hf_generate.py
LOG=$OUT/log.txt
say() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv,noheader | tee -a "$LOG"
say "trace: HF generate, NVTX hooks, ${SECONDS_HF:-20} s"
timeout 200 "$JP" trace --idle 2 --top 12 --json "$OUT/hf.json" -- python3 "$HF" --annotate --seconds "${SECONDS_HF:-20}" 2>&1 | tail -60 | tee -a "$LOG"
say "exact replay of the same model (prefill forward, decode step)"
PYTHONPATH=$PWD/.pydev/py timeout 300 python3 scripts/validation/trace/hf_exact_replay.py "$OUT/exact.json" 2>&1 | grep -v -i warn | tail -30 | tee -a "$LOG"
for m in ${METHODS:-replay split interval regression}; do
  say "trace --from last --method $m"
  timeout 120 "$JP" trace --from last --replay "$OUT/exact.json" --method "$m" --top 8 --json "$OUT/hf_$m.json" 2>&1 | tail -45 | tee -a "$LOG"
done
