#!/usr/bin/env bash
# Issue 31: functions longer than N lines (default 150) in src/, include/, python/src and workloads/,
# longest first: "LINES FILE:LINE NAME" (universal-ctags, Debian's universal-ctags package).
# CUDA kernels and device functions (.cu/.cuh) are listed too; the issue's bound is for host code.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-150}
ctags -R --languages=C++ --langmap=C++:+.cu.cuh --kinds-C++=f --fields=+ne -x \
  --_xformat='%{end} %{line} %{input} %{name}' src include python/src workloads 2>/dev/null |
  awk -v n="$limit" '$1 - $2 + 1 > n {print $1 - $2 + 1, $3 ":" $2, $4}' | sort -rn
