#!/usr/bin/env bash
# On the GPU machine (after scripts/build-device-python.sh, carried in .pydev/): the window-cost
# benchmark against the real NVML, then the Python API vs Zeus on a HF Llama-3.2-1B generate.
# Writes logs and JSON to $OUT (docs/validation/python.md).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jp-python}; mkdir -p "$OUT"
{
  echo "== machine"; nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv
  python3 --version; python3-config --includes 2>&1 | head -1
  ls "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" 2>&1
} 2>&1 | tee "$OUT/machine.txt"
# Zeus: its source folder carried in .zeus-src/ (scripts/stage-zeus.sh), else importable already,
# else a source folder (the one holding zeus/monitor/) somewhere on this machine.
ZEUS_SRC=""
if [ -f .zeus-src/zeus/monitor/__init__.py ]; then
  ZEUS_SRC=$PWD/.zeus-src
elif ! python3 -c "import zeus.monitor" 2>/dev/null; then
  f=$(find / -maxdepth 9 \( -path /proc -o -path /sys -o -path /dev \) -prune -o \
      -type f -path '*/zeus/monitor/__init__.py' -print 2>/dev/null | head -1)
  [ -n "$f" ] && ZEUS_SRC=$(dirname "$(dirname "$(dirname "$f")")")
fi
[ -f "$ZEUS_SRC/COMMIT" ] && echo "zeus commit: $(cat "$ZEUS_SRC/COMMIT")" | tee -a "$OUT/machine.txt"
echo "zeus source: ${ZEUS_SRC:-none found (importable: $(python3 -c "import zeus.monitor" 2>/dev/null && echo yes || echo no))}" | tee -a "$OUT/machine.txt"
# Zeus's declared dependencies, as found here (an import failure below names the missing one).
python3 - <<'PY' 2>&1 | tee -a "$OUT/machine.txt"
import importlib
for m in ("numpy", "pandas", "sklearn", "pynvml", "pydantic", "rich", "tyro", "httpx", "amdsmi", "dateutil", "requests"):
    try:
        print(f"  {m}: {getattr(importlib.import_module(m), '__version__', 'present')}")
    except Exception as e:
        print(f"  {m}: MISSING ({type(e).__name__}: {e})")
PY

if [ "${RUN_BENCH:-1}" = 1 ]; then  # RUN_BENCH=0: the Python comparison only
  echo "== window bench"
  JOULEPROF_NVML_LIB=libnvidia-ml.so.1 .pydev/bin/jouleprof_window_bench --benchmark_out="$OUT/window_bench.json" \
    --benchmark_out_format=json --benchmark_min_time=0.5 2>&1 | tee "$OUT/window_bench.txt"
fi

echo "== python import"
export PYTHONPATH="$PWD/.pydev/py:$ZEUS_SRC"
python3 -c "import jouleprof; print('jouleprof', jouleprof.__version__)" 2>&1 | tee "$OUT/import.txt"
python3 -c "import zeus, zeus.monitor; print('zeus', zeus.__version__, zeus.__file__)" 2>&1 | tail -4 | tee -a "$OUT/import.txt"

echo "== Llama-3.2-1B: jouleprof vs Zeus"
timeout 170 python3 scripts/validation/python_vs_zeus.py --out "$OUT" 2>&1 | tee "$OUT/python_vs_zeus.log" |
  grep -v Warning | tail -40 | tee "$OUT/python_vs_zeus.txt"
