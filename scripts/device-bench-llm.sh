#!/usr/bin/env bash
# bench-llm on the GPU machine, in one call. Binaries are built here (cmake --preset device) and
# carried in .devbuild/llm (jouleprof + jouleprof-llm); Python/PyTorch/transformers are on the device.
#   scripts/device-bench-llm.sh STEP...   steps: check hf-logits speed speed-b bench-1b bench-8b
#                                          bench-sweep hf-speed hf-compile hf-measure 3b
#                                          hf-compile-measure hf-batch decode-final timeline hf-generate
#                                          explore ab
#   ab: the engine (BIN) against a base build (BASE, default .devbuild/base) in the same call:
#   check bf16/fp16 of both, then batch-1 decode of 1B/3B/8B interleaved (speed, then the `bench`
#   decode window with its J/token), A B A B; a table of the figures last.
# Writes logs and JSON under $OUT (at most 8 files come back), prints a short summary last.
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbuild/llm}
OUT=${OUT:-/tmp/bench-llm-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
LOG=$OUT/log.txt
PY=workloads/llm/python/hf_compare.py
say() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
run() { local t=$1; shift; say "$*"; timeout "$t" "$@" 2>&1 | tee -a "$LOG"; echo "rc=${PIPESTATUS[0]}" | tee -a "$LOG"; }
gpu_state() { nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,clocks.mem,power.draw,power.limit,persistence_mode --format=csv,noheader 2>&1 | tee -a "$LOG"; }
say "host $(hostname) $(uname -r)"
gpu_state
for step in "$@"; do
  case $step in
    check)
      run 120 "$BIN/jouleprof-llm" check --model tiny --dtype bf16 --json "$OUT/check_bf16.json"
      run 120 "$BIN/jouleprof-llm" check --model tiny --dtype fp16 --tol 1e-2 --tol-emulated 5e-3 ;;
    hf-logits)
      run 200 python3 "$PY" logits --llm "$BIN/jouleprof-llm" --work /tmp/hfw --out "$OUT" ;;
    speed)
      run 240 "$BIN/jouleprof-llm" speed --model llama-3.2-1b,llama-3.1-8b --variants "${VARIANTS:-auto,separate,cluster,dataflow}" \
        --prompt 128 --gen 256 --prefill "${PREFILL:-1024,2048,4096,8192}" --json "$OUT/speed.json" ;;
    speed-b)
      run 240 "$BIN/jouleprof-llm" speed --model llama-3.2-1b,llama-3.1-8b --variants auto --batch 1,8,32 \
        --prompt 128 --gen 128 --prefill 0 --json "$OUT/speed_batch.json" ;;
    bench-1b)
      run 200 "$BIN/jouleprof" bench llm --model llama-3.2-1b --batch 1 --prompt 128 --gen 128 --iso-seconds 0.5 \
        --json "$OUT/bench_1b.json" ;;
    bench-8b)
      run 200 "$BIN/jouleprof" bench llm --model llama-3.1-8b --batch 1 --prompt 128 --gen 128 --iso-seconds 0.5 \
        --json "$OUT/bench_8b.json" ;;
    speed-final)
      run 200 "$BIN/jouleprof-llm" speed --model llama-3.2-1b,llama-3.1-8b --components \
        --variants "${VARIANTS:-auto,separate+gemv,separate+cublas}" \
        --prompt 128 --gen 256 --prefill "${PREFILL:-1024,2048,4096,8192}" --json "$OUT/speed.json" ;;
    bench-layers)
      run 80 "$BIN/jouleprof" bench llm --model llama-3.2-1b --batch 1 --prompt 128 --gen 128 --min-seconds 2 \
        --iso-seconds 0.7 --per-layer --json "$OUT/bench_layers_1b.json"
      run 90 "$BIN/jouleprof" bench llm --model llama-3.1-8b --batch 1 --prompt 128 --gen 128 --min-seconds 2 \
        --iso-seconds 0.5 --per-layer --json "$OUT/bench_layers_8b.json" ;;
    bench-long)
      run 90 "$BIN/jouleprof" bench llm --model llama-3.2-1b,llama-3.1-8b --batch 1 --prompt 1024,4096 --gen 64 \
        --min-seconds 2 --no-components --json "$OUT/bench_long.json" ;;
    hf-measure-short)
      for m in llama-3.2-1b llama-3.1-8b; do
        run 100 "$BIN/jouleprof" measure --idle 2 --json "$OUT/hf_measure_$m.json" -- \
          python3 "$PY" speed --model "$m" --gen 32 --seconds 3 --static --prefill 2048
      done ;;
    bench-sweep)
      run 280 "$BIN/jouleprof" bench llm --model llama-3.2-1b,llama-3.1-8b --batch 1,8,32 --prompt 128 --gen 128 \
        --min-seconds 1 --iso-seconds "${ISO:-0.5}" ${BENCH_EXTRA:-} --json "$OUT/bench_sweep.json" ;;
    hf-speed)
      for m in llama-3.2-1b llama-3.1-8b; do
        run 150 python3 "$PY" speed --model "$m" --static --prefill 1024,4096 --json "$OUT/hf_speed_$m.json"
      done ;;
    hf-compile)
      run 240 python3 "$PY" speed --model llama-3.2-1b --compile --seconds 2 ;;
    hf-measure)
      for m in llama-3.2-1b llama-3.1-8b; do
        run 150 "$BIN/jouleprof" measure --idle 2 --json "$OUT/hf_measure_$m.json" -- \
          python3 "$PY" speed --model "$m" --seconds 3 --prefill 2048
      done ;;
    3b)
      run 200 "$BIN/jouleprof-llm" speed --model llama-3.2-3b --variants "${VARIANTS3:-auto,separate}" --components \
        --prompt 128 --gen 256 --prefill 1024,4096 --json "$OUT/speed_3b.json"
      run 200 "$BIN/jouleprof" bench llm --model llama-3.2-3b --batch 1,8,32 --prompt 128 --gen 128 --min-seconds 2 \
        --iso-seconds 0.5 ${BENCH3_EXTRA:-} --json "$OUT/bench_3b.json" ;;
    hf-compile-measure)
      run 300 "$BIN/jouleprof" measure --idle 2 --json "$OUT/hf_compile_1b.json" -- \
        python3 "$PY" speed --model llama-3.2-1b --gen 32 --seconds 3 --static --compile ;;
    hf-batch)
      for b in 8 32; do
        run 200 "$BIN/jouleprof" measure --idle 2 --json "$OUT/hf_b${b}_1b.json" -- \
          python3 "$PY" speed --model llama-3.2-1b --batch "$b" --gen 32 --seconds 3 --static
      done ;;
    decode-final)
      # Batch-1 decode with the default plans against the separate kernels
      # (separate), all three models, components; the timeline of one step; energy through bench llm.
      run 300 "$BIN/jouleprof-llm" speed --model llama-3.2-1b,llama-3.2-3b,llama-3.1-8b --components --prompt 128 --gen 256 \
        --prefill 0 --variants "${VARIANTS:-auto,separate}" --json "$OUT/speed_final.json"
      run 100 "$BIN/jouleprof-llm" speed --model llama-3.2-1b --timeline --prompt 128 --gen 256 --prefill 0 \
        --variants auto,separate --json "$OUT/timeline.json"
      run 300 "$BIN/jouleprof" bench llm --model llama-3.2-1b,llama-3.2-3b,llama-3.1-8b --batch 1 --prompt 128 --gen 128 \
        --min-seconds 2 --iso-seconds 0.5 --json "$OUT/bench_b1.json"
      run 120 "$BIN/jouleprof" bench llm --model llama-3.2-1b --batch 1 --prompt 128 --gen 128 --min-seconds 2 \
        --iso-seconds 0.5 --variant separate --tag variant=separate --json "$OUT/bench_b1_separate.json" ;;
    explore)
      # Batch-1 decode of engine variants side by side (VARIANTS, MODELS), then the kernel timeline
      # of those in TL_VARIANTS (stamps on: a little slower, so timed apart).
      run 400 "$BIN/jouleprof-llm" speed --model "${MODELS:-llama-3.2-1b}" --prompt 128 --gen 256 --prefill 0 \
        --variants "${VARIANTS:-auto}" --json "$OUT/explore.json"
      [ -n "${TL_VARIANTS:-}" ] && run 200 "$BIN/jouleprof-llm" speed --model llama-3.2-1b --timeline --prompt 128 --gen 256 \
        --prefill 0 --variants "$TL_VARIANTS" --json "$OUT/explore_timeline.json" ;;
    timeline)
      # When each kernel of one decode step runs (globaltimer stamps per block; diagnostic).
      run 200 "$BIN/jouleprof-llm" speed --model "${TL_MODEL:-llama-3.2-1b}" --timeline --prompt 128 --gen 256 --prefill 0 \
        --variants "${TL_VARIANTS:-auto,cluster,separate}" --json "$OUT/timeline.json" ;;
    hf-generate)
      # transformers' own generate(): eager, and static cache + compiled forward (its documented fast path).
      for m in ${HF_MODELS:-llama-3.2-1b llama-3.1-8b}; do
        run 400 "$BIN/jouleprof" measure --idle 2 --json "$OUT/hf_generate_$m.json" -- \
          python3 "$PY" speed --model "$m" --gen 128 --seconds 4 --generate --compile --json "$OUT/hf_generate_speed_$m.json"
      done ;;
    ab)
      BASE=${BASE:-.devbuild/base}
      # AB_SKIP_CHECK=1 / AB_SKIP_BENCH=1 leave out a part; AB_MODELS, AB_MIN_S, AB_IDLE set the sweep.
      if [ -z "${AB_SKIP_CHECK:-}" ]; then
        run 150 "$BIN/jouleprof-llm" check --model tiny --dtype bf16
        run 150 "$BIN/jouleprof-llm" check --model tiny --dtype fp16 --tol 1e-2 --tol-emulated 5e-3
      fi
      # AB_SIDES: NAME=DIR pairs in the order each round runs them (default: new=BIN base=BASE).
      for r in 1 2; do
        [ -n "${AB_SKIP_BENCH:-}" ] && break
        for pair in ${AB_SIDES:-new=$BIN base=$BASE}; do
          side=${pair%%=*} b=${pair#*=}
          run 150 "$b/jouleprof-llm" bench --model "${AB_MODELS:-llama-3.2-1b,llama-3.2-3b,llama-3.1-8b}" --batch 1 --prompt 128 \
            --gen 128 --min-seconds "${AB_MIN_S:-2}" --no-components --idle "${AB_IDLE:-1.5}" --quiet --json "$OUT/ab_bench_${side}_$r.json"
        done
        # The second round only while the call has time left (AB_BUDGET_S from its start).
        [ $(( $(date +%s) - ${AB_T0:-$(date +%s)} )) -gt ${AB_BUDGET_S:-100000} ] && break
      done
      python3 - "$OUT" <<'PYEOF' 2>&1 | tee -a "$LOG"
import json, sys, glob, os
out = sys.argv[1]
print("A/B  side  rep  model          decode tok/s   J/token   W")
sides = [p.split("=")[0] for p in os.environ.get("AB_SIDES", "new=x base=x").split()]
for r in (1, 2):
    for side in sides:
        if not os.path.exists(f"{out}/ab_bench_{side}_{r}.json"):
            continue
        try:
            pts = json.load(open(f"{out}/ab_bench_{side}_{r}.json"))["llm"]["points"]
        except Exception as e:
            print("bench", side, r, e); pts = []
        for p in pts:
            d = p.get("decode") or {}
            print(f"A/B  {side:7s} {r}    {p['model']:14s} {d.get('tokens_per_s', float('nan')):10.1f}   {d.get('j_per_token', float('nan')):.4f}   {d.get('mean_power_w', float('nan')):.1f}")
PYEOF
      ;;
    *) echo "unknown step $step" ;;
  esac
done
gpu_state
say "summary"
grep -hE "^(model |b[0-9]|llama|device |hf-|tiny|A/B|  (prefill|decode) |  per step|.*ALL PASS|.*FAILED)" "$LOG" | cut -c1-220 | tail -60
