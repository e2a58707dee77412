#!/usr/bin/env bash
# One call: build new/base/pad engines; check new; 3B placement experiment; trace overhead of the engine.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/diagA}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
LOG=$OUT/diag.txt
scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 &
scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 &
scripts/device-build-llm.sh pad .devbuild/pad-src .devbuild/new-obj >"$OUT/build_pad.txt" 2>&1 &
wait
tail -n 1 "$OUT"/build_*.txt | tee -a $LOG
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv,noheader | tee -a $LOG
for dt in bf16 fp16; do
  tol=(); [ $dt = fp16 ] && tol=(--tol 1e-2 --tol-emulated 5e-3)
  timeout 150 .devbuild/new/jouleprof-llm check --model tiny --dtype $dt "${tol[@]}" 2>&1 | tail -3 | tee -a $LOG
done
sp() { # side env... : 3B decode speed
  local side=$1; shift
  echo "=== $side $* ($(date -u +%T))" >>$LOG
  env "$@" timeout 120 ".devbuild/${side%%:*}/jouleprof-llm" speed --model llama-3.2-3b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 1.5 2>&1 | grep -i "tok/s" | head -3 | sed "s/^/P $side $* | /" | tee -a $LOG
}
for r in 1 2; do
  sp new; sp base; sp pad:0 JP_DIAG_PAD_MB=0; sp pad:2 JP_DIAG_PAD_MB=2; sp pad:64 JP_DIAG_PAD_MB=64; sp pad:1000 JP_DIAG_PAD_MB=1000; sp pad:7 JP_DIAG_PAD_MB=7
done
# Trace overhead on the engine (CUDA graphs): untraced U, traced T, interleaved.
cp .devbuild/new/jouleprof-llm .devbuild/trace/
JP=.devbuild/trace/jouleprof
export JOULEPROF_DATA_DIR=$PWD/data JOULEPROF_INJECT_LIB=$PWD/.devbuild/trace/libjouleprof_inject.so
for r in 1 2 3; do
  for m in llama-3.2-1b llama-3.2-3b; do
    for cfg in U T; do
      pre=(); [ $cfg = T ] && pre=("$JP" trace --idle 0 --no-store -q --json "$OUT/eng_${m}_$r.trace.json" --)
      echo "=== engine $cfg $m round $r ($(date -u +%T))" >>$LOG
      timeout 150 "${pre[@]}" .devbuild/trace/jouleprof-llm speed --model $m --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 3 --json "$OUT/eng_${cfg}_${m}_$r.json" >$OUT/one.txt 2>&1
      cat $OUT/one.txt >>$LOG; grep "decode .*tok/s" $OUT/one.txt | sed "s/^/E $cfg $m $r | /" | tee -a $LOG
    done
  done
done
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv,noheader | tee -a $LOG
(cd $OUT && tar czf engine-data.tgz eng_* build_*.txt && rm -f eng_* build_*.txt)
grep "^P \|^E \|PASS\|FAIL" $LOG
