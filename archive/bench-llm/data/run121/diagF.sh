#!/usr/bin/env bash
# ncu in context (graph nodes, no cache flush, no clock lock), 8B decode, every kernel of ~2 steps:
# shared-memory configuration (the carveout the driver chose), time, DRAM and L2 traffic; new vs base.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
[ -x .devbuild/new/jouleprof-llm ] || scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 &
p1=$!
[ -x .devbuild/base/jouleprof-llm ] || scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 &
p2=$!
wait $p1 $p2
tail -n1 $OUT/build_*.txt 2>/dev/null
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
M=launch__shared_mem_config_size,launch__func_cache_config,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__grid_size,launch__block_size,launch__cluster_size,gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_op_read.sum,l1tex__t_sector_hit_rate.pct
for m in ${MODELS:-llama-3.1-8b}; do
for s in new base; do
  v=auto; [ $s = base ] && v=fused
  timeout 240 $NCU --graph-profiling node --cache-control none --clock-control none \
    --launch-skip ${SKIP:-3000} --launch-count ${COUNT:-300} --metrics $M \
    --csv .devbuild/$s/jouleprof-llm speed --model $m --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 0.3 --variants $v > $OUT/ncu_${m}_$s.csv 2>$OUT/ncu_${m}_$s.err
  echo "$m $s rc=$? lines=$(wc -l < $OUT/ncu_${m}_$s.csv)"
done
done
