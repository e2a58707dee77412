#!/usr/bin/env bash
# On the GPU machine: the shape tiers of `jouleprof replay` on torchvision ResNet-50 (issue 32 item 2:
# convolutions and inference batch norms through cuDNN, no longer memory-bound stand-ins; docs/replay.md "Tiers").
# Binaries from scripts/build-device-replay.sh in .devbuild/replay (rebuild them: the engine's
# batchnorm tier is new). cuDNN is PyTorch's own libcudnn.so.9, found from the PyTorch install.
#   1. `jouleprof measure` of ResNet-50 inference, batch 32, random weights, run back to back for
#      >= 7.5 s in the marker window "work", all of it traced by the PyTorch profiler with shapes;
#   2. `jouleprof kernels` of the trace; 3. `jouleprof replay --measured` of it;
#   4. one line: predicted vs measured energy and time, rows and GPU time per tier, conv and batchnorm items.
# About 150 s of GPU time. Everything under $OUT (log.txt, resnet50_*.json; the trace stays in /tmp).
#   scripts/device-replay-tiers.sh     RESNET_FLAGS="--dtype bf16 --channels-last": another variant;
#                                      BASELINE=1: also the replay without the tiers BASELINE_TIERS (a regex of tier
#                                      names, default "batchnorm": as before it; "conv|batchnorm": before both), ~100 s more
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbuild/replay/bin}
OUT=${OUT:-/tmp/jp-replay-tiers}
mkdir -p "$OUT"
LOG=$OUT/log.txt
: >"$LOG"
say() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
fail() { say "FAILED: $*"; exit 1; }
T0=$(date +%s)
for f in "$BIN/jouleprof" "$BIN/jouleprof-replay"; do [ -x "$f" ] || fail "$f is missing: run scripts/build-device-replay.sh first"; done
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv,noheader 2>&1 | tee -a "$LOG"

# PyTorch's cuDNN: the library its process maps once cuDNN is initialised, else the nvidia-cudnn wheel's.
CUDNN_LIB=$(python3 - <<'PY'
import os
import torch
torch.backends.cudnn.version()
found = [l.split()[-1] for l in open("/proc/self/maps") if os.path.basename(l.split()[-1]).startswith("libcudnn.so")]
if not found:
    try:
        import nvidia.cudnn
        found = [os.path.join(list(nvidia.cudnn.__path__)[0], "lib", "libcudnn.so.9")]
    except ImportError:
        pass
print(found[0] if found and os.path.exists(found[0]) else "")
PY
)
[ -n "$CUDNN_LIB" ] || fail "no libcudnn.so.9 in the PyTorch install (torch.backends.cudnn.version() maps none, no nvidia.cudnn wheel)"
say "cuDNN: $CUDNN_LIB"
export JOULEPROF_CUDNN_LIB=$CUDNN_LIB
export LD_LIBRARY_PATH=$PWD/.devbuild/replay/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}:$(dirname "$CUDNN_LIB")
export PYTHONUNBUFFERED=1 JOULEPROF_DATA_DIR=$PWD/data JOULEPROF_DB=$OUT/runs.db JOULEPROF_REPLAY_ENGINE=$PWD/$BIN/jouleprof-replay
JP=$BIN/jouleprof
TRACE=/tmp/jp-resnet50-tiers.json
REPLAY_FLAGS=${REPLAY_FLAGS:---max-rows 60 --coverage 0.97 --trials 5 --trial-s 0.2 --warmup-s 5}

say "resnet50: measure the traced run"
timeout 240 "$JP" measure --idle 2 --json "$OUT/resnet50_measured.json" -- python3 scripts/validation/replay/resnet_tiers.py \
  --batch 32 --seconds 7.5 ${RESNET_FLAGS:-} --trace "$TRACE" --info "$OUT/resnet50_info.json" 2>&1 | tail -15 | tee -a "$LOG" \
  || fail "jouleprof measure of the ResNet-50 run"
[ -s "$TRACE" ] || fail "no trace written"
ls -la "$TRACE" | tee -a "$LOG"

say "resnet50: kernels"
timeout 180 "$JP" kernels "$TRACE" --top 15 --json "$OUT/resnet50_kernels.json" 2>&1 | tee -a "$LOG" || fail "jouleprof kernels"

say "resnet50: replay"
timeout 360 "$JP" replay "$TRACE" --measured "$OUT/resnet50_measured.json" $REPLAY_FLAGS --top 25 \
  --keep-measurements "$OUT/resnet50_engine.json" --json "$OUT/resnet50_replay.json" 2>"$OUT/resnet50_replay.err" | tee -a "$LOG" \
  || { tail -20 "$OUT/resnet50_replay.err" | tee -a "$LOG"; fail "jouleprof replay"; }
grep -i "conv\|batchnorm\|cudnn" "$OUT/resnet50_replay.err" | head -20 | tee -a "$LOG" || true
BASELINE_TIERS=${BASELINE_TIERS:-batchnorm}
if [ "${BASELINE:-0}" = 1 ]; then  # the same trace with those rules removed: their rows as before (tier other), ~100 s more
  say "resnet50: baseline replay without the tiers $BASELINE_TIERS"
  grep -Ev "^($BASELINE_TIERS)\s" data/replay-tiers.tsv >"$OUT/tiers-baseline.tsv"
  timeout 360 "$JP" replay "$TRACE" --measured "$OUT/resnet50_measured.json" $REPLAY_FLAGS --top 0 --tiers "$OUT/tiers-baseline.tsv" \
    --keep-measurements "$OUT/resnet50_baseline_engine.json" --json "$OUT/resnet50_baseline_replay.json" 2>"$OUT/resnet50_baseline.err" \
    | tee -a "$LOG" || { tail -20 "$OUT/resnet50_baseline.err" | tee -a "$LOG"; fail "jouleprof replay (baseline)"; }
  "$JP" kernels "$TRACE" --top 0 --tiers "$OUT/tiers-baseline.tsv" --json "$OUT/resnet50_baseline_kernels.json" >/dev/null
fi
rm -f "$OUT/runs.db"
say "result"
python3 scripts/validation/replay/tiers_line.py resnet50 "$OUT/resnet50_kernels.json" "$OUT/resnet50_replay.json" \
  "$OUT/resnet50_engine.json" | tee -a "$LOG" "$OUT/line.txt"
if [ -f "$OUT/resnet50_baseline_replay.json" ]; then
  python3 scripts/validation/replay/tiers_line.py "resnet50 (baseline: without $BASELINE_TIERS)" "$OUT/resnet50_baseline_kernels.json" \
    "$OUT/resnet50_baseline_replay.json" "$OUT/resnet50_baseline_engine.json" | tee -a "$LOG" "$OUT/line.txt"
fi
echo "device seconds in this script: $(( $(date +%s) - T0 ))" | tee -a "$LOG"
