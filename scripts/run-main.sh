#!/usr/bin/env bash
# The main job: installs what the build needs, builds jouleprof (with the CUDA workloads when a
# CUDA toolkit is present) and measures the built-in workload three times. On a machine
# without an NVIDIA GPU the built-in workload runs on the simulated GPU, and every figure says
# "simulated". Extra arguments go to `jouleprof measure`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build build/release -j"$(nproc)"
exec build/release/bin/jouleprof measure --runs 3 --json jouleprof-result.json "$@"
