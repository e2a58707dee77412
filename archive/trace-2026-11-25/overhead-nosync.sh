#!/usr/bin/env bash
# Experiment 2: untraced vs traced without synchronisation records (kernels, copies, NVTX, launch
# API records) vs kernels only; with and without the NVTX annotation; 4 interleaved rounds.
set -u
cd "$(dirname "$0")"
LIB=$PWD/libjp_exp.so
P=kernel,memcpy,memset,marker,apirt,apidrv
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv,noheader
run() {  # name kinds [--annotate]
  local name=$1 kinds=$2 d; d=$(mktemp -d); shift 2
  if [ "$kinds" = - ]; then
    python3 hf_generate.py --reps 7 --gen 32 "$@" 2>/dev/null | sed "s/^/$name /"
  else
    JP_EXP_KINDS=$kinds CUDA_INJECTION64_PATH=$LIB JOULEPROF_TRACE_DIR=$d python3 hf_generate.py --reps 7 --gen 32 "$@" 2>/dev/null | sed "s/^/$name /"
  fi
  rm -rf "$d"
}
for round in 1 2 3; do
  run U -
  run P $P
  run K kernel
  run UA - --annotate
  run PA $P --annotate
done
