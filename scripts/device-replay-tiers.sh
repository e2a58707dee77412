#!/usr/bin/env bash
# On the GPU machine: the shape tiers of `jouleprof replay` (issue 32 item 2; docs/replay.md "Tiers") on
# torchvision ResNet-50 (MODEL=resnet50, the default: convolutions and inference batch norms through cuDNN)
# or transformers BERT-base (MODEL=bert: fused attention through cuDNN's SDPA instead of unfused GEMMs).
# Binaries from scripts/build-device-replay.sh in .devbuild/replay (rebuild them: the engine's
# attention tier is new). cuDNN is PyTorch's own libcudnn.so.9, found from the PyTorch install.
#   1. `jouleprof measure` of the model's inference (ResNet-50: batch 32; BERT: BertConfig(), bf16, sdpa,
#      batch 32 x 512 tokens), random weights, run back to back for >= 7.5 s in the marker window "work",
#      all of it traced by the PyTorch profiler with shapes;
#   2. `jouleprof kernels` of the trace; 3. `jouleprof replay --measured` of it;
#   4. one line: predicted vs measured energy and time, rows and GPU time per tier, conv, batchnorm and
#      attention items (through cuDNN, or stand-ins / unfused).
# About 150 s of GPU time per model. Everything under $OUT (log.txt, $MODEL_*.json; the trace stays in /tmp).
#   scripts/device-replay-tiers.sh     RESNET_FLAGS="--dtype bf16 --channels-last": another ResNet variant;
#                                      BASELINE=1: also the replay without the tiers BASELINE_TIERS (a regex of tier
#                                      names, default "batchnorm" for resnet50, "attention" for bert), ~100 s more.
#                                      The attention tier is not removed but replayed unfused, as before cuDNN's
#                                      SDPA (JOULEPROF_REPLAY_ATTENTION=unfused); other tiers' rules are removed.
#   CHECK=1 scripts/device-replay-tiers.sh: a few seconds: `jouleprof-replay --check` of
#                                      scripts/validation/replay/attention_check_plan.json only: per attention item
#                                      which path ran (cuDNN SDPA and its engine config, or unfused with cuDNN's
#                                      error: the failing descriptor/attribute, status and text) and its time.
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
if [ "${CHECK:-0}" = 1 ]; then  # cuDNN's answer to the attention graphs, in seconds
  say "check: jouleprof-replay --check of the attention items"
  set +o pipefail  # cuDNN's own log of its errors (level 1) on stderr: why a descriptor was refused
  CUDNN_LOGLEVEL_DBG=${CUDNN_LOGLEVEL_DBG:-1} CUDNN_LOGDEST_DBG=stderr timeout 120 "$BIN/jouleprof-replay" --check scripts/validation/replay/attention_check_plan.json 2>&1 | tee -a "$LOG" "$OUT/check.txt"
  echo "check exit status: ${PIPESTATUS[0]} (0: every item through cuDNN SDPA)" | tee -a "$LOG"
  echo "device seconds in this script: $(( $(date +%s) - T0 ))" | tee -a "$LOG"
  exit 0
fi
M=${MODEL:-resnet50}
case "$M" in
  resnet50) RUN="scripts/validation/replay/resnet_tiers.py --batch 32 --seconds 7.5 ${RESNET_FLAGS:-}"; DEFAULT_BASELINE=batchnorm ;;
  bert) RUN="scripts/validation/replay/bert_tiers.py --batch 32 --tokens 512 --seconds 7.5"; DEFAULT_BASELINE=attention ;;
  *) fail "MODEL=$M: resnet50 or bert" ;;
esac
TRACE=/tmp/jp-$M-tiers.json
REPLAY_FLAGS=${REPLAY_FLAGS:---max-rows 60 --coverage 0.97 --trials 5 --trial-s 0.2 --warmup-s 5}

say "$M: measure the traced run"
timeout 240 "$JP" measure --idle 2 --json "$OUT/${M}_measured.json" -- python3 $RUN --trace "$TRACE" --info "$OUT/${M}_info.json" 2>&1 \
  | tail -15 | tee -a "$LOG" || fail "jouleprof measure of the $M run"
[ -s "$TRACE" ] || fail "no trace written"
ls -la "$TRACE" | tee -a "$LOG"

say "$M: kernels"
timeout 180 "$JP" kernels "$TRACE" --top 15 --json "$OUT/${M}_kernels.json" 2>&1 | tee -a "$LOG" || fail "jouleprof kernels"

say "$M: replay"
timeout 360 "$JP" replay "$TRACE" --measured "$OUT/${M}_measured.json" $REPLAY_FLAGS --top 25 \
  --keep-measurements "$OUT/${M}_engine.json" --json "$OUT/${M}_replay.json" 2>"$OUT/${M}_replay.err" | tee -a "$LOG" \
  || { tail -20 "$OUT/${M}_replay.err" | tee -a "$LOG"; fail "jouleprof replay"; }
grep -i "conv\|batchnorm\|attention\|cudnn" "$OUT/${M}_replay.err" | head -20 | tee -a "$LOG" || true
BASELINE_TIERS=${BASELINE_TIERS:-$DEFAULT_BASELINE}
if [ "${BASELINE:-0}" = 1 ]; then  # the same trace with those tiers as before them (rules removed: tier other), ~100 s more
  say "$M: baseline replay without the tiers $BASELINE_TIERS"
  # attention keeps its rule (its rows need their shapes) and is replayed unfused, as before cuDNN's SDPA
  KEEP=$(echo "$BASELINE_TIERS" | tr '|' '\n' | { grep -vx attention || true; } | paste -sd'|' -)
  UNFUSED=$(echo "$BASELINE_TIERS" | tr '|' '\n' | grep -qx attention && echo unfused || echo "")
  if [ -n "$KEEP" ]; then grep -Ev "^($KEEP)\s" data/replay-tiers.tsv >"$OUT/tiers-baseline.tsv"; else cp data/replay-tiers.tsv "$OUT/tiers-baseline.tsv"; fi
  JOULEPROF_REPLAY_ATTENTION=$UNFUSED timeout 360 "$JP" replay "$TRACE" --measured "$OUT/${M}_measured.json" $REPLAY_FLAGS --top 0 --tiers "$OUT/tiers-baseline.tsv" \
    --keep-measurements "$OUT/${M}_baseline_engine.json" --json "$OUT/${M}_baseline_replay.json" 2>"$OUT/${M}_baseline.err" \
    | tee -a "$LOG" || { tail -20 "$OUT/${M}_baseline.err" | tee -a "$LOG"; fail "jouleprof replay (baseline)"; }
  "$JP" kernels "$TRACE" --top 0 --tiers "$OUT/tiers-baseline.tsv" --json "$OUT/${M}_baseline_kernels.json" >/dev/null
fi
rm -f "$OUT/runs.db"
say "result"
python3 scripts/validation/replay/tiers_line.py $M "$OUT/${M}_kernels.json" "$OUT/${M}_replay.json" \
  "$OUT/${M}_engine.json" | tee -a "$LOG" "$OUT/line.txt"
if [ -f "$OUT/${M}_baseline_replay.json" ]; then
  python3 scripts/validation/replay/tiers_line.py "$M (baseline: $BASELINE_TIERS as before their tiers)" "$OUT/${M}_baseline_kernels.json" \
    "$OUT/${M}_baseline_replay.json" "$OUT/${M}_baseline_engine.json" | tee -a "$LOG" "$OUT/line.txt"
fi
echo "device seconds in this script: $(( $(date +%s) - T0 ))" | tee -a "$LOG"
