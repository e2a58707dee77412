#!/usr/bin/env python3
"""Can one probe tell the V100 applications' energy curves apart? (issue 19, docs/validation/models.md)

Per application (outlier rule as the product's, probe = highest non-outlier clock): the probe's
features (activity, power), how much its run time grows from the probe to 510 MHz, its measured
energy-optimal clock; then, for each application, the application nearest in probe space and the
excess energy if its measured optimum clock were used (the decision a 1-nearest-neighbour transfer
makes), and the best any single other application's optimum would give (an oracle: the floor for
transferring one neighbour's choice). Usage: probe_identifiability.py FILE.csv
"""
import math, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from knn_designs import load

order, data, act = load(sys.argv[1])
rows = []
for a in order:
    pts = data[a]
    E = [p["P"] * p["T"] for p in pts]
    rows.append(dict(app=a, cl=[p["f"] for p in pts], E=E, probe=pts[-1], t_ratio=pts[0]["T"] / pts[-1]["T"],
                     opt=pts[E.index(min(E))]["f"]))
pref = max(p["P"] for a in order for p in data[a])
feats = [r["probe"]["a"] + [r["probe"]["P"] / pref] for r in rows]
n, nf = len(rows), len(feats[0])
mean = [sum(f[i] for f in feats) / n for i in range(nf)]
sd = [math.sqrt(sum((f[i] - mean[i]) ** 2 for f in feats) / n) or 1 for i in range(nf)]
z = [[(f[i] - mean[i]) / sd[i] for i in range(nf)] for f in feats]


def excess(r, clock):  # r's measured excess at its clock nearest `clock`
    i = min(range(len(r["cl"])), key=lambda k: abs(r["cl"][k] - clock))
    return r["E"][i] / min(r["E"]) - 1


print("features:", ", ".join(act + ["probe power / P_ref"]))
print(f"{'application':12s} {'probe act.':>28s} {'P W':>6s} {'T(510)/T(probe)':>15s} {'opt MHz':>7s} | {'nearest':10s} {'dist':>5s} {'its opt':>7s} {'excess':>7s} | {'oracle':>6s}")
tot_nn = tot_or = 0
bad = 0
for i, r in enumerate(rows):
    d = sorted((math.dist(z[i], z[j]), j) for j in range(n) if j != i)
    dj, j = d[0]
    e_nn = excess(r, rows[j]["opt"])
    e_or = min(excess(r, rows[k]["opt"]) for k in range(n) if k != i)
    tot_nn += e_nn; tot_or += e_or; bad += e_nn > 0.02
    acts = " ".join(f"{v:.3f}" for v in r["probe"]["a"])
    print(f"{r['app']:12s} {acts:>28s} {r['probe']['P']:6.1f} {r['t_ratio']:15.2f} {r['opt']:7.0f} | {rows[j]['app']:10s} {dj:5.2f} {rows[j]['opt']:7.0f} {100*e_nn:6.2f}% | {100*e_or:5.2f}%")
print(f"nearest neighbour's optimum: mean excess {100*tot_nn/n:.2f}%, {n-bad} of {n} within 2%; "
      f"best other application's optimum (oracle): mean {100*tot_or/n:.2f}%")

# Pairs close in probe space (standardised distance < 0.5): the least, over common clocks, of the
# larger of the two excesses. A choice that is (nearly) the same for both misses by at least this
# on one of them.
print("close pairs (distance < 0.5): best common clock's worse excess")
seen = set()
for i in range(n):
    for j in range(i + 1, n):
        dij = math.dist(z[i], z[j])
        if dij >= 0.5: continue
        common = sorted(set(rows[i]["cl"]) & set(rows[j]["cl"]))
        floor = min(max(excess(rows[i], f), excess(rows[j], f)) for f in common)
        print(f"  {rows[i]['app']:10s} {rows[j]['app']:10s} dist {dij:4.2f}  T(510)/T(probe) {rows[i]['t_ratio']:.2f} vs {rows[j]['t_ratio']:.2f}"
              f"  optima {rows[i]['opt']:.0f} vs {rows[j]['opt']:.0f} MHz  floor {100*floor:5.2f}%")
