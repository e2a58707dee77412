#!/usr/bin/env bash
# Where the cluster plan's time goes, the engine against the base commit in one GPU-machine call
# (the 3B regression, docs/validation/bench-llm.md "Open"): both sides compiled there as in
# scripts/device-engine-ab.sh, then for each `jouleprof-llm speed` of Llama-3.2-3B at batch 1 with
# every component timed alone and the kernel timeline of one step, and the kernels' resource use.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/engine-diag}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 &
scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 &
wait
tail -n 1 "$OUT"/build_*.txt
for side in new base new base; do
  echo "=== $side speed ($(date -u +%FT%TZ))"
  timeout 120 ".devbuild/$side/jouleprof-llm" speed --model llama-3.2-3b --batch 1 --prompt 128 --gen 128 --prefill 0 \
    --variants auto --components --timeline --seconds 1 2>&1
done >"$OUT/speed.txt"
for side in new base; do
  echo "=== $side resource usage"
  /usr/local/cuda/bin/cuobjdump --dump-resource-usage ".devbuild/$side/jouleprof-llm" 2>&1 | grep -A1 "Function.*\(qkv_attn_kernelI13__nv_bfloat16Li128\|gemv_kernelI13__nv_bfloat16Li1E\|advance_kernelI13\)"
done >"$OUT/resources.txt"
cat "$OUT/resources.txt"
grep -v "^ *$" "$OUT/speed.txt" | head -150
