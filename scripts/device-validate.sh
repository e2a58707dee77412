#!/usr/bin/env bash
# Validation of the measurement core on a GPU machine (docs/validation/measure.md).
# Run from the repository root on the device, with the binaries built by
# scripts/build-device.sh in .devbuild/bin. Writes logs, results and figures under $OUT and
# prints the summary table last. Reads sensors only: never changes clocks, limits or modes.
set -uo pipefail
OUT=${OUT:-/tmp/jouleprof-validate}
mkdir -p "$OUT/data"
B=$PWD/.devbuild/bin
JP="$B/jouleprof"
BURN="$B/jouleprof-burn"
D=$OUT/data
export JOULEPROF_DB=$OUT/runs.db
ldconfig -p | grep -q libsqlite3.so.0 || export LD_LIBRARY_PATH="$PWD/.devbuild/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
# STEPS selects parts (default: all): abi tests resolution consistency short overhead llama
STEPS=${STEPS:-"abi tests resolution consistency short overhead llama"}
want() { [[ " $STEPS " == *" $1 "* ]]; }
export PYTHONUNBUFFERED=1

log "machine"
{ date -u; uname -a; nvidia-smi --query-gpu=name,uuid,driver_version,pci.bus_id,power.limit,persistence_mode,mig.mode.current,clocks.max.sm,clocks.max.mem,temperature.gpu --format=csv; } > "$D/machine.txt" 2>&1
cat "$D/machine.txt"

if want abi; then
log "NVML ABI check against nvml.h"
CUDA_INC=$(dirname "$(find /usr/local/cuda*/ /usr/include -name nvml.h 2>/dev/null | head -1)")
g++ -std=c++20 -I src/sensors -I "$CUDA_INC" tests/device/nvml_abi_check.cpp -o /tmp/abi && /tmp/abi && echo "ABI: ours matches $CUDA_INC/nvml.h" | tee "$D/abi.txt"
fi

if want tests; then
log "device tests (label device)"
"$B/jouleprof_device_tests" 2>&1 | tee "$D/device-tests.txt" | tail -5
fi

log "warm-up"
"$BURN" --seconds 8 2>&1 | tail -1

if want resolution; then
log "1. resolution: 50 ms on / 50 ms off"
"$JP" measure --idle 3 --json "$D/square50.json" --timeline "$D/square50.csv" -- "$BURN" --square 50,50 --seconds 12 > "$D/square50.txt" 2>&1
tail -12 "$D/square50.txt"
fi

if want consistency; then
log "2. consistency: steady 15 s x3 with nvidia-smi alongside"
nvidia-smi --query-gpu=timestamp,power.draw,power.draw.instant --format=csv,noheader,nounits -lms 100 > "$D/smi.csv" 2>&1 &
SMI=$!
"$JP" measure --idle 3 --runs 3 --json "$D/steady.json" --timeline "$D/steady.csv" -- "$BURN" --seconds 15 > "$D/steady.txt" 2>&1
kill $SMI; wait $SMI 2>/dev/null
tail -14 "$D/steady.txt"

log "2b. consistency: bursty (200 ms on / 300 ms off) 15 s"
"$JP" measure --idle 2 --json "$D/bursty.json" --timeline "$D/bursty.csv" -- "$BURN" --square 200,300 --seconds 15 > "$D/bursty.txt" 2>&1
tail -6 "$D/bursty.txt"
fi

if want short; then
log "3. short windows: 10 bursts of 16 ms"
"$JP" measure --idle 2 --json "$D/bursts16.json" --timeline "$D/bursts16.csv" -- "$BURN" --bursts 16,10 > "$D/bursts16.txt" 2>&1
tail -30 "$D/bursts16.txt"
fi

if want overhead; then
log "4. overhead: bare vs measured, interleaved"
: > "$D/overhead.txt"
for i in 1 2 3 4 5 6 7; do
  echo "bare $("$BURN" --iters 1500)" >> "$D/overhead.txt"
  echo "measured $("$JP" measure --idle 0 -q --json "$D/overhead-$i.json" -- "$BURN" --iters 1500)" >> "$D/overhead.txt"
done
cat "$D/overhead.txt"
fi

if want llama; then
log "5. PyTorch Llama-3.2-1B (random weights), prefill 128 + decode 128, 3 repeats"
"$JP" measure --idle 6 --json "$D/llama1b.json" --timeline "$D/llama1b.csv" --tag model=llama-3.2-1b --tag engine=transformers-eager \
  -- python3 scripts/workloads/llama_markers.py --model llama-3.2-1b --prompt 128 --gen 128 --repeats 3 > "$D/llama1b.txt" 2>&1
tail -30 "$D/llama1b.txt"
fi

log "analysis"
[ "$STEPS" = "abi tests resolution consistency short overhead llama" ] && python3 scripts/validation/analyze_measure.py "$D" "$OUT" 2>&1 | tee "$OUT/summary.md"
rm -f "$D"/overhead-*.json
tar czf "$OUT/data.tar.gz" -C "$OUT" data && rm -rf "$D"
log "done"
