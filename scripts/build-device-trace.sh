#!/usr/bin/env bash
# Binaries for scripts/device-trace.sh, into .devbuild/trace (carried to the GPU machine):
# jouleprof and libjouleprof_inject.so from a CPU build (neither needs nvcc: NVML and CUPTI are
# loaded at run time), jouleprof-twoclass (and libjouleprof-twoclass.so) compiled with nvcc for sm_90, and the Debian shared
# libraries jouleprof links that the device lacks (found through RPATH $ORIGIN/lib, set with patchelf),
# and jouleprof-cupti-probe (workloads/cupti_probe).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/ci}
D=.devbuild/trace
mkdir -p $D/lib
cmake --build "$BUILD" -j2 --target jouleprof_cli jouleprof_inject
cp "$BUILD/bin/jouleprof" "$BUILD/lib/libjouleprof_inject.so" $D/
strip $D/jouleprof $D/libjouleprof_inject.so
[ -x $D/jouleprof-twoclass ] && [ $D/jouleprof-twoclass -nt workloads/trace_twoclass/twoclass.cu ] || nvcc -O2 -std=c++17 -gencode=arch=compute_90,code=sm_90 -cudart static workloads/trace_twoclass/twoclass.cu \
  -o $D/jouleprof-twoclass -lcublas
# The same file as the library twoclass_replay.py captures the classes' graph from (device-trace.sh twoclass).
[ -f $D/libjouleprof-twoclass.so ] && [ $D/libjouleprof-twoclass.so -nt workloads/trace_twoclass/twoclass.cu ] || nvcc -O2 -std=c++17 \
  -gencode=arch=compute_90,code=sm_90 -cudart static -shared -Xcompiler -fPIC,-fvisibility=hidden -DTWOCLASS_LIBRARY \
  workloads/trace_twoclass/twoclass.cu -o $D/libjouleprof-twoclass.so -lcublas
# The CUPTI probe (device-trace.sh graphprobe): CUPTI linked, as the device's CUDA 13 has it.
[ -x $D/jouleprof-cupti-probe ] && [ $D/jouleprof-cupti-probe -nt workloads/cupti_probe/cupti_graph_probe.cu ] || nvcc -O2 -std=c++17 \
  -gencode=arch=compute_90,code=sm_90 workloads/cupti_probe/cupti_graph_probe.cu -o $D/jouleprof-cupti-probe -lcupti
for lib in $(ldd $D/jouleprof | awk '/sqlite|onnx|protobuf|absl|simdjson|re2/ {print $3}'); do cp -L "$lib" $D/lib/; done
patchelf --set-rpath '$ORIGIN/lib' $D/jouleprof
ls -la $D $D/lib
