#!/usr/bin/env bash
# A/B: new (carveout fitted to the cluster kernel's shared memory) vs max (all shared) vs base; then
# ncu's chosen shared-memory configuration of new's kernels (8B).
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
rm -rf .devbuild/new .devbuild/max
EXTRA=max OUT=$OUT scripts/device-engine-ab.sh > $OUT/ab.txt 2>&1
grep -E "A/B|FAIL|ALL|built|error" $OUT/ab.txt | head -40
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
timeout 120 $NCU --graph-profiling node --cache-control none --clock-control none --launch-skip 3000 --launch-count 150 \
  --metrics launch__shared_mem_config_size,gpu__time_duration.sum,lts__t_sectors_op_read.sum --csv \
  .devbuild/new/jouleprof-llm speed --model llama-3.1-8b --batch 1 --prompt 128 --gen 128 --prefill 0 --seconds 0.3 --variants auto 2>&1 | grep '^"' > $OUT/ncu_new_fit.csv
python3 - $OUT/ncu_new_fit.csv <<'PY'
import csv,sys,collections
a=collections.defaultdict(lambda:[0,0.0,0.0]); cfg={}
rows=collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])): rows[(r['ID'],r['Kernel Name'].split('(')[0])][r['Metric Name']]=r['Metric Value'].replace(',','')
for (i,n),m in rows.items():
    k=(n,m['launch__shared_mem_config_size']); a[k][0]+=1; a[k][1]+=float(m['gpu__time_duration.sum']); a[k][2]+=float(m['lts__t_sectors_op_read.sum'])
for k,v in a.items(): print(f"NCU {k[0][:45]:45s} cfg={k[1]:>7s} n={v[0]} t_mean={v[1]/v[0]:.0f} ns l2rd={v[2]/v[0]:.0f}")
PY
