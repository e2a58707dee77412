#!/usr/bin/env bash
# Puts Zeus's Python package (ml-energy/zeus, the `zeus/` folder only) into .zeus-src/ (ignored),
# which scripts/device-python.sh puts on PYTHONPATH on the GPU machine (its dependencies are
# installed there; Zeus itself is not). Usage: scripts/stage-zeus.sh GIT_DIR_OF_A_ZEUS_CLONE
set -euo pipefail
cd "$(dirname "$0")/.."
git_dir=${1:?usage: scripts/stage-zeus.sh GIT_DIR_OF_A_ZEUS_CLONE}
rm -rf .zeus-src && mkdir -p .zeus-src
git --git-dir="$git_dir" archive HEAD zeus | tar -x -C .zeus-src
git --git-dir="$git_dir" log -1 --format='%H %cs' > .zeus-src/COMMIT
echo "zeus $(cat .zeus-src/COMMIT) in .zeus-src ($(du -sh .zeus-src | cut -f1))"
