"""Summary of `scripts/device-trace.sh issue33`: per configuration the median and spread (min-max
of per-round medians) of the timed calls, the slowdowns against the untraced configuration of the
same program (pooled medians), and the sampled run's per-layer and per-component shares against
the full trace's (percentage points).

    python3 issue33_summary.py OUT
Lines of OUT/issue33.txt: CONFIG hf_generate {json}, CONFIG graph_decode {json} or CONFIG engine {json of jouleprof-llm speed}.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

from shares_summary import shares  # rows summed below resolution taken apart into their members


def find(d, key):
    """Every value of `key` anywhere in a JSON document (jouleprof-llm nests its rows)."""
    if isinstance(d, dict):
        return ([d[key]] if key in d else []) + [x for v in d.values() for x in find(v, key)]
    if isinstance(d, list):
        return [x for v in d for x in find(v, key)]
    return []


def times(kind, d):
    if kind == "hf_generate":
        return d["generate_s"]
    if kind == "graph_decode":
        return d["calls_s"]
    return [ms / 1e3 for ms in find(d, "ms_per_step")]  # jouleprof-llm speed: decode step time


def load(path):
    """Per configuration: every timed call, each round's median, and the error lines of failed runs."""
    calls, rounds, errors = defaultdict(list), defaultdict(list), defaultdict(list)
    for line in open(path):
        parts = line.split(" ", 2)
        if len(parts) < 3 or not parts[2].startswith("{"):
            continue
        d = json.loads(parts[2])
        if parts[1].endswith("_error"):
            errors[parts[0]].append(d)
            continue
        t = times(parts[1], d)
        if t:
            calls[parts[0]] += t
            rounds[parts[0]].append(statistics.median(t))
    return calls, rounds, errors


def overheads(path):
    calls, rounds, _ = load(path)
    rows = []
    for cfg in sorted(calls):
        r = rounds[cfg]
        print(f"{cfg:3} n {len(calls[cfg]):3}  median {statistics.median(calls[cfg]):.5g}  round medians {min(r):.5g}-{max(r):.5g}")
    for base, others, what in (("U", ("T", "K", "S"), "eager HF generate"), ("CU", ("CT", "CS"), "HF torch.compile CUDA graphs"),
                               ("EU", ("ET", "ES"), "bench llm engine")):
        for o in others:
            if o in calls and base in calls:
                slow = statistics.median(calls[o]) / statistics.median(calls[base]) - 1
                per = [a / b - 1 for a, b in zip(rounds[o], rounds[base])]
                rows.append((what, f"{o} vs {base}", 100 * slow, 100 * min(per), 100 * max(per)))
    return rows


def main():
    out = sys.argv[1]
    rows = overheads(os.path.join(out, "issue33.txt"))
    print("\nshares, sampled against full (percentage points):")
    worst = {}
    for table in ("by_layer", "by_component"):
        try:
            full = shares(os.path.join(out, "shares_full.json"), table)
            samp = shares(os.path.join(out, "shares_sampled.json"), table)
        except (OSError, KeyError, IndexError, ValueError) as e:
            print(f"  {table}: not available ({e})")
            continue
        diffs = {k: 100 * (samp.get(k, 0) - v) for k, v in full.items()}
        for k, d in sorted(diffs.items(), key=lambda x: -abs(x[1]))[:8]:
            print(f"  {table:12} {k:24} full {100 * full[k]:5.1f}%  sampled {100 * samp.get(k, 0):5.1f}%  {d:+.1f} pp")
        worst[table] = max((abs(d) for d in diffs.values()), default=float("nan"))
    print("\n| program | configs | slowdown (pooled medians) | per-round range |")
    print("| --- | --- | --- | --- |")
    for what, cfg, slow, lo, hi in rows:
        print(f"| {what} | {cfg} | {slow:+.2f}% | {lo:+.2f}% .. {hi:+.2f}% |")
    for table, w in worst.items():
        print(f"| sampled shares | {table} | max {w:.1f} pp from full tracing | |")


if __name__ == "__main__":
    main()
