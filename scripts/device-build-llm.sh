#!/usr/bin/env bash
# Compiles the CUDA engine's translation unit on the GPU machine (16 idle cores there, against a
# development machine shared by many builds) and links jouleprof-llm from host objects built here
# with `cmake --preset device` and carried.
#   scripts/device-build-llm.sh NAME SRC OBJ   SRC: a source tree (workloads/, include/),
#     OBJ: main.cpp.o, libjouleprof_workloads.a, libjouleprof.a, libjouleprof_simmodel.a,
#     libjouleprof_core.a and generated/ of a device-preset build; writes .devbuild/NAME/jouleprof-llm.
# Flags as build/device/build.ninja has them (sm_90, -O3, static libstdc++).
set -euo pipefail
name=$1 src=$2 obj=$3
out=.devbuild/$name
mkdir -p "$out"
cuda=/usr/local/cuda
lib=$cuda/targets/x86_64-linux/lib
[ -d "$lib" ] || lib=$cuda/lib64
t0=$(date +%s)
if [ ! -f "$obj/engine_cuda.cu.o" ]; then
  "$cuda/bin/nvcc" -forward-unknown-to-host-compiler -I"$src/workloads/llm" -I"$src/include" -I"$obj/generated" \
    -isystem="$cuda/include" -O3 -DNDEBUG "--generate-code=arch=compute_90,code=[compute_90,sm_90]" -Xcompiler=-fPIE \
    -std=c++20 -lineinfo --expt-relaxed-constexpr -std=c++17 -x cu -c "$src/workloads/llm/cuda/engine_cuda.cu" \
    -o "$out/engine_cuda.cu.o"
else
  cp "$obj/engine_cuda.cu.o" "$out/"
fi
t1=$(date +%s)
g++ -O3 -DNDEBUG -static-libstdc++ -static-libgcc "$obj/main.cpp.o" "$out/engine_cuda.cu.o" -o "$out/jouleprof-llm" \
  -L"$lib" "$obj/libjouleprof_workloads.a" "$lib/libcublas.so" "$lib/libcudart_static.a" -ldl "$obj/libjouleprof.a" \
  "$obj/libjouleprof_simmodel.a" "$obj/libjouleprof_core.a" "$lib/libcublasLt.so" "$lib/libculibos.a" -ldl -lrt \
  -lcudadevrt -lcudart_static -lrt -lpthread -ldl
echo "built $out/jouleprof-llm: nvcc $((t1 - t0)) s, link $(($(date +%s) - t1)) s"
