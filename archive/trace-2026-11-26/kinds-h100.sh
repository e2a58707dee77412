#!/usr/bin/env bash
# Where does `jouleprof trace`'s cost on HF eager generate come from: the sampler or the tracing?
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/exp}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 JOULEPROF_DATA_DIR=$PWD/data
LIB=$PWD/.devbuild/trace/libjouleprof_inject.so
XLIB=$PWD/.devbuild/trace/libjp_exp.so
export JOULEPROF_INJECT_LIB=$LIB
CUPTI=$(ls /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so 2>/dev/null | head -1)
HF=scripts/validation/trace/hf_generate.py
JP=.devbuild/trace/jouleprof
one() {
  local name=$1; shift
  local d; d=$(mktemp -d)
  case $name in
    U) pre=() ;;
    E*) pre=(env CUDA_INJECTION64_PATH=$XLIB NVTX_INJECTION64_PATH=$XLIB JOULEPROF_CUPTI_LIB=$CUPTI JOULEPROF_TRACE_DIR=$d) ;;
    D) pre=(env CUDA_INJECTION64_PATH=$LIB NVTX_INJECTION64_PATH=$LIB JOULEPROF_CUPTI_LIB=$CUPTI JOULEPROF_TRACE_DIR=$d) ;;
    M) pre=($JP measure --idle 0 --no-store -q --) ;;
    TN) pre=($JP trace --no-cpu --idle 0 --no-store -q --) ;;
    T) pre=($JP trace --idle 0 --no-store -q --) ;;

  esac
  case $name in
    Efull) export JP_EXP_KINDS=kernel,copy,device JP_EXP_ANCHOR=1 JP_EXP_TID=1 ;;
    Enoanchor) export JP_EXP_KINDS=kernel,copy,device JP_EXP_ANCHOR=0 JP_EXP_TID=1 ;;
    Enotid) export JP_EXP_KINDS=kernel,copy,device JP_EXP_ANCHOR=1 JP_EXP_TID=0 ;;
    Ekernel) export JP_EXP_KINDS=kernel JP_EXP_ANCHOR=0 JP_EXP_TID=0 ;;
    Enone) export JP_EXP_KINDS=none JP_EXP_ANCHOR=0 JP_EXP_TID=0 ;;
  esac
  timeout 120 taskset -c 2-5 "${pre[@]}" python3 $HF --reps 10 --gen 32 2>>"$OUT/exp3.log" | sed "s/^/$name /" >> "$OUT/exp3.txt"
  rm -rf "$d"
}
for r in 1 2 3; do
  for c in U Efull Enoanchor Enotid Ekernel Enone; do one $c; done
done
python3 - "$OUT/exp3.txt" <<'PY'
import json,statistics,sys,collections
c=collections.defaultdict(list); r=collections.defaultdict(list)
for l in open(sys.argv[1]):
    p=l.split(' ',2)
    if len(p)<3 or not p[2].startswith('{'): continue
    d=json.loads(p[2]); c[p[0]]+=d['generate_s']; r[p[0]].append(statistics.median(d['generate_s']))
u=statistics.median(c['U'])
for k in c: print(k, len(c[k]), round(statistics.median(c[k]),4), f"{100*(statistics.median(c[k])/u-1):+.1f}%", [round(x,4) for x in r[k]])
PY
