#!/usr/bin/env bash
# Issue 31: the product stays small. Sums the sizes of the files tracked in HEAD, test fixtures
# excluded (tests/**/fixtures/, tests/data/, tests/fuzz/corpus/), and fails above the limit.
#   scripts/check-tracked-size.sh [LIMIT_BYTES]     (default 8 MB = 8000000 bytes)
# Exit 0: under the limit; 1: over it (the largest files are listed); 77: not a git checkout.
set -euo pipefail
limit=${1:-8000000}
cd "$(dirname "$0")/.."
if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
  echo "check-tracked-size: not a git checkout: skipped" >&2
  exit 77
fi
# "MODE TYPE OBJECT SIZE<TAB>PATH" per blob; submodules (commits) have no size.
listing=$(git ls-tree -r -l HEAD | awk -F'\t' '{split($1, a, " "); if (a[2] == "blob") print a[4] "\t" $2}' |
  grep -Ev $'\ttests/(.*/)?fixtures/|\ttests/data/|\ttests/fuzz/corpus/' || true)
total=$(printf '%s\n' "$listing" | awk -F'\t' '{s += $1} END {printf "%d", s}')
echo "tracked size of HEAD without test fixtures: $total bytes (limit $limit)"
if [ "$total" -gt "$limit" ]; then
  echo "jouleprof: error: the repository's tracked files exceed $limit bytes; the largest:" >&2
  printf '%s\n' "$listing" | sort -t$'\t' -k1,1nr | head -10 >&2
  echo "raw data, logs and images of experiments belong on the lab branch (docs/ARCHITECTURE.md)" >&2
  exit 1
fi
