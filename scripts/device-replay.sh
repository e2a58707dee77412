#!/usr/bin/env bash
# `jouleprof replay` validation on the GPU machine (docs/validation/replay.md).
# Binaries from scripts/build-device-replay.sh in .devbuild/replay. Everything under $OUT.
#   For each model named (llama: Llama-3.2-1B-architecture generate; bloom: BLOOM-560m-architecture
#   forward; random weights): `jouleprof measure` of the PyTorch run whose "work" window is exactly
#   the traced work, repeated REPEAT times (default 6: a window of ~7 s, which the energy counter
#   resolves to ~1.5%; every repeat traced) (a generate also has "prefill" and "decode" windows and
#   record_function ranges per repeat);
#   `jouleprof kernels` of its trace; `jouleprof replay TRACE --measured RUN`.
#   bench: the import benchmark on a generated 1 GB Kineto trace next to Python's json.
# What comes back: log.txt, per model NAME.tgz (measured run, kernel table, engine output, replay
# result), bench*.json. The traces (plain JSON, ~1 GB each for REPEAT 6) stay on the device.
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbuild/replay/bin}
OUT=${OUT:-/tmp/replay-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devbuild/replay/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 JOULEPROF_DATA_DIR=$PWD/data JOULEPROF_DB=$OUT/runs.db JOULEPROF_REPLAY_ENGINE=$PWD/$BIN/jouleprof-replay
JP=$BIN/jouleprof
PY=scripts/validation/replay/hf_models.py
LOG=$OUT/log.txt
say() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
gpu_state() { nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,clocks.mem,power.draw,power.limit --format=csv,noheader 2>&1 | tee -a "$LOG"; }
say "host $(hostname)"; gpu_state
REPLAY_FLAGS=${REPLAY_FLAGS:---max-rows 60 --coverage 0.97 --trials 5 --trial-s 0.2 --warmup-s 5}
REPEAT=${REPEAT:-6}
for step in ${@:-bloom llama}; do
  case $step in
    llama) NAME=llama; ARGS="--model llama-3.2-1b --work generate --batch 4 --prompt 256 --gen 64 --repeat $REPEAT" ;;
    bloom) NAME=bloom; ARGS="--model bloom-560m --work forward --batch 4 --prompt 512 --forwards 50 --repeat $REPEAT" ;;
    tiny)  # small committed test data: a two-layer Llama generate with its prefill/decode ranges and windows
      say "tiny: llama-tiny generate with phases"
      timeout 120 "$JP" measure --idle 0.5 --json "$OUT/tinyphases.measured.json" -- python3 $PY --model llama-tiny --work generate \
        --batch 1 --prompt 16 --gen 4 --trace "$OUT/tinyphases.json.gz" 2>&1 | tail -5 | tee -a "$LOG"
      continue ;;
    bench)  # a generated 1 GB trace; then the real traces of the steps above, where there are
      say "import benchmark"
      timeout 300 "$BIN/jouleprof_kineto_bench" --size-gb 1.0 --template tests/data/replay/llama_tiny_generate.json.gz \
        --json "$OUT/bench.json" 2>&1 | tee -a "$LOG"
      for t in llama bloom; do
        [ -f "/tmp/$t.json" ] || continue
        say "import benchmark: the real $t trace"
        timeout 200 "$BIN/jouleprof_kineto_bench" --file "/tmp/$t.json" --json "$OUT/bench_$t.json" 2>&1 | tee -a "$LOG"
      done
      continue ;;
  esac
  say "$NAME: measure the traced run"
  timeout 300 "$JP" measure --idle 2 --json "$OUT/${NAME}_measured.json" -- python3 $PY $ARGS --trace "/tmp/${NAME}.json" \
    --info "$OUT/${NAME}_info.json" 2>&1 | tail -25 | tee -a "$LOG"
  ls -la "/tmp/${NAME}.json" | tee -a "$LOG"
  say "$NAME: kernels"
  timeout 120 "$JP" kernels "/tmp/${NAME}.json" --top 15 --json "$OUT/${NAME}_kernels.json" 2>&1 | tee -a "$LOG"
  say "$NAME: replay"
  timeout 400 "$JP" replay "/tmp/${NAME}.json" --measured "$OUT/${NAME}_measured.json" $REPLAY_FLAGS --top 20 \
    --keep-measurements "$OUT/${NAME}_engine.json" --json "$OUT/${NAME}_replay.json" 2>"$OUT/${NAME}_replay.err" | tee -a "$LOG"
  tail -8 "$OUT/${NAME}_replay.err" | tee -a "$LOG"
  gpu_state
  python3 scripts/validation/replay/summarize.py "$OUT" 2>&1 | tee -a "$LOG"
  # Each model's results in one archive as soon as it is done (a later step cut short loses only itself).
  (cd "$OUT" && tar czf "$NAME.tgz" ${NAME}_*.json ${NAME}_replay.err && rm -f ${NAME}_*.json ${NAME}_replay.err)
  ls -la "$OUT" | tee -a "$LOG"
done
rm -f "$OUT/runs.db"
