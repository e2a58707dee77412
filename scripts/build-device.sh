#!/usr/bin/env bash
# Builds the binaries the device machine runs (CUDA on, sm_90, static libstdc++ so they need
# none of this machine's shared libraries) and copies them to .devbuild/bin and .devbuild/llm for
# `carry`; the shared libraries the device may lack (SQLite, ONNX, protobuf) go to .devbuild/lib.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset device -DJOULEPROF_BUILD_BENCH=OFF >/dev/null
cmake --build build/device -j"$(nproc)" --target jouleprof_cli jouleprof_burn jouleprof_device_tests jouleprof_llm "$@"
mkdir -p .devbuild/bin .devbuild/llm
cp build/device/bin/jouleprof build/device/bin/jouleprof-burn build/device/tests/device/jouleprof_device_tests .devbuild/bin/
# bench llm: jouleprof runs the jouleprof-llm beside it (scripts/device-bench-llm.sh, BIN=.devbuild/llm)
cp build/device/bin/jouleprof build/device/bin/jouleprof-llm .devbuild/llm/
# Shared libraries of this machine the device may lack (used only where it has none).
mkdir -p .devbuild/lib
# (The binaries look in $ORIGIN/../lib first, so a library already copied resolves to itself.)
for lib in $(ldd .devbuild/bin/jouleprof | awk '/sqlite|onnx|protobuf|absl/ {print $3}'); do
  case $lib in "$PWD"/.devbuild/*) ;; *) cp -L "$lib" .devbuild/lib/ ;; esac
done
ls -la .devbuild/bin .devbuild/lib
