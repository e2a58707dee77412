#!/usr/bin/env bash
# The engine against a base commit in one GPU-machine call: each side's CUDA translation unit is
# compiled there in parallel (scripts/device-build-llm.sh, 16 idle cores), then
# `scripts/device-bench-llm.sh ab` runs `check` (bf16, fp16) of this tree and the interleaved
# batch-1 decode sweeps (1B, 3B, 8B; each side in turn, two rounds).
#   Sides: new  = this tree with the host objects in .devbuild/new-obj,
#          base = .devbuild/base-src with .devbuild/base-obj (both of the base commit),
#          each NAME in $EXTRA = .devbuild/NAME-src with the host objects of new.
# Host objects: `cmake --preset device` builds (main.cpp.o and the static libraries, see
# scripts/device-build-llm.sh). Everything lands in $OUT; the build logs and the JSON as one tar.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/engine-ab}
mkdir -p "$OUT"
export AB_T0=$(date +%s)
scripts/device-build-llm.sh new . .devbuild/new-obj >"$OUT/build_new.txt" 2>&1 &
scripts/device-build-llm.sh base .devbuild/base-src .devbuild/base-obj >"$OUT/build_base.txt" 2>&1 &
for x in ${EXTRA:-}; do
  scripts/device-build-llm.sh "$x" ".devbuild/$x-src" .devbuild/new-obj >"$OUT/build_$x.txt" 2>&1 &
done
wait
tail -n 1 "$OUT"/build_*.txt
sides="new=.devbuild/new base=.devbuild/base"
for x in ${EXTRA:-}; do sides="$sides $x=.devbuild/$x"; done
export AB_SIDES=$sides
BIN=.devbuild/new BASE=.devbuild/base OUT=$OUT scripts/device-bench-llm.sh ab
(cd "$OUT" && tar czf ab-data.tgz build_*.txt ab_bench_*.json && rm -f build_*.txt ab_bench_*.json)
