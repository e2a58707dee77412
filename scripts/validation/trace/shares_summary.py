#!/usr/bin/env python3
"""Per-layer and per-component shares of traced runs against a reference run (issue 33 item 4c).

    shares_summary.py REFERENCE.json OTHER.json [OTHER.json ...]

Each file is `jouleprof trace --json` output. For every OTHER run and each table (by_layer,
by_component) prints the largest differences in percentage points and the maximum. Give a second
full trace among the OTHER runs to see the run-to-run floor next to the sampled run's difference."""
import json
import sys


def shares(path, table):
    """Each row's share of the table's energy; a row that sums rows below the sensor's resolution
    is taken apart into its members' own point estimates (members_j), as a longer run would list them."""
    g = json.load(open(path))["trace"]["gpus"][0]
    total = sum(r["energy_j"] for r in g[table]) or 1.0
    out = {}
    for r in g[table]:
        for key, e in (r.get("members_j") or {r["key"]: r["energy_j"]}).items():
            out[key] = e / total
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: shares_summary.py REFERENCE.json OTHER.json [OTHER.json ...]")
    ref = sys.argv[1]
    for other in sys.argv[2:]:
        for table in ("by_layer", "by_component"):
            try:
                a, b = shares(ref, table), shares(other, table)
            except (OSError, KeyError, IndexError, ValueError) as e:
                print(f"{other} {table}: not available ({e})")
                continue
            keys = set(a) | set(b)
            diffs = {k: 100 * (b.get(k, 0) - a.get(k, 0)) for k in keys}
            top = sorted(diffs.items(), key=lambda x: -abs(x[1]))[:5]
            print(f"{other} vs {ref} {table}: max {max(abs(d) for d in diffs.values()):.2f} pp over {len(keys)} rows; "
                  + ", ".join(f"{k} {100 * a.get(k, 0):.1f}%->{100 * b.get(k, 0):.1f}% ({d:+.2f})" for k, d in top))


if __name__ == "__main__":
    main()
