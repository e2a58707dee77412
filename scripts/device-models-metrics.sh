#!/usr/bin/env bash
# Issue 19 on the GPU machine, one call: `jouleprof measure --metrics` (activity timelines with
# their source) for a GEMM, a memory-bound copy and LLM decode — each workload its own process —
# once per activity source in $SOURCES (default: cupti-pm and gpm, side by side), whether two
# clients can hold the PM-sampling counters at once, whether GPM still answers while PM sampling
# runs, and whether DCGM is there. Clocks and limits are NOT changed. Binaries carried in $BIN
# (jouleprof, jouleprof-burn, jouleprof-llm, and pmprobe from the `lab` branch's workloads/pmprobe when there).
# Logs and JSON under $OUT.
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbuild/models}
OUT=${OUT:-/tmp/models-metrics-out}
SOURCES=${SOURCES:-cupti-pm gpm}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
LOG=$OUT/log.txt
say() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
run() { local t=$1; shift; say "$*"; timeout "$t" "$@" 2>&1 | tail -25 | tee -a "$LOG"; echo "rc=${PIPESTATUS[0]}" | tee -a "$LOG"; }
say "host $(hostname) $(uname -r)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,power.limit --format=csv,noheader | tee -a "$LOG"
COPY='
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
# First a short cupti-pm run naming each CUPTI call on stderr (if one crashes, the last line names it).
say "cupti-pm trace: JOULEPROF_CUPTI_PM_TRACE=1 measure -- sleep 1"
JOULEPROF_CUPTI_PM_TRACE=1 timeout 30 $BIN/jouleprof measure --metrics --metrics-source cupti-pm --metrics-period-ms 200 --idle 0 \
  --no-store -q --json "$OUT/trace_cupti-pm.json" -- sleep 1 >"$OUT/trace.txt" 2>&1
echo "rc=$? calls $(grep -c '^cupti-pm:' "$OUT/trace.txt")" | tee -a "$LOG"
grep -v '^cupti-pm: cupti\(ProfilerHostEvaluateToGpuValues\|PmSamplingCounterDataGetSampleInfo\)$' "$OUT/trace.txt" | uniq -c | tail -30 | tee -a "$LOG"
for S in $SOURCES; do
  M="$BIN/jouleprof measure --metrics --metrics-source $S --metrics-period-ms 200 --idle 1 --no-store -q"
  run 40 $M --json "$OUT/gemm_$S.json" -- "$BIN/jouleprof-burn" --seconds 4 --phases
  run 40 $M --json "$OUT/copy_$S.json" -- python3 -c "$COPY"
  run 90 $M --json "$OUT/decode_$S.json" -- "$BIN/jouleprof-llm" speed --model llama-3.2-1b --batch 1 --prompt 128 --gen 256 \
    --prefill 0 --seconds 5
done
# Exclusivity: a second PM-sampling client, and GPM, while one jouleprof holds the PM counters.
say "hold: cupti-pm over a 6 s burn; at +2 s a second cupti-pm, at +3 s a gpm measure"
$BIN/jouleprof measure --metrics --metrics-source cupti-pm --metrics-period-ms 200 --idle 0 --no-store -q \
  --json "$OUT/hold_cupti-pm.json" -- "$BIN/jouleprof-burn" --seconds 6 >"$OUT/hold.txt" 2>&1 &
HOLD=$!
sleep 2
run 20 $BIN/jouleprof measure --metrics --metrics-source cupti-pm --idle 0 --no-store -q --json "$OUT/second_cupti-pm.json" -- sleep 1
run 20 $BIN/jouleprof measure --metrics --metrics-source gpm --metrics-period-ms 200 --idle 0 --no-store -q \
  --json "$OUT/beside_gpm.json" -- sleep 1.5
wait $HOLD; echo "hold rc=$? $(cat "$OUT/hold.txt")" | tee -a "$LOG"
# DCGM: is a library or a host engine there? (auto would prefer it.)
say "dcgm: $(ls /usr/lib/x86_64-linux-gnu/libdcgm.so* 2>/dev/null | head -3 | tr '\n' ' ') nv-hostengine: $(command -v nv-hostengine || echo none)"
run 20 $BIN/jouleprof measure --metrics --metrics-source dcgm --idle 0 --no-store -q -- true
run 20 $BIN/jouleprof measure --metrics --idle 0 --no-store -q --json "$OUT/auto.json" -- sleep 0.5
# The probe (workloads/pmprobe, if carried in $BIN) sampling while a burn runs in another process.
if [ -x "$BIN/pmprobe" ]; then
  say "pmprobe --external 2.5 beside jouleprof-burn --seconds 5 (another process)"
  "$BIN/jouleprof-burn" --seconds 5 >"$OUT/burn_bg.txt" 2>&1 &
  BURN=$!
  sleep 1.5
  run 30 "$BIN/pmprobe" --external 2.5
  wait $BURN; echo "burn rc=$? $(tail -1 "$OUT/burn_bg.txt")" | tee -a "$LOG"
fi
say summary
python3 - "$OUT" "$SOURCES" <<'PY' | tee -a "$LOG"
import json, sys, os
out, sources = sys.argv[1], sys.argv[2].split()
names = ["trace_cupti-pm"] + [f"{w}_{s}" for w in ["gemm", "copy", "decode"] for s in sources] + ["hold_cupti-pm", "second_cupti-pm", "beside_gpm", "auto"]
for name in names:
    p = os.path.join(out, name + ".json")
    if not os.path.exists(p): print(name, "no result"); continue
    j = json.load(open(p)); g = j["activity"]["gpus"][0]
    print(f"{name}: source {g['source']} note '{g['note']}' windows {g['windows']} errors {g['errors'][:2]}")
    if g.get("definitions"): print("   definitions", dict(zip(g["metrics"], g["definitions"])))
    for w in g["window_means"]:
        print("  ", w["kind"], w["name"], {k: (round(v, 3) if v is not None else None) for k, v in w["mean"].items()})
    if name.startswith("decode") or name.startswith("hold"):  # the timeline: decode's plateau is the run's last --seconds
        for t0, t1, v in zip(g["t0_s"], g["t1_s"], g["values"]):
            print("   t %.2f-%.2f" % (t0, t1), [round(x, 3) if x is not None else None for x in v])
    st = j["gpus"][0] if j.get("gpus") else {}
    print("   sm clock max", st.get("sm_clock_max_mhz"), "mean power W", [(w["name"], w["gpus"][0].get("mean_power_w")) for w in j["windows"] if w.get("kind") in ("phase", "run")][:3])
PY
