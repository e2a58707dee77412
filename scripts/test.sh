#!/usr/bin/env bash
# The test command: installs what the build needs, builds with warnings as errors (CUDA off)
# and runs every CPU test (unit, integration; GPU-only tests carry the label "device").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset ci >/dev/null
cmake --build build/ci -j"$(nproc)"
ctest --preset ci -j"$(nproc)" --timeout 300
# Issue 22: the parsers' property tests again under ASan/UBSan (builds only what they link).
./scripts/asan-fuzz.sh
