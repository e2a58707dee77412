#!/usr/bin/env bash
# The worked examples of docs/sweep.md, on the simulated GPU (anywhere, no GPU needed).
#   scripts/sweep-example.sh [OUTDIR]          a clock sweep and a power-limit sweep of the built-in
#                                              workload, with the report's CSV, JSON and SVG figures
#   scripts/sweep-example.sh --chain [OUTDIR]  the offline chain: a sweep of three simulated
#                                              applications (docs/simulated-gpu.md, `application`),
#                                              then `model fit --sweep` and `optimize --sweep`
# Every figure is simulated.
set -euo pipefail
J=${JOULEPROF:-build/ci/bin/jouleprof}
chain=0
if [ "${1:-}" = --chain ]; then
  chain=1
  shift
fi
out=${1:-sweep-example}
mkdir -p "$out"
export JOULEPROF_DB="$out/runs.db" JOULEPROF_CONTROL_DIR="$out/journal"

if [ "$chain" = 1 ]; then
  cat > "$out/apps.txt" <<SCENARIO
# Four applications with their own behaviour on the simulated GPU (docs/simulated-gpu.md).
workload_time_scale ${CHAIN_TIME_SCALE:-0.25}  # faster than the real workload (the ctest uses 0.1)
application app=gemm    power_scale 1.10 compute_share 0.95                 # compute-bound
application app=decode  power_scale 0.70 compute_share 0.15 time_scale 1.5  # memory-bound
application app=stream  power_scale 0.85 compute_share 0.45
application app=mixed   power_scale 1.00 compute_share 0.60 time_scale 0.8
SCENARIO
  "$J" sweep --device sim --sim-scenario "$out/apps.txt" --clocks "${CHAIN_CLOCKS:-step:8}" \
    --param app=gemm,decode,stream,mixed --runs 2 --warmup 0 --idle 0 --no-cpu --metrics --sweep-id sim-apps \
    --csv "$out/apps.csv" | tee "$out/apps.txt.out"
  "$J" model fit --sweep sim-apps --form "${CHAIN_FORM:-knn}" -o "$out/sim.model.json" --gpu H100
  "$J" optimize --sweep sim-apps --objective slowdown:5 | tee "$out/optimize.txt"
  "$J" optimize --sweep sim-apps --objective slowdown:5 --json "$out/optimize.json" -q
  exit 0
fi

"$J" sweep --device sim --clocks step:22 --runs 3 --warmup 0 --idle 1 --no-cpu --sweep-id sim-clocks \
  --csv "$out/clocks.csv" --svg-dir "$out/figures" | tee "$out/clocks.txt"
"$J" sweep --device sim --power-limits 700,500,400,300,200 --runs 3 --warmup 0 --idle 1 --no-cpu --sweep-id sim-limits \
  --csv "$out/limits.csv" --svg-dir "$out/figures" | tee "$out/limits.txt"
"$J" sweep --report sim-clocks --json "$out/clocks.json" -q
"$J" sweep --report sim-limits --json "$out/limits.json" -q
