#!/usr/bin/env bash
# `pip install` end to end, as README.md and docs/python.md say it: a fresh venv of the `python3`
# first on PATH (on a pyenv machine: pyenv's, which lacks Debian's wheel and pybind11 modules), then
#   V/bin/pip install ./python
# offline (no index, no cache; build isolation on: the package's own backend needs nothing from an
# index), then the installed package (not the source tree) measures a window on the simulated GPU
# and stores it. Then the same with --no-build-isolation and the second interpreter given.
# Usage: pip_install_venv.sh SOURCE_DIR WORK_DIR [PYTHON2]
# (JOULEPROF_BUILD_DIR, set by CTest to its configured build tree, makes the C++ build a no-op.)
set -euo pipefail
src=$1 work=$2 py2=${3:-}
rm -rf "$work" && mkdir -p "$work"
unset PYTHONPATH
export PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

check() {  # $1: the venv
  (cd "$work" && "$1/bin/python" - <<'PY'
import os, sys, time
import jouleprof
where = os.path.realpath(jouleprof.__file__)
assert where.startswith(os.path.realpath(sys.prefix) + os.sep), f"imported from {where}, not the venv {sys.prefix}"
print("installed:", where, "for", sys.version.split()[0])
mon = jouleprof.Monitor(device="sim", idle_s=0.3, period_ms=50)
mon.set_sim_power(400)
with mon.window("w", tokens=100) as w:
    time.sleep(0.4)
db = os.path.join(sys.prefix, "runs.db")
m = mon.finish(store=db, tags={"test": "pip"})
assert m.simulated and m.run_id == 1 and abs(w.energy_j - 400 * w.duration_s) < 0.15 * 400 * w.duration_s, \
    (m.simulated, m.run_id, w.energy_j, w.duration_s)
print(f"window {w.energy_j:.1f} J ({w.method}) {w.per('tokens'):.2f} J/token over {w.duration_s:.2f} s,"
      f" {'simulated' if m.simulated else 'REAL'}; stored as run {m.run_id}")
PY
  )
  "$1/bin/pip" show jouleprof | grep -E '^(Name|Version|Location):'
}

py1=$(command -v python3)
echo "== python3 on PATH: $py1, build isolation on, offline"
"$py1" -m venv "$work/V1"
(cd "$src" && "$work/V1/bin/pip" install ./python)
check "$work/V1"
if [ -n "$py2" ]; then
  echo "== $py2, --no-build-isolation, offline"
  "$py2" -m venv --system-site-packages "$work/V2"
  (cd "$src" && "$work/V2/bin/pip" install --no-build-isolation ./python)
  check "$work/V2"
fi
