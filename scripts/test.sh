#!/usr/bin/env bash
# The test command: installs what the build needs, builds with warnings as errors (CUDA off)
# and runs every CPU test (unit, integration; GPU-only tests carry the label "device").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Issue 31: main's tracked size (test fixtures excluded) stays under 8 MB; the lab is the `lab` branch.
./scripts/check-tracked-size.sh
cmake --preset ci >/dev/null
cmake --build build/ci -j"$(nproc)"
# Sweep (issue 17): a local SLURM cluster for the job-array test; CI runs as root, where it must start.
if [ "$(id -u)" = 0 ]; then
  ./scripts/slurm-local.sh start
  export JOULEPROF_SLURM_TEST=1
fi
ctest --preset ci -j"$(nproc)" --timeout 300
# Issue 22: the parsers' property tests again under ASan/UBSan (builds only what they link).
./scripts/asan-fuzz.sh
# Issue 20: the CUDA code compiles (no GPU needed): the LLM engine, burn, the trace workload as
# PTX for sm_90 and the CUPTI injection library, warnings as errors, through ccache
# (CMakePresets.json "cuda-check"; 2-core machine: ~140 s with a cold cache, ~15 s warm).
export PATH="$PATH:/usr/local/cuda/bin" CCACHE_BASEDIR="$PWD"
if command -v nvcc >/dev/null; then
  cmake --preset cuda-check >/dev/null
  cmake --build --preset cuda-check -j"$(nproc)"
else
  echo "test.sh: no nvcc on this machine: the CUDA compile check is skipped" >&2
fi
