#!/usr/bin/env bash
# One call: new vs base at 3B/8B: plans and PDL (speed, decode only), interleaved.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/diagB}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
LOG=$OUT/diagB.txt
[ -x .devbuild/new/jouleprof-llm ] || scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 &
[ -x .devbuild/base/jouleprof-llm ] || scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 &
wait
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv,noheader | tee -a $LOG
sp() { # side model variants
  echo "=== $1 $2 $3 ($(date -u +%T))" >>$LOG
  timeout 150 ".devbuild/$1/jouleprof-llm" speed --model $2 --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 1.5 --variants "$3" 2>&1 | grep "tok/s" | sed "s/^/P $1 | /" | cut -c1-140 | tee -a $LOG
}
for r in 1 2; do
  for m in llama-3.2-3b llama-3.1-8b; do
    sp new $m "auto,cluster+nopdl,cluster+ctas16,cluster+ctas4,dataflow,separate"
    sp base $m "fused,fused+nopdl,flow"
  done
done
for m in llama-3.2-3b llama-3.1-8b; do
  for s in new base; do
    v=auto; [ $s = new ] || v=fused
    echo "=== bench $s $m ($(date -u +%T))" >>$LOG
    timeout 150 .devbuild/$s/jouleprof-llm bench --model $m --batch 1 --prompt 128 --gen 128 --min-seconds 2 --no-components --idle 1.5 --quiet --json $OUT/bench_${s}_$m.json >>$LOG 2>&1
    [ $s = new ] && timeout 150 .devbuild/new/jouleprof-llm bench --model $m --variant dataflow --batch 1 --prompt 128 --gen 128 --min-seconds 2 --no-components --idle 1.5 --quiet --json $OUT/bench_newdf_$m.json >>$LOG 2>&1
  done
done
python3 - "$OUT" <<'PY' | tee -a $LOG
import json,sys,glob,os
for f in sorted(glob.glob(sys.argv[1]+"/bench_*.json")):
    try:
        for p in json.load(open(f))["llm"]["points"]:
            d=p.get("decode") or {}
            print("B", os.path.basename(f), p["model"], round(d.get("tokens_per_s",0),1), round(d.get("j_per_token",0),4), round(d.get("mean_power_w",0),1))
    except Exception as e: print("B", f, e)
PY
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv,noheader | tee -a $LOG
grep "^P \|^B " $LOG
