#!/usr/bin/env bash
# Builds what scripts/device-replay.sh runs on the GPU machine (`device` preset: CUDA on, sm_90,
# static libstdc++) into .devbuild/replay: jouleprof, jouleprof-replay, jouleprof_kineto_bench,
# and the shared libraries of this machine the device lacks (simdjson, SQLite ...) in .devbuild/replay/lib.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset device -DJOULEPROF_BUILD_BENCH=ON -DJOULEPROF_BUILD_TESTS=OFF >/dev/null
cmake --build build/device -j"$(nproc)" --target jouleprof_cli jouleprof_replay_engine jouleprof_kineto_bench
mkdir -p .devbuild/replay/bin .devbuild/replay/lib
cp build/device/bin/jouleprof build/device/bin/jouleprof-replay build/device/bench/jouleprof_kineto_bench .devbuild/replay/bin/
for b in .devbuild/replay/bin/*; do
  for lib in $(ldd "$b" | awk '/simdjson|sqlite|onnx|protobuf|absl|fmt|re2/ {print $3}'); do
    case $lib in "$PWD"/.devbuild/*) ;; *) cp -L "$lib" .devbuild/replay/lib/ ;; esac
  done
done
ls -la .devbuild/replay/bin .devbuild/replay/lib
