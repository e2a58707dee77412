"""Summary of `scripts/device-trace.sh overhead`: per configuration the median generate() time
over every call of every round, the traced/untraced ratios of those pooled medians, and the
median of the per-round ratios.

    python3 overhead_summary.py overhead.txt
Lines: CONFIG hf_generate {json with "generate_s": [...]}, rounds in file order.
"""
import json
import statistics
import sys
from collections import defaultdict


def main():
    calls = defaultdict(list)
    rounds = defaultdict(list)
    for line in open(sys.argv[1]):
        parts = line.split(" ", 2)
        if len(parts) < 3 or not parts[2].startswith("{"):
            continue
        d = json.loads(parts[2])
        calls[parts[0]] += d["generate_s"]
        rounds[parts[0]].append(statistics.median(d["generate_s"]))
    for cfg in sorted(calls):
        print(f"{cfg:3} calls {len(calls[cfg]):3}  median {statistics.median(calls[cfg]):.4f} s  min {min(calls[cfg]):.4f} s  "
              f"per-round medians {' '.join(f'{x:.4f}' for x in rounds[cfg])}")
    for traced, base in (("T", "U"), ("TA", "UA"), ("PA", "UA"), ("KA", "UA")):
        if traced in calls and base in calls:
            pooled = statistics.median(calls[traced]) / statistics.median(calls[base]) - 1
            per_round = [t / b - 1 for t, b in zip(rounds[traced], rounds[base])]
            fastest = min(calls[traced]) / min(calls[base]) - 1
            print(f"{traced} vs {base}: pooled-median slowdown {100 * pooled:+.1f}%, fastest-call {100 * fastest:+.1f}%, "
                  f"median of per-round slowdowns {100 * statistics.median(per_round):+.1f}% "
                  f"(rounds: {' '.join(f'{100 * x:+.1f}%' for x in per_round)})")


if __name__ == "__main__":
    main()
