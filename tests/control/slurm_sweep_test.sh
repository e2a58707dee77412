#!/usr/bin/env bash
# A simulated sweep as a SLURM job array on the local cluster (scripts/slurm-local.sh), then the
# tasks' stores merged and reported. Exit 77 (skipped) unless JOULEPROF_SLURM_TEST=1 (set by
# scripts/test.sh after it started the cluster): there it must pass.
set -euo pipefail
jp=$1
if [ "${JOULEPROF_SLURM_TEST:-0}" != 1 ]; then
  echo "SLURM test skipped: set JOULEPROF_SLURM_TEST=1 with a running cluster (scripts/slurm-local.sh start)"
  exit 77
fi
work=$(mktemp -d /tmp/jouleprof-slurm-XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
printf 'workload_time_scale 0.1\n' > "$work/fast.txt"
export JOULEPROF_CONTROL_DIR="$work/journal"

# 2 clocks x 2 power limits = 4 points, in 2 tasks; no GPU GRES on this cluster. The tasks read
# the plan file, not this command line: what every point records (activity metrics, tags, CPU
# energy or not) must come to them through it.
job=$("$jp" sweep --device sim --sim-scenario "$work/fast.txt" --clocks 1980,990 --power-limits 700,300 \
      --runs 2 --warmup 0 --idle 0 --no-cpu --metrics --metrics-source utilization --tag team=infer \
      --slurm --tasks 2 --gpus-per-task 0 --time 00:05:00 --slurm-dir "$work/array" -q)
echo "submitted job array $job"
# Wait for the array by a handshake, not a timer: a job that depends on the whole array and
# `sbatch --wait` returns when it has run (120 s bound only against a hang).
timeout 120 sbatch --wait --quiet --dependency="afterany:$job" --time 00:01:00 \
  --output /dev/null --wrap true || true
if [ -n "$(squeue -h -j "$job" 2>/dev/null)" ]; then
  echo "job array $job still queued or running after 120 s" >&2; squeue; exit 1
fi
ls "$work/array"
for t in 0 1; do
  [ -s "$work/array/task-$t.db" ] || { echo "task $t wrote no store" >&2; cat "$work/array/task-$t.log" >&2 || true; exit 1; }
done
"$jp" runs --db "$work/merged.db" merge "$work/array"/task-*.db
n=$("$jp" runs --db "$work/merged.db" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$n" = 4 ] || { echo "expected 4 merged points, got $n" >&2; exit 1; }
"$jp" runs --db "$work/merged.db" show 1 2 3 4 --json "$work/merged.json"
python3 - "$work/merged.json" <<'PY' || exit 1
import json, sys
for r in json.load(open(sys.argv[1])):
    where = "merged run started " + r["started_at_utc"]
    act = r.get("activity", {}).get("gpus", [{}])[0]
    assert act.get("source") == "sim-utilization" and act.get("note") == "", where + ": no activity from the utilization source: " + json.dumps(r.get("activity"))
    assert r["tags"].get("team") == "infer", where + ": tag team=infer missing: " + json.dumps(r["tags"])
    assert r["cpu"]["unavailable_reason"] == "CPU energy not requested", where + ": --no-cpu not applied"
    assert "--slurm" in r["provenance"]["command_line"], where + ": records the task's command line, not the user's"
print("every merged point has the sweep's activity metrics, tag, CPU setting and command line")
PY
id=$(python3 -c 'import json; print(json.load(open("'"$work"'/array/plan.json"))["sweep_id"])')
"$jp" sweep --report "$id" --db "$work/merged.db" --csv "$work/sweep.csv"
[ "$(wc -l < "$work/sweep.csv")" = 5 ] || { echo "report CSV should have 4 rows" >&2; exit 1; }
# An sbatch error comes back as sbatch's own message.
if "$jp" sweep --device sim --clocks 1980 --slurm --partition no-such-partition --gpus-per-task 0 \
     --slurm-dir "$work/bad" -q 2> "$work/err.txt"; then
  echo "a bad partition was accepted" >&2; exit 1
fi
grep -q "sbatch refused the job" "$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
echo "SLURM job array $job: 4 points in 2 tasks, merged and reported"
