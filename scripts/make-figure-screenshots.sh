#!/usr/bin/env bash
# Every `plot` chart and both kinds of report (measure runs compared along a tag; a bench llm
# sweep), made from simulated data, as PNG files: the before/after pictures of docs/report.md.
#
#   scripts/make-figure-screenshots.sh PREFIX            # docs/img/PREFIX-<chart>.png
#   JOULEPROF_BIN=/path/to/jouleprof scripts/make-figure-screenshots.sh before
#
# Data: three measure runs of a shell workload with prefill/decode markers on the simulated GPU
# (tags batch=1/8/32, 3 repeats each, --sim-power 300/420/610 W) and a simulated bench llm sweep
# of the tiny model (batch 1,4,16 × prompt 8,32). Needs Node.js and chromium (scripts/install-deps.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${1:?usage: make-figure-screenshots.sh PREFIX}"
jp="${JOULEPROF_BIN:-$root/build/ci/bin/jouleprof}"
browser="$(command -v chromium || command -v chromium-browser)"
out="$root/docs/img"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export JOULEPROF_DB="$tmp/default.db"
db="$tmp/runs.db"
work='echo begin prefill > $JOULEPROF_MARKERS; sleep 0.2; echo end prefill > $JOULEPROF_MARKERS;
      echo begin decode > $JOULEPROF_MARKERS; sleep 0.4; echo end decode > $JOULEPROF_MARKERS;
      echo count tokens 256 decode > $JOULEPROF_MARKERS'
for bp in 1:300 8:420 32:610; do
  "$jp" measure --device sim --idle 0.5 --runs 3 -q --db "$db" --tag batch="${bp%:*}" --tag model=llama-3.2-1b \
    --sim-power "${bp#*:}" -- sh -c "$work" >/dev/null
done
"$jp" bench llm --device sim --model tiny --batch 1,4,16 --prompt 8,32 --gen 4 --min-seconds 0.05 --iso-seconds 0.05 \
  --idle 0 -q --db "$db" >/dev/null 2>&1
m="$("$jp" runs --db "$db" list | awk '$1 ~ /^[0-9]+$/ && !/bench=llm/ {print $1}' | tr '\n' ' ')"
b="$("$jp" runs --db "$db" list | awk '$1 ~ /^[0-9]+$/ && /bench=llm/ {print $1}' | tr '\n' ' ')"
first="${m%% *}"
for chart in timeline clocks windows; do
  "$jp" plot "$first" --db "$db" --chart "$chart" --png "$out/$prefix-plot-$chart.png" --width 900 --height 420 2>/dev/null || true
done
for chart in repeats compare tokens; do
  # shellcheck disable=SC2086
  "$jp" plot $m --db "$db" --chart "$chart" --by batch --png "$out/$prefix-plot-$chart.png" --width 900 --height 420 2>/dev/null || true
done
for chart in scaling throughput components; do
  # shellcheck disable=SC2086
  "$jp" plot $b --db "$db" --chart "$chart" --png "$out/$prefix-plot-$chart.png" --width 900 --height 460 2>/dev/null || true
done
# shellcheck disable=SC2086
"$jp" report $m --db "$db" --by batch -o "$tmp/measure.html" -q 2>/dev/null || "$jp" report $m --db "$db" --by batch -o "$tmp/measure.html"
# shellcheck disable=SC2086
"$jp" report $b --db "$db" -o "$tmp/bench.html" -q 2>/dev/null || "$jp" report $b --db "$db" -o "$tmp/bench.html"
for r in measure bench; do
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile-$r" \
    --window-size=1100,2600 --virtual-time-budget=10000 --screenshot="$out/$prefix-report-$r.png" "file://$tmp/$r.html" \
    >/dev/null 2>&1
done
ls -la "$out"/"$prefix"-*.png
