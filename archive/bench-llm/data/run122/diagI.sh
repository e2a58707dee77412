#!/usr/bin/env bash
# A/B new (128-byte-aligned dynamic shared memory of the cluster kernel) vs base; ncu of new's qkv kernel (8B).
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
rm -rf .devbuild/new .devbuild/max
OUT=$OUT scripts/device-engine-ab.sh > $OUT/ab.txt 2>&1
grep -E "A/B|FAIL|ALL|built|rror" $OUT/ab.txt | sort -u | head -40
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
timeout 120 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:qkv_attn --launch-skip 300 --launch-count 5 \
  --metrics launch__shared_mem_config_size,gpu__time_duration.sum,lts__t_sectors_op_read.sum --csv \
  .devbuild/new/jouleprof-llm speed --model llama-3.1-8b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 0.3 --variants auto 2>&1 | grep '^"' | cut -d, -f5,13- | tail -15
