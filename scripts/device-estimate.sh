#!/usr/bin/env bash
# Calibration/validation measurements for `jouleprof estimate` on the GPU machine (one call).
# Needs a jouleprof binary built here and carried (static libstdc++):
#   cmake --preset ci -B build/dev-est -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" \
#         -DJOULEPROF_BUILD_TESTS=OFF -DJOULEPROF_BUILD_BENCH=OFF && cmake --build build/dev-est --target jouleprof_cli
#   run: bash scripts/device-estimate.sh   (carry: build/dev-est/bin)
#   SET=blind2 measures the second held-out set instead (no ONNX exports); see estimate_calib.py.
# Writes under $OUT: measure.json (jouleprof's windows), phases.json (latency, shapes, NVML
# counter cross-check), onnx.tar.gz (torchvision models exported to ONNX, weights stripped), log.txt.
set -uo pipefail
OUT=${OUT:-out/device-estimate}
SET=${SET:-calib}
mkdir -p "$OUT" "$OUT/onnx"
JP=${JOULEPROF:-build/dev-est/bin/jouleprof}
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv
  export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
  # (no --tag before "--": the repeatable option swallows "--" and the command; see docs/validation/estimate.md)
  "$JP" measure --idle 3 --period-ms 50 --json "$OUT/measure.json" -- \
    bash -c "python3 workloads/microbench/estimate_calib.py $OUT/phases.json --set $SET --onnx-dir $OUT/onnx --seconds ${SECONDS_PER_PHASE:-3}"
  echo "measure exit: $?"
  [ "$SET" = calib ] && (cd "$OUT" && tar czf onnx.tar.gz onnx)
  rm -rf "$OUT/onnx"
  nvidia-smi --query-gpu=temperature.gpu,clocks.sm,power.draw --format=csv
} 2>&1 | tee "$OUT/log.txt"
