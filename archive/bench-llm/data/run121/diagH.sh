#!/usr/bin/env bash
# ncu full sections + per-instruction source counters of one qkv_attn_kernel launch (8B decode), new vs base.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 & p1=$!
scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 & p2=$!
wait $p1 $p2
tail -n1 $OUT/build_*.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for s in new base; do
  v=auto; [ $s = base ] && v=fused
  timeout 200 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:qkv_attn --launch-skip 300 --launch-count 1 \
    --set full --import-source no -o /tmp/qkv_$s .devbuild/$s/jouleprof-llm speed --model llama-3.1-8b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 0.3 --variants $v > /tmp/ncu_$s.log 2>&1
  echo "$s rc=$?"; tail -2 /tmp/ncu_$s.log
  $NCU --import /tmp/qkv_$s.ncu-rep --page details > $OUT/details_$s.txt 2>&1
  $NCU --import /tmp/qkv_$s.ncu-rep --page source --csv --print-source sass > $OUT/sass_$s.csv 2>&1
  ls -la $OUT/sass_$s.csv
done
cd $OUT && tar czf sass.tgz sass_*.csv && rm sass_*.csv
