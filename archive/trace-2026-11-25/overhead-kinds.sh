#!/usr/bin/env bash
# Experiment: which CUPTI activity kinds cost what on HF eager generate (interleaved, 2 rounds).
set -u
cd "$(dirname "$0")"
LIB=$PWD/libjp_exp.so
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv,noheader
run() {  # name kinds
  local name=$1 kinds=$2 d; d=$(mktemp -d)
  if [ "$name" = U ]; then
    python3 hf_generate.py --reps 5 --gen 32 2>/dev/null | sed "s/^/$name /"
  elif [ "$kinds" = FULL ]; then
    CUDA_INJECTION64_PATH=$LIB JOULEPROF_TRACE_DIR=$d python3 hf_generate.py --reps 5 --gen 32 2>/dev/null | sed "s/^/$name /"
  else
    JP_EXP_KINDS=$kinds CUDA_INJECTION64_PATH=$LIB JOULEPROF_TRACE_DIR=$d python3 hf_generate.py --reps 5 --gen 32 2>/dev/null | sed "s/^/$name /"
  fi
  echo "$name files: $(ls $d | wc -l) bytes: $(du -sb $d | cut -f1)"
  rm -rf "$d"
}
for round in 1 2; do
  run U -
  run K kernel
  run KM kernel,memcpy,memset,marker
  run KMS kernel,memcpy,memset,marker,sync
  run KMA kernel,memcpy,memset,marker,apirt
  run FULL FULL
done
