#!/usr/bin/env bash
# Builds what scripts/device-python.sh runs on the GPU machine (Python 3.12 there; none of this
# machine's Debian libraries): the extension module for Python 3.12 (pyenv's headers here) and
# the window-cost benchmark, with static libstdc++, into .pydev/ for `carry`; the shared
# libraries they need from Debian (SQLite, Google Benchmark) go to .pydev/lib (RUNPATH $ORIGIN/../lib).
set -euo pipefail
cd "$(dirname "$0")/.."
PY312=${PY312:-$(pyenv prefix 3.12 2>/dev/null || echo /usr/local)/bin/python3.12}  # any CPython 3.12 with its headers
cmake -S . -B build/pydev -G Ninja -DCMAKE_BUILD_TYPE=Release -DJOULEPROF_WITH_CUDA=OFF \
  -DJOULEPROF_BUILD_TESTS=OFF -DJOULEPROF_BUILD_BENCH=ON -DJOULEPROF_INSTALL=OFF -DPython3_EXECUTABLE="$PY312" \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" \
  -DCMAKE_SHARED_LINKER_FLAGS="-static-libstdc++ -static-libgcc" \
  -DCMAKE_MODULE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  -DCMAKE_BUILD_RPATH='$ORIGIN/../lib;$ORIGIN/../../lib' >/dev/null
cmake --build build/pydev -j2 --target jouleprof_python jouleprof_window_bench
rm -rf .pydev && mkdir -p .pydev/bin .pydev/lib .pydev/py
cp -r build/pydev/python/jouleprof .pydev/py/
cp build/pydev/bench/jouleprof_window_bench .pydev/bin/
for f in .pydev/py/jouleprof/_jouleprof*.so .pydev/bin/jouleprof_window_bench; do
  for lib in $(ldd "$f" | awk '/sqlite|benchmark|re2|simdjson|fmt|onnx|protobuf/ {print $3}'); do cp -L "$lib" .pydev/lib/; done
done
ls -la .pydev/*/ .pydev/py/jouleprof
