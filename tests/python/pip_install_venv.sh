#!/usr/bin/env bash
# `pip install` end to end, as docs/python.md says it: a venv, then
#   V/bin/pip install --no-build-isolation ./python
# offline (no index, no cache), then the installed package (not the source tree) measures a
# window on the simulated GPU and stores it. Usage: pip_install_venv.sh SOURCE_DIR WORK_DIR PYTHON
# (JOULEPROF_BUILD_DIR, set by CTest to its configured build tree, makes the C++ build a no-op.)
set -euo pipefail
src=$1 work=$2 py=$3
rm -rf "$work" && mkdir -p "$work"
unset PYTHONPATH
export PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
"$py" -m venv --system-site-packages "$work/V"
cd "$src"
"$work/V/bin/pip" install --no-build-isolation ./python
cd "$work"  # away from the source tree: the import must find the installed package
V/bin/python - <<'PY'
import os, sys, time
import jouleprof
where = os.path.realpath(jouleprof.__file__)
assert where.startswith(os.path.realpath(sys.prefix) + os.sep), f"imported from {where}, not the venv {sys.prefix}"
print("installed:", where)
mon = jouleprof.Monitor(device="sim", idle_s=0.3, period_ms=50)
mon.set_sim_power(400)
with mon.window("w", tokens=100) as w:
    time.sleep(0.4)
m = mon.finish(store="runs.db", tags={"test": "pip"})
assert m.simulated and m.run_id == 1 and abs(w.energy_j - 400 * w.duration_s) < 0.15 * 400 * w.duration_s, \
    (m.simulated, m.run_id, w.energy_j, w.duration_s)
print(f"window {w.energy_j:.1f} J ({w.method}) {w.per('tokens'):.2f} J/token over {w.duration_s:.2f} s,"
      f" {'simulated' if m.simulated else 'REAL'}; stored as run {m.run_id}")
PY
"$work/V/bin/pip" show jouleprof | grep -E '^(Name|Version|Location):'
