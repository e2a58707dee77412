#!/usr/bin/env bash
# The report's charting library (Apache ECharts) from the npm registry, pinned by
# report/web/package-lock.json. Run by scripts/install-deps.sh; safe to run again.
set -euo pipefail
web="$(cd "$(dirname "$0")/../../report/web" && pwd)"
if ! command -v npm >/dev/null 2>&1; then
  # Debian's npm (the nodejs package from other sources already bundles npm).
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
if [ -f "$web/node_modules/echarts/dist/echarts.min.js" ] && \
   cmp -s "$web/package-lock.json" "$web/node_modules/.package-lock.json.installed" 2>/dev/null; then
  exit 0
fi
(cd "$web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
cp "$web/package-lock.json" "$web/node_modules/.package-lock.json.installed"
