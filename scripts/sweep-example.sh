#!/usr/bin/env bash
# The worked example of docs/sweep.md: a clock sweep and a power-limit sweep of the built-in
# workload on the simulated GPU (anywhere, no GPU needed), with the report's CSV, JSON and SVG
# figures. Usage: scripts/sweep-example.sh [OUTDIR]
set -euo pipefail
J=${JOULEPROF:-build/ci/bin/jouleprof}
out=${1:-sweep-example}
mkdir -p "$out"
export JOULEPROF_DB="$out/runs.db" JOULEPROF_CONTROL_DIR="$out/journal"
"$J" sweep --device sim --clocks step:22 --runs 3 --warmup 0 --idle 1 --no-cpu --sweep-id sim-clocks \
  --csv "$out/clocks.csv" --svg-dir "$out/figures" | tee "$out/clocks.txt"
"$J" sweep --device sim --power-limits 700,500,400,300,200 --runs 3 --warmup 0 --idle 1 --no-cpu --sweep-id sim-limits \
  --csv "$out/limits.csv" --svg-dir "$out/figures" | tee "$out/limits.txt"
"$J" sweep --report sim-clocks --json "$out/clocks.json" -q
"$J" sweep --report sim-limits --json "$out/limits.json" -q
