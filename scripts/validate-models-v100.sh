#!/usr/bin/env bash
# Leave-one-application-out validation of every model form on the published FGCS-2023 V100 data
# (docs/validation/models.md). Usage: scripts/validate-models-v100.sh [DATA_DIR] [OUT_DIR]
#   DATA_DIR: holds mean_fp_data_21_apps.csv and fgcs_predicted_21_apps.csv (default ../shared/data/fgcs-v100)
#   OUT_DIR:  JSON results (default archive/models-v100)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/fgcs-v100}
OUT=${2:-archive/models-v100}
BIN=${BIN:-build/ci/bin/jouleprof}
mkdir -p "$OUT"
for file in mean_fp_data_21_apps fgcs_predicted_21_apps; do
  for form in fgcs poly xgboost knn ensemble; do
    for probes in 1 2 3; do
      echo "== $file $form probes=$probes"
      "$BIN" model validate --data "$DATA/$file.csv" --form "$form" --split loao --probes "$probes" --gpu V100 \
        --objective energy,edp,ed2p,slowdown:5 --json "$OUT/$file.$form.probes$probes.json"
    done
  done
done
# The published model's own in-sample figures, for the side-by-side table (its predictions file).
"$BIN" model eval --data "$DATA/fgcs_predicted_21_apps.csv" --pred-power-col predicted_power_usage \
  --pred-time-col predicted_run_time --no-outliers --objective energy,edp,ed2p,slowdown:5 --json "$OUT/published.in-sample.json"
