#!/usr/bin/env bash
# Issue 31: functions longer than N lines (default 150) in src/, include/, python/src and workloads/,
# longest first: "LINES FILE:LINE NAME" (universal-ctags, Debian's universal-ctags package).
#   scripts/long-functions.sh [N] [ROOT]          lists them all, CUDA kernels included
#   scripts/long-functions.sh --check [N] [ROOT]  the rule (ctest architecture.no_long_functions):
#     exit 1 when a function is longer than N lines, unless it is a CUDA __global__/__device__
#     function (exempt: a kernel is one unit of work) or is named in ROOT/scripts/long-functions.allow
#     ("FILE NAME  # why"); an allow-list entry that is no longer long fails too, so the list shrinks.
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
limit=${1:-150}
root=${2:-"$(dirname "$0")/.."}
cd "$root"
if ! command -v ctags >/dev/null; then
  echo "long-functions: universal-ctags is not installed (Debian package universal-ctags)" >&2
  exit 77
fi
dirs=()
for d in src include python/src workloads; do [ -d "$d" ] && dirs+=("$d"); done
long=$(ctags -R --languages=C++ --langmap=C++:+.cu.cuh --kinds-C++=f --fields=+ne -x \
  --_xformat='%{end} %{line} %{input} %{name}' "${dirs[@]}" 2>/dev/null |
  awk -v n="$limit" '$1 - $2 + 1 > n {print $1 - $2 + 1, $3 ":" $2, $4}' | sort -rn)
if [ "$check" = 0 ]; then
  [ -n "$long" ] && echo "$long"
  exit 0
fi

# A CUDA kernel or device function: __global__ / __device__ on its line or the 3 lines before it
# (a template header and the qualifiers often precede the name).
is_kernel() {
  local file=$1 line=$2
  case "$file" in *.cu|*.cuh) ;; *) return 1 ;; esac
  local from=$((line > 3 ? line - 3 : 1))
  sed -n "${from},${line}p" "$file" | grep -qE '__global__|__device__'
}
allow=scripts/long-functions.allow
allowed() { [ -f "$allow" ] && grep -v '^\s*#' "$allow" | awk '{print $1, $2}' | grep -qxF "$1 $2"; }

bad=0
seen=()
while read -r lines loc name; do
  [ -z "${lines:-}" ] && continue
  file=${loc%:*} line=${loc##*:}
  if is_kernel "$file" "$line"; then continue; fi
  if allowed "$file" "$name"; then seen+=("$file $name"); continue; fi
  echo "long function: $loc $name: $lines lines (the limit is $limit; split it into named steps)"
  bad=1
done <<<"$long"
if [ -f "$allow" ]; then
  while read -r file name _; do
    [ -z "${file:-}" ] && continue
    found=0
    for s in "${seen[@]+"${seen[@]}"}"; do [ "$s" = "$file $name" ] && found=1; done
    if [ "$found" = 0 ]; then
      echo "stale allow-list entry: $file $name is not over $limit lines (remove it from $allow)"
      bad=1
    fi
  done < <(grep -v '^\s*#' "$allow" | sed '/^\s*$/d')
fi
if [ "$bad" = 0 ]; then echo "long-functions: no host function over $limit lines outside the allow-list"; fi
exit "$bad"
