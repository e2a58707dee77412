#!/usr/bin/env bash
# Turns measurement results into the README's report screenshot (docs/img/report.png).
#
#   scripts/make-report-screenshot.sh [-o OUT.png] RESULT.json[:TIMELINE.csv] ...
#   scripts/make-report-screenshot.sh --simulated      # docs/img/report-simulated.png from a simulated run
#
# Each result (measure --json) is imported with its timeline CSV (measure --timeline) into a
# temporary run store, `jouleprof report` writes the HTML, and headless Chromium takes the picture.
# The jouleprof binary: $JOULEPROF_BIN, else build/{release,ci,store}/bin/jouleprof.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/docs/img/report.png"
simulated=0
width=1280 height=1300
specs=()
while (($#)); do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    --simulated) simulated=1; out="$root/docs/img/report-simulated.png"; shift ;;
    --size) width="${2%x*}"; height="${2#*x}"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) specs+=("$1"); shift ;;
  esac
done
jp="${JOULEPROF_BIN:-}"
if [ -z "$jp" ]; then
  for b in release ci store; do
    c="$root/build/$b/bin/jouleprof"
    # A build that has the report command (older builds may not).
    if [ -x "$c" ] && "$c" report --help >/dev/null 2>&1; then jp="$c"; break; fi
  done
fi
[ -n "$jp" ] || { echo "make-report-screenshot: build jouleprof first (or set JOULEPROF_BIN)" >&2; exit 2; }
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "make-report-screenshot: chromium is not installed (scripts/install-deps.sh)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
db="$tmp/runs.db"
export JOULEPROF_DB="$tmp/default.db"  # where measure may record by default: not the user's store
if ((simulated)); then
  for b in 1 8; do
    (cd "$tmp" && "$jp" measure --device sim --runs 3 --idle 2 --tag batch=$b --tag model=llama-3.2-1b \
       --json "sim$b.json" --timeline "sim$b.csv" -q)
    specs+=("$tmp/sim$b.json:$tmp/sim$b.csv")
  done
fi
((${#specs[@]})) || { echo "make-report-screenshot: name at least one RESULT.json[:TIMELINE.csv] (or --simulated)" >&2; exit 2; }
ids=()
for s in "${specs[@]}"; do
  json="${s%%:*}"
  if [[ "$s" == *:* ]]; then
    "$jp" runs --db "$db" import "$json" --timeline "${s#*:}" --allow-duplicate >/dev/null
  else
    "$jp" runs --db "$db" import "$json" --allow-duplicate >/dev/null
  fi
  ids+=("${#ids[@]}")
done
refs=()
for i in "${!ids[@]}"; do refs+=("$((i + 1))"); done
title="jouleprof report"
((simulated)) && title="jouleprof report (simulated GPU)"
"$jp" report "${refs[@]}" --db "$db" -o "$tmp/report.html" --title "$title" -q
mkdir -p "$(dirname "$out")"
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$tmp/profile" --virtual-time-budget=10000 \
  --window-size="$width,$height" --screenshot="$out" "file://$tmp/report.html" >/dev/null 2>&1
echo "wrote $out (from ${#specs[@]} run(s))"
