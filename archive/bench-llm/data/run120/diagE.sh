#!/usr/bin/env bash
# The L1/shared carveout of the cluster kernel and the GEMVs (pad = new + JP_DIAG_* carveouts), 3B and 8B.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
scripts/device-build-llm.sh pad .devbuild/pad-src .devbuild/new-obj >"$OUT/build_pad.txt" 2>&1 & p1=$!
[ -x .devbuild/base/jouleprof-llm ] || scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 &
wait
tail -n2 $OUT/build_pad.txt
sp() { local side=$1 m=$2; shift 2; env "$@" timeout 100 .devbuild/${side}/jouleprof-llm speed --model $m --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 1 --variants $([ $side = base ] && echo fused || echo auto) 2>&1 | grep "tok/s" | cut -c1-90 | sed "s/^/C $side $* | /"; }
for m in llama-3.2-3b llama-3.1-8b; do
  sp base $m; sp pad $m; sp pad $m JP_DIAG_CARVEOUT=100; sp pad $m JP_DIAG_CARVEOUT=86; sp pad $m JP_DIAG_CARVEOUT=76
  sp pad $m JP_DIAG_CARVEOUT=100 JP_DIAG_GEMV_CARVEOUT=100; sp pad $m JP_DIAG_CARVEOUT=86 JP_DIAG_GEMV_CARVEOUT=86; sp base $m
done
