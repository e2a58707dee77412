#!/usr/bin/env bash
# Installs the Debian packages listed in scripts/debian-packages.txt (and npm packages where a
# module needs them). Safe to run again: only what is missing is installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mapfile -t pkgs < <(grep -v '^\s*#' "$here/debian-packages.txt" | sed '/^\s*$/d')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Module hooks: each scripts/install-deps.d/*.sh installs what its module needs (e.g. npm).
if [ -d "$here/install-deps.d" ]; then
  for f in "$here"/install-deps.d/*.sh; do [ -e "$f" ] && bash "$f"; done
fi
