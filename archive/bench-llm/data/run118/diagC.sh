#!/usr/bin/env bash
# 3B decode of new vs base under `jouleprof trace` (kernel sequence in context) and module loading.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export JOULEPROF_DATA_DIR=$PWD/data JOULEPROF_INJECT_LIB=$PWD/.devbuild/trace/libjouleprof_inject.so
scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 & p1=$!
scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 & p2=$!
wait $p1 $p2
for s in new base; do
  v=auto; [ $s = base ] && v=fused
  .devbuild/trace/jouleprof trace --idle 0 --no-store -q --perfetto $OUT/pf_$s.json -- .devbuild/$s/jouleprof-llm speed --model llama-3.2-3b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 0.3 --variants $v 2>&1 | grep "tok/s" | cut -c1-100
  gzip -f $OUT/pf_$s.json
done
for r in 1 2; do for ml in LAZY EAGER; do for s in new base; do
  v=auto; [ $s = base ] && v=fused
  CUDA_MODULE_LOADING=$ml timeout 100 .devbuild/$s/jouleprof-llm speed --model llama-3.2-3b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 1 --variants $v 2>&1 | grep "tok/s" | cut -c1-100 | sed "s/^/M $ml $s | /"
done; done; done
ls -la $OUT
