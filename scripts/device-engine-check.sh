#!/usr/bin/env bash
# The CUDA engine against the CPU reference, one line per decode plan, in one GPU-machine call:
# engine_cuda.cu compiled there (scripts/device-build-llm.sh), then `jouleprof-llm check` on the
# tiny model, whose cases run every plan (separate with GEMV kernels, separate with cuBLAS,
# cluster, dataflow, and the default choice) and compare each step's logits and tokens with the
# CPU reference; check prints one PASS/FAIL line per plan (a plan no case ran fails).
#   here:    scripts/device-engine-check.sh prepare
#            host objects of `cmake --preset device` (main.cpp.o, the static libraries,
#            generated/) into .devbuild/check-obj, from this tree: carry that folder.
#   device:  scripts/device-engine-check.sh
#            DTYPES="bf16 fp16" also checks fp16 (default bf16; about 10-20 s of GPU each).
# Logs and the check's JSON go to $OUT. Exit status 0 only when every plan passed.
set -u
cd "$(dirname "$0")/.."
OBJ=.devbuild/check-obj
if [ "${1:-}" = prepare ]; then
  set -e
  cmake --preset device -DJOULEPROF_BUILD_BENCH=OFF >/dev/null
  b=build/device
  cmake --build "$b" -j"$(nproc)" --target jouleprof_workloads jouleprof jouleprof_simmodel jouleprof_core
  ninja -C "$b" workloads/llm/CMakeFiles/jouleprof_llm.dir/cuda/main.cpp.o
  rm -rf "$OBJ" && mkdir -p "$OBJ"
  cp "$b/workloads/llm/CMakeFiles/jouleprof_llm.dir/cuda/main.cpp.o" "$b/src/workloads/libjouleprof_workloads.a" \
    "$b/src/libjouleprof.a" "$b/src/libjouleprof_simmodel.a" "$b/src/libjouleprof_core.a" "$OBJ/"
  cp -r "$b/generated" "$OBJ/"
  du -sh "$OBJ"
  exit 0
fi
[ $# -eq 0 ] || { echo "device-engine-check: unknown argument '$1' (prepare, or none on the GPU machine)" >&2; exit 2; }
OUT=${OUT:-/tmp/engine-check}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if [ ! -f "$OBJ/main.cpp.o" ]; then
  echo "device-engine-check: no host objects in $OBJ: run 'scripts/device-engine-check.sh prepare' here and carry $OBJ" >&2
  exit 2
fi
if ! scripts/device-build-llm.sh check . "$OBJ" >"$OUT/build.txt" 2>&1; then
  tail -n 20 "$OUT/build.txt"
  echo "device-engine-check: building jouleprof-llm failed (log: $OUT/build.txt)" >&2
  exit 1
fi
tail -n 1 "$OUT/build.txt"
rc=0
for dt in ${DTYPES:-bf16}; do
  tol=()
  [ "$dt" = fp16 ] && tol=(--tol 1e-2 --tol-emulated 5e-3)  # as scripts/device-bench-llm.sh checks fp16
  t0=$(date +%s)
  timeout 60 .devbuild/check/jouleprof-llm check --model tiny --dtype "$dt" "${tol[@]}" --json "$OUT/check_$dt.json" \
    >"$OUT/check_$dt.txt" 2>&1
  r=$?
  echo "== $dt: jouleprof-llm check exit $r after $(($(date +%s) - t0)) s$([ $r -eq 124 ] && echo ' (timed out)')"
  grep -E " FAIL|^plan |ALL PASS|FAILED|error" "$OUT/check_$dt.txt"
  [ $r -eq 0 ] || rc=1
done
exit $rc
