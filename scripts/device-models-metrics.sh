#!/usr/bin/env bash
# Issue 19 on the GPU machine, one call: `jouleprof measure --metrics` (activity timelines with
# their source) for a GEMM, a memory-bound copy and LLM decode, and whether a CUPTI PM-sampling
# session works in this VM. Clocks and limits are NOT changed. Binaries carried in .devbuild/models
# (jouleprof, jouleprof-burn, jouleprof-llm, pmprobe: workloads/pmprobe). Logs and JSON under $OUT.
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbuild/models}
OUT=${OUT:-/tmp/models-metrics-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
LOG=$OUT/log.txt
say() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
run() { local t=$1; shift; say "$*"; timeout "$t" "$@" 2>&1 | tail -25 | tee -a "$LOG"; echo "rc=${PIPESTATUS[0]}" | tee -a "$LOG"; }
say "host $(hostname) $(uname -r)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,power.limit --format=csv,noheader | tee -a "$LOG"
run 60 g++ -std=c++20 -fsyntax-only -Isrc/sensors -I/usr/local/cuda/include tests/device/nvml_abi_check.cpp
M="$BIN/jouleprof measure --metrics --metrics-period-ms 200 --idle 1 --no-store -q"
run 40 $M --json "$OUT/gemm.json" -- "$BIN/jouleprof-burn" --seconds 4 --phases
run 40 $M --json "$OUT/copy.json" -- python3 -c '
import os, time, torch
x = torch.empty(2**28, device="cuda"); y = torch.empty_like(x)
for _ in range(20): y.copy_(x)
torch.cuda.synchronize()
m = os.environ.get("JOULEPROF_MARKERS")
if m: open(m, "w").write("begin copy\n")
t = time.time()
while time.time() - t < 4:
    for _ in range(50): y.copy_(x)
    torch.cuda.synchronize()
if m: open(m, "w").write("end copy\n")'
run 90 $M --json "$OUT/decode.json" -- "$BIN/jouleprof-llm" speed --model llama-3.2-1b --batch 1 --prompt 128 --gen 256 \
  --prefill 0 --seconds 5
run 40 $M --metrics-source utilization --json "$OUT/gemm_util.json" -- "$BIN/jouleprof-burn" --seconds 2 --phases
run 60 "$BIN/pmprobe"
say summary
python3 - "$OUT" <<'PY' | tee -a "$LOG"
import json, sys, os
out = sys.argv[1]
for name in ["gemm", "copy", "decode", "gemm_util"]:
    p = os.path.join(out, name + ".json")
    if not os.path.exists(p): print(name, "no result"); continue
    j = json.load(open(p)); g = j["activity"]["gpus"][0]
    print(f"{name}: source {g['source']} note '{g['note']}' windows {g['windows']} errors {g['errors'][:2]}")
    for w in g["window_means"]:
        print("  ", w["kind"], w["name"], {k: (round(v, 3) if v is not None else None) for k, v in w["mean"].items()})
    if name == "decode":  # the timeline: the decode plateau is the run's last --seconds
        for t0, v in zip(g["t0_s"], g["values"]):
            print("   t %.1f" % t0, [round(x, 3) if x is not None else None for x in v])
    st = j["gpus"][0] if j.get("gpus") else {}
    print("   sm clock max", st.get("sm_clock_max_mhz"), "mean power W", [(w["name"], w["gpus"][0].get("mean_power_w")) for w in j["windows"] if w.get("kind") in ("phase", "run")][:3])
PY
