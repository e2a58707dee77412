#!/usr/bin/env bash
# The honest protocol on the published FGCS-2023 V100 data (docs/validation/models.md):
#   1. nested leave-one-application-out, --form auto (form, hyper-parameters and outlier rule chosen
#      inside each outer fold), over all 21 applications and over the 16 development ones;
#   2. the locked test set (5 applications drawn by seed 34), evaluated once the design is final;
#   3. each form alone (its hyper-parameters still chosen inside each fit) for the per-form table;
#   4. the published model's own predictions file.
# Usage: scripts/validate-models-v100.sh [DATA_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/fgcs-v100}
OUT=${2:-models-v100-nested}
BIN=${BIN:-build/ci/bin/jouleprof}
JOBS=${JOBS:-2}
mkdir -p "$OUT"
run() {  # name, args...
  local name=$1; shift
  "$BIN" model validate "$@" --gpu V100 --objective energy,edp,ed2p,slowdown:5 --json "$OUT/$name.json" -q >/dev/null
  echo "done $name"
}
export -f run; export BIN OUT
PROBES_AUTO=${PROBES_AUTO:-1 2 3}
{
  for p in $PROBES_AUTO; do
    for file in mean_fp_data_21_apps fgcs_predicted_21_apps; do
      echo "run $file.auto.nested21.probes$p --data $DATA/$file.csv --form auto --probes $p"
    done
    for file in mean_fp_data_21_apps fgcs_predicted_21_apps; do
      echo "run $file.auto.locked.probes$p --data $DATA/$file.csv --form auto --probes $p --locked 5 --locked-seed 34 --report-locked"
    done
  done
  for file in mean_fp_data_21_apps fgcs_predicted_21_apps; do
    for p in 1 2 3; do
      for form in physics poly fgcs; do
        echo "run $file.$form.probes$p --data $DATA/$file.csv --form $form --probes $p"
      done
    done
  done
} | xargs -P "$JOBS" -I{} bash -c '{}'
# The published model's own in-sample figures, from its predictions file.
"$BIN" model eval --data "$DATA/fgcs_predicted_21_apps.csv" --pred-power-col predicted_power_usage \
  --pred-time-col predicted_run_time --no-outliers --objective energy,edp,ed2p,slowdown:5 --json "$OUT/published.in-sample.json" -q >/dev/null
python3 scripts/validation/models_table.py "$OUT"
