#!/usr/bin/env bash
# ncu in context (graph nodes, no cache flush, no clock lock): bytes from DRAM and time of the
# step's kernels, new vs base, 3B decode.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 & p1=$!
scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 & p2=$!
wait $p1 $p2
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for s in new base; do
  v=auto; [ $s = base ] && v=fused
  timeout 200 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"qkv_attn" \
    --launch-skip 600 --launch-count 3 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,smsp__cycles_active.avg \
    --csv .devbuild/$s/jouleprof-llm speed --model llama-3.2-3b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 0.3 --variants $v > $OUT/ncu_$s.csv 2>$OUT/ncu_$s.err
  echo "$s rc=$?"; grep -c "qkv_attn" $OUT/ncu_$s.csv
done
