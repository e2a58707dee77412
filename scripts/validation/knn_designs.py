#!/usr/bin/env python3
"""Prototype of knn design variants on the FGCS V100 files (issue 19, docs/validation/models.md).

Pure Python (no numpy on the build machine). Reimplements the dataset's outlier rule and the knn
form's energy decision: every hyper-parameter and design is chosen INSIDE each outer fit by a
leave-one-application-out pass over the training applications only; the held-out application
contributes only its probe(s). Used to screen designs before porting one to src/models/form_knn.cpp;
the product figures come from `jouleprof model validate`.

Usage: knn_designs.py FILE.csv [--probes N] [--designs a,b,...]
"""
import csv, math, sys, itertools, argparse

KNOWN = ["fp_active", "fp64_active", "fp32_active", "fp16_active", "FP16A", "tensor_active", "TENSO",
         "dram_active", "sm_active", "sm_occupancy", "gr_engine_active"]


def median(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def load(path):
    rows = list(csv.DictReader(open(path)))
    act = [a for a in KNOWN if a in rows[0]]
    apps = {}
    for r in rows:
        apps.setdefault(r["application"], []).append(
            dict(f=float(r["sm_app_clock"]), P=float(r["power_usage"]), T=float(r["run_time"]),
                 a=[float(r[c]) for c in act]))
    order = list(dict.fromkeys(r["application"] for r in rows))
    out = {}
    for app in order:
        rs = sorted(apps[app], key=lambda r: r["f"])
        n = len(rs)
        for i, r in enumerate(rs):
            nb = [rs[j] for j in range(max(0, i - 3), min(n, i + 4)) if j != i]
            bad = abs(r["P"] / median([x["P"] for x in nb]) - 1) > 0.15
            for c in range(len(act)):
                m = median([x["a"][c] for x in nb])
                bad = bad or abs(r["a"][c] - m) > 0.05 + 0.15 * m
            r["bad"] = bad if n >= 7 else False
        good = [r for r in rs if not r["bad"]]
        # repeats: one row per clock in these files
        out[app] = good
    # drop activity columns constant over the probes
    keep = [c for c in range(len(act)) if max(out[a][-1]["a"][c] for a in out) - min(out[a][-1]["a"][c] for a in out) > 1e-9]
    for a in out:
        for r in out[a]:
            r["a"] = [r["a"][c] for c in keep]
    return order, out, [act[c] for c in keep]


def interp(cl, g, f):
    if f <= cl[0]: return g[0]
    if f >= cl[-1]: return g[-1]
    lo, hi = 0, len(cl) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cl[mid] <= f: lo = mid
        else: hi = mid
    t = (f - cl[lo]) / (cl[hi] - cl[lo])
    return g[lo] + t * (g[hi] - g[lo])


def smooth(cl, g, how):
    if how == "none": return list(g)
    if how.startswith("ma"):
        w = int(how[2:]); n = len(g)
        return [sum(g[max(0, i - w):min(n, i + w + 1)]) / (min(n, i + w + 1) - max(0, i - w)) for i in range(n)]
    if how.startswith("poly"):
        deg = int(how[4:])
        xs = [(f - 945) / 435 for f in cl]
        # least squares via normal equations (small)
        m = deg + 1
        A = [[sum(x ** (i + j) for x in xs) for j in range(m)] for i in range(m)]
        b = [sum(g[k] * xs[k] ** i for k in range(len(xs))) for i in range(m)]
        for i in range(m):  # Gauss
            p = max(range(i, m), key=lambda r: abs(A[r][i])); A[i], A[p] = A[p], A[i]; b[i], b[p] = b[p], b[i]
            for r in range(i + 1, m):
                fct = A[r][i] / A[i][i]
                for c in range(i, m): A[r][c] -= fct * A[i][c]
                b[r] -= fct * b[i]
        co = [0.0] * m
        for i in reversed(range(m)):
            co[i] = (b[i] - sum(A[i][c] * co[c] for c in range(i + 1, m))) / A[i][i]
        return [sum(co[i] * x ** i for i in range(m)) for x in xs]
    raise ValueError(how)


class App:
    def __init__(self, name, pts, grid, probes):
        self.name = name
        self.cl = [p["f"] for p in pts]
        self.E = [p["P"] * p["T"] for p in pts]
        self.lnE = [math.log(e) for e in self.E]
        self.lnP = [math.log(p["P"]) for p in pts]
        self.lnT = [math.log(p["T"]) for p in pts]
        a = len(pts) - 1
        self.anchor = a
        f0 = self.cl[a]
        idx = [a]
        for frac in (0.75, 0.55)[:probes - 1]:
            best = min((i for i in range(len(pts)) if i not in idx), key=lambda i: abs(self.cl[i] - frac * f0))
            idx.append(best)
        self.probe_idx = idx
        self.probe = pts[a]
        self.grid = grid
        self.sm = {}

    def curve_pt(self):
        if "pt" not in self.sm:
            self.sm["pt"] = ({f: interp(self.cl, self.lnP, f) for f in self.grid}, {f: interp(self.cl, self.lnT, f) for f in self.grid})
        return self.sm["pt"]

    def curve(self, how):  # ln E on the grid (held ends), smoothed on own clocks first
        if how not in self.sm:
            g = smooth(self.cl, self.lnE, how)
            self.sm[how] = {f: interp(self.cl, g, f) for f in self.grid}
        return self.sm[how]

    def raw_features(self, pref, extra):
        a = self.probe["a"]
        x = list(a) + [self.probe["P"] / pref]
        if extra:  # memory-boundness: dram / (dram + fp) at the probe
            dram, fp = a[extra[0]], a[extra[1]]
            x.append(dram / (dram + fp + 1e-3))
        return x


def regret(app, f):
    i = app.cl.index(f)
    return app.E[i] / min(app.E) - 1


def decide(target_cl, neigh, weights, how, rule, f0, target_probe=None):
    """neigh: list of App; returns chosen clock among target_cl."""
    if rule == "lnE":
        best = None
        for f in target_cl:
            s = sum(w * (n.curve(how)[f]) for n, w in zip(neigh, weights))
            if best is None or s < best[0]: best = (s, f)
        return best[1]
    if rule == "regret":
        best = None
        mins = []
        for n in neigh:
            c = n.curve(how); mins.append(min(c[f] for f in target_cl))
        for f in target_cl:
            s = sum(w * (math.exp(n.curve(how)[f] - m) - 1) for n, w, m in zip(neigh, weights, mins))
            if best is None or s < best[0]: best = (s, f)
        return best[1]
    if rule == "optclock":
        fs = []
        for n in neigh:
            c = n.curve(how); fs.append(min(target_cl, key=lambda f: c[f]))
        m = sum(w * f for w, f in zip(weights, fs))
        return min(target_cl, key=lambda f: abs(f - m))
    raise ValueError(rule)


def neighbours(x, pool, k, fw, probe_match=None):
    d = []
    for j, (xj, app) in enumerate(pool):
        s = sum(w * (a - b) ** 2 for w, a, b in zip(fw, x, xj))
        if probe_match is not None:
            s += probe_match(app)
        d.append((math.sqrt(s), j))
    d.sort()
    d = d[:k]
    ws = [1 / (dd + 1e-3) for dd, _ in d]
    t = sum(ws)
    return [pool[j][1] for _, j in d], [w / t for w in ws]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--probes", type=int, default=1)
    ap.add_argument("--design", default="baseline")
    args = ap.parse_args()
    order, data, act = load(args.file)
    grid = sorted({p["f"] for a in order for p in data[a]})
    apps = [App(a, data[a], grid, args.probes) for a in order]
    D = DESIGNS[args.design]
    extra = (act.index("dram_active"), act.index("fp_active")) if D.get("physics") else None
    nf = len(act) + 1 + (1 if extra else 0)
    total, within, lines = 0.0, 0, []
    for h, held in enumerate(apps):
        train = [a for a in apps if a is not held]
        pref = max(max(p for p in [math.exp(v) for v in a.lnP]) for a in train)
        raw = [a.raw_features(pref, extra) for a in train]
        mean = [sum(r[i] for r in raw) / len(raw) for i in range(nf)]
        sc = [math.sqrt(sum((r[i] - mean[i]) ** 2 for r in raw) / len(raw)) or 1.0 for i in range(nf)]
        std = lambda r: [(r[i] - mean[i]) / sc[i] for i in range(nf)]
        pool = [(std(r), a) for r, a in zip(raw, train)]
        na = len(act)
        metrics = {"all": [1.0] * nf, "activity": [1.0] * na + [0.0] * (nf - na), "power": [0.0] * na + [1.0] + [0.0] * (nf - na - 1)}
        if extra:
            metrics["physics"] = [0.0] * na + [1.0, 1.0]
        keys = ["k", "metric", "smooth", "rule", "tilt", "lam", "weighting"]
        defaults = dict(tilt=[False], lam=[0.0], weighting=["idw"])
        cands = [dict(zip(keys, v)) for v in itertools.product(*[D.get(kk, defaults.get(kk)) for kk in keys])]

        def probe_term(target, lam):
            # 2+ probes: a neighbour whose ln P and ln T change between the probes as the
            # target's did is closer (residuals in units of 1%)
            if lam == 0 or len(target.probe_idx) < 2: return None
            i0 = target.probe_idx[0]
            f0 = target.cl[i0]
            obs = [(target.cl[i], target.lnP[i] - target.lnP[i0], target.lnT[i] - target.lnT[i0]) for i in target.probe_idx[1:]]
            def term(app):
                cp, ct = app.curve_pt()
                return lam * sum(((cp[f] - cp[f0]) - op) ** 2 + ((ct[f] - ct[f0]) - ot) ** 2 for f, op, ot in obs) / 0.01 ** 2
            return term

        def predict_lnE(target, x, pool_, c):
            """(chosen clock, predicted ln E/E0 at the target's clocks)."""
            nb, w = neighbours(x, pool_, c["k"], metrics[c["metric"]], probe_term(target, c["lam"]))
            if c["weighting"] == "uniform": w = [1 / len(nb)] * len(nb)
            how = c["smooth"]
            f0 = target.cl[target.anchor]
            pred = {f: sum(ww * (n.curve(how)[f] - n.curve(how)[f0]) for n, ww in zip(nb, w)) for f in target.cl}
            if c["tilt"] and len(target.probe_idx) > 1:
                # the product's correction: c1 phi + c2 phi^2 through the further probes (ln E)
                i0 = target.probe_idx[0]
                pts = [(math.log(target.cl[i] / f0), target.lnE[i] - target.lnE[i0] - pred[target.cl[i]]) for i in target.probe_idx[1:]]
                if len(pts) == 1:
                    c1, c2 = pts[0][1] / pts[0][0], 0.0
                else:
                    (a1, r1), (a2, r2) = pts
                    det = a1 * a2 * a2 - a2 * a1 * a1
                    c1 = (r1 * a2 * a2 - r2 * a1 * a1) / det
                    c2 = (a1 * r2 - a2 * r1) / det
                pred = {f: v + c1 * math.log(f / f0) + c2 * math.log(f / f0) ** 2 for f, v in pred.items()}
            return nb, w, pred

        def run(target, x, pool_, c):
            nb, w, pred = predict_lnE(target, x, pool_, c)
            if c["rule"] == "lnE" or (c["tilt"] and len(target.probe_idx) > 1):
                return min(target.cl, key=lambda f: pred[f])
            return decide(target.cl, nb, w, c["smooth"], c["rule"], None)

        def inner_score(c):
            s = 0.0
            for j, (xj, aj) in enumerate(pool):
                rest = pool[:j] + pool[j + 1:]
                if D["criterion"] == "regret":
                    s += regret(aj, run(aj, xj, rest, c))
                else:  # energy MAPE of the curve (the product's rule)
                    _, _, pred = predict_lnE(aj, xj, rest, c)
                    e = sum(abs(math.exp(pred[f] - (aj.lnE[m] - aj.lnE[aj.anchor])) - 1) for m, f in enumerate(aj.cl))
                    s += e / len(aj.cl)
            return s
        scored = [(inner_score(c), i, c) for i, c in enumerate(cands) if c["k"] < len(train)]
        best = min(scored, key=lambda t: (t[0], t[1]))[2]
        f = run(held, std(held.raw_features(pref, extra)), pool, best)
        r = regret(held, f)
        total += r; within += r <= 0.02
        lines.append(f"{held.name:10s} chose {f:6.0f} opt {held.cl[held.E.index(min(held.E))]:6.0f} excess {100*r:6.2f}%  {tuple(v for kk, v in best.items() if kk in ('k','metric','smooth','rule','tilt','lam','weighting'))}")
    print("\n".join(lines))
    print(f"{args.design} probes={args.probes}: mean excess {100*total/len(apps):.2f}%  within 2%: {within}/{len(apps)}")


K = [1, 2, 3, 4, 6, 8]
M3 = ["all", "activity", "power"]
SM = ["none", "ma3", "ma6", "poly4"]
DESIGNS = {
    # the product's knn today: energy-MAPE inner criterion, k x distance, ln E mean of raw curves
    # (with 2+ probes the product's tilt correction)
    "baseline": dict(k=K, metric=M3, smooth=["none"], rule=["lnE"], tilt=[True], criterion="mape"),
    # inner criterion = the decision's own regret on the training applications
    "regret-crit": dict(k=K, metric=M3, smooth=["none"], rule=["lnE"], tilt=[True], criterion="regret"),
    # + smoothing of the neighbours' curves, chosen inside
    "smooth": dict(k=K, metric=M3, smooth=SM, rule=["lnE"], tilt=[True], criterion="regret"),
    # + choice rule chosen inside
    "rules": dict(k=K, metric=M3, smooth=SM, rule=["lnE", "regret", "optclock"], tilt=[True], criterion="regret"),
    # the same candidates chosen by energy MAPE (MAPE does not depend on the rule: the first, lnE, stays)
    "rules-mape": dict(k=K, metric=M3, smooth=SM, rule=["lnE", "regret", "optclock"], tilt=[True], criterion="mape"),
    # (added after the five above had run) physically-informed distance: memory-boundness and probe power
    "physics": dict(k=K, metric=M3 + ["physics"], smooth=SM, rule=["lnE"], tilt=[True], criterion="mape", physics=True),
    # wider k and uniform weights
    "wide": dict(k=K + [12, 20], metric=M3, smooth=SM, rule=["lnE"], tilt=[True], weighting=["idw", "uniform"], criterion="mape"),
    # 2+ probes: neighbours also by the probes' measured ratios; tilt on or off, chosen inside
    "probe-match": dict(k=K, metric=M3, smooth=SM, rule=["lnE"], tilt=[False, True], lam=[0.0, 0.1, 1.0, 10.0], criterion="mape"),
}

if __name__ == "__main__":
    main()
