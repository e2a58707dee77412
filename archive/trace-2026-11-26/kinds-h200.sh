#!/usr/bin/env bash
# Overhead experiment: which activity kind costs what (HF Llama-1B eager generate, 32 tokens).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/exp}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/python
LIB=$PWD/.devbuild/trace/libjp_exp.so
CUPTI=$(ls /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so 2>/dev/null | head -1)
echo "cupti $CUPTI" >> "$OUT/exp.log"
HF=scripts/validation/trace/hf_generate.py
JP=.devbuild/trace/jouleprof
export JOULEPROF_INJECT_LIB=$PWD/.devbuild/trace/libjouleprof_inject.so JOULEPROF_DATA_DIR=$PWD/data
one() {  # name kinds anchor [--annotate]
  local name=$1 kinds=$2 anchor=$3; shift 3
  local d; d=$(mktemp -d)
  if [ "$kinds" = U ]; then
    timeout 120 taskset -c 2-5 python3 $HF --reps 8 --gen 32 "$@" 2>>"$OUT/exp.log" | sed "s/^/$name /" >> "$OUT/exp.txt"
  elif [ "$kinds" = T ]; then
    timeout 120 taskset -c 2-5 $JP trace --idle 0 --no-store -q -- python3 $HF --reps 8 --gen 32 "$@" 2>>"$OUT/exp.log" | sed "s/^/$name /" >> "$OUT/exp.txt"
  else
    JP_EXP_KINDS=$kinds JP_EXP_ANCHOR=$anchor CUDA_INJECTION64_PATH=$LIB NVTX_INJECTION64_PATH=$LIB JOULEPROF_CUPTI_LIB=$CUPTI JOULEPROF_TRACE_DIR=$d \
      timeout 120 taskset -c 2-5 python3 $HF --reps 8 --gen 32 "$@" 2>>"$OUT/exp.log" | sed "s/^/$name /" >> "$OUT/exp.txt"
    ls -la $d >> "$OUT/exp.log"
  fi
  rm -rf "$d"
}
for r in 1 2 3; do
  one U U 0
  one E0 none 0
  one K kernel 0
  one KC kernel,copy 0
  one KCM kernel,copy,marker,device 0
  one KCMA kernel,copy,marker,device 1
  one T T 0
done
for r in 1 2 3; do
  one UA U 0 --annotate
  one KCMA_A kernel,copy,marker,device 1 --annotate
  one KCM_A kernel,copy,marker,device 0 --annotate
  one TA T 0 --annotate
done
