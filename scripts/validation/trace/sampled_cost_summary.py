"""Summary of `scripts/device-trace.sh sampledcost`: the sampled mode's cost taken apart.

    python3 sampled_cost_summary.py OUT

Per configuration (OUT/sampledcost.txt, `CONFIG hf_generate {json}` lines, rounds in file order):
the median generate() time over all rounds, the spread of the per-round medians, the slowdown
against its untraced base (pooled medians) and the range of per-round slowdowns. Then the parts:
NVTX only (N) is the floor of the off phase; if the sampled mode cost only its windows, S would be
N + 10% of (T - N). Last, how long the sampled runs' switches took (their kept switch logs,
OUT/sc_keep_S*_R/sample-PID.txt: `on|off T took_ns=D`, `# flush took_ns=D`), and the sampled runs'
calls split by phase within each process (phase_split). Where the runs timed a CPU-only load before
each call (hf_generate.py --host-reference), the same comparison over the calls made in the host's
fast state, and their thread CPU time (fast_state): this host has slow spells of seconds that slow
every process, traced or not, and the reference shows them; with bootstrap intervals over the
processes. Configurations timed within one process, calls alternately paused and recording
(--ab): the ratio of the two states (within_process).
"""
import glob
import json
import os
import random
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(__file__))
from issue33_summary import load  # noqa: E402

BASES = {"M": "U", "N": "U", "S": "U", "SS": "U", "S1": "U", "SL": "U", "SA": "U", "T": "U", "K": "U", "CT": "CU", "CN": "CU", "GT": "GU", "GN": "GU"}
SAMPLED = ("S", "SS", "S1", "SL", "SA")  # the sampled configurations: their switch logs are kept
NAMES = {"U": "untraced", "M": "under jouleprof measure (power sampling, no tracer)", "N": "traced, kernels off (NVTX only)", "S": "--sample 10% (1 s period)",
         "SS": "--sample 10% (0.25 s period)", "S1": "--sample 1% (2 s period)", "SL": "--sample 10% (5 s period)",
         "SA": "--sample 10% (5 s period), records switched globally (JOULEPROF_TRACE_SAMPLE_SWITCH=global)",
         "T": "full trace", "K": "torch.profiler (CUDA activity)",
         "CU": "compiled decoder, untraced", "CT": "compiled decoder, traced (graph-level records)",
         "CN": "compiled decoder, traced node by node (--cuda-graph-trace node)",
         "GU": "decode step compiled, one CUDA graph replayed, untraced", "GT": "the same, traced (graph-level records)",
         "GN": "the same, traced node by node"}


def switch_costs(out):
    """Per sampled configuration: the durations (ms) of the switches on, off, and of the flushes."""
    res = {}
    for cfg in SAMPLED:
        d = {"on": [], "off": [], "flush": []}
        for path in glob.glob(os.path.join(out, f"sc_keep_{cfg}_*", "sample-*.txt")):
            for line in open(path):
                w = line.split()
                took = [x for x in w if x.startswith("took_ns=")]
                if not took:
                    continue
                kind = w[1] if w[0] == "#" else w[0]
                if kind in d:
                    d[kind].append(int(took[0].split("=")[1]) / 1e6)
        if any(d.values()):
            res[cfg] = d
    return res


def windows(path):
    """A switch log's recording windows, [on, off) in CLOCK_REALTIME ns (an open one ends never)."""
    out, on = [], None
    for line in open(path):
        w = line.split()
        if len(w) >= 2 and w[0] in ("on", "off") and w[1].isdigit():
            if w[0] == "on":
                on = int(w[1])
            elif on is not None:
                out.append((on, int(w[1])))
                on = None
    if on is not None:
        out.append((on, float("inf")))
    return out


def results(path):
    """The `CONFIG hf_generate {json}` lines, in file order (= round order): (config, result)."""
    out = []
    for line in open(path):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] == "hf_generate" and parts[2].startswith("{"):
            out.append((parts[0], json.loads(parts[2])))
    return out


def phase_split(out, res):
    """The sampled runs' generate() calls split by phase, within each process: calls that overlap
    no recording window (the off phase's cost alone) and calls that overlap one. Needs the calls'
    realtime spans (hf_generate.py's call_spans_ns) and the kept switch logs (sc_keep_S_R/), the
    R-th S line taken with the R-th log. Against U and N pooled over the same rounds, this takes
    the off phase apart from the windows without the process-to-process spread of the medians."""
    spans = defaultdict(list)
    for cfg, d in res:
        if d.get("call_spans_ns"):
            spans[cfg].append(d["call_spans_ns"])
    split_of = {}
    for cfg in SAMPLED:
        split = {"off": [], "window": []}
        for r, calls in enumerate(spans.get(cfg, []), start=1):
            logs = glob.glob(os.path.join(out, f"sc_keep_{cfg}_{r}", "sample-*.txt"))
            if len(logs) != 1:
                continue
            wins = windows(logs[0])
            for a, b in calls:
                hit = any(a < off and b > on for on, off in wins)
                split["window" if hit else "off"].append((b - a) / 1e9)
        if any(split.values()):
            split_of[cfg] = split
    return split_of


def per_process_calls(res):
    """Per configuration, one list per process (file order = round order), one dict per call: its
    wall time, the host reference timed just before it, and where recorded its thread CPU time
    and the host's steal during it (s)."""
    procs = defaultdict(list)
    for cfg, d in res:
        ref, spans = d.get("host_reference_s"), d.get("call_spans_ns")
        if not ref or not spans or len(ref) != len(spans):
            continue
        n = len(spans)
        cpu, steal = d.get("call_thread_cpu_s") or [None] * n, d.get("call_steal_s") or [None] * n
        procs[cfg].append([{"wall": (b - a) / 1e9, "ref": r, "cpu": c, "steal": st}
                           for (a, b), r, c, st in zip(spans, ref, cpu, steal)])
    return procs


def interval95(draw, boot):
    """A percentile bootstrap's 95% interval: `draw()` gives one resampled statistic."""
    bs = sorted(draw() for _ in range(boot))
    return bs[int(0.025 * boot)], bs[int(0.975 * boot)]


def against_base(med, what, rng, boot=2000):
    """Lines: each configuration's median over its processes against its base's, with a 95%
    bootstrap interval (processes resampled within each configuration)."""
    lines = []
    for cfg, base in BASES.items():
        if not med.get(cfg) or not med.get(base):
            continue
        a, b = med[cfg], med[base]
        est = statistics.median(a) / statistics.median(b) - 1
        lo, hi = interval95(lambda: statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b))) - 1, boot)
        lines.append(f"  {cfg} {100 * est:+.1f}% vs {base} (95% bootstrap {100 * lo:+.1f}% .. {100 * hi:+.1f}%; "
                     f"{what}: {cfg} {len(a)} processes {1e3 * min(a):.1f}-{1e3 * max(a):.1f} ms, {base} {len(b)} processes {1e3 * min(b):.1f}-{1e3 * max(b):.1f} ms)")
    return lines


def fast_state(res, slack=1.3):
    """Per configuration against its base, over the calls made while the host was in its fast state:
    those whose reference took under `slack` x the run's fastest reference (this host's slow spells
    slow the reference 1.5-2x, and generate() with it); each process's median of those calls. Then,
    where recorded, each process's median thread CPU time per call: the tracer's work on the
    program's thread counts, time the host took away does not. Also the reference's spread, its
    correlation with the untraced calls' times, and the host's steal."""
    procs = per_process_calls(res)
    if "U" not in procs:
        return []
    calls = [c for v in procs.values() for p in v for c in p]
    refs = [c["ref"] for c in calls]
    u = [c for p in procs["U"] for c in p]
    lines = [f"host reference: median {1e3 * statistics.median(refs):.2f} ms, {1e3 * min(refs):.2f}-{1e3 * max(refs):.2f} ms; "
             + (f"correlation with the untraced calls' times {statistics.correlation([c['wall'] for c in u], [c['ref'] for c in u]):.2f} ({len(u)} calls)"
                if len(u) > 2 else "too few untraced calls for a correlation")]
    steal = [c["steal"] for c in calls if c["steal"] is not None]
    if steal:
        lines.append(f"host steal during the calls: {sum(1 for x in steal if x > 0)} of {len(steal)} calls, "
                     f"{1e3 * sum(steal):.0f} ms in all (every CPU of the machine)")
    limit = slack * min(refs)
    rng = random.Random(0)
    fast = {c: [statistics.median(f) for f in ([x["wall"] for x in p if x["ref"] < limit] for p in v) if f] for c, v in procs.items()}
    lines.append(f"fast host state: calls whose reference took < {1e3 * limit:.2f} ms; per configuration, each process's median of them:")
    lines += against_base(fast, "wall", rng)
    cpu = {c: [statistics.median(x["cpu"] for x in p) for p in v if p and all(x["cpu"] is not None for x in p)] for c, v in procs.items()}
    if any(cpu.values()):
        lines.append("thread CPU time per call (every call), each process's median:")
        lines += against_base(cpu, "CPU", rng)
    return lines


def within_process(res, boot=2000):
    """Configurations timed within one process, calls alternately paused and recording
    (hf_generate.py --ab): each process's recording/paused ratio, their median and a 95% bootstrap
    interval over the processes. The host's spells hit both states alike."""
    ratios = defaultdict(list)
    for cfg, d in res:
        ab = d.get("ab")
        if ab and ab.get("pause_effective"):
            ratios[cfg].append(ab["ratio"])
    rng = random.Random(0)
    lines = []
    for cfg, r in ratios.items():
        lo, hi = interval95(lambda: statistics.median(rng.choices(r, k=len(r))), boot)
        lines.append(f"{cfg} within each process, recording over paused: {100 * (statistics.median(r) - 1):+.1f}% "
                     f"(95% bootstrap over {len(r)} processes {100 * (lo - 1):+.1f}% .. "
                     f"{100 * (hi - 1):+.1f}%; per process {100 * (min(r) - 1):+.1f}% .. {100 * (max(r) - 1):+.1f}%)")
    return lines


def compile_lines(res):
    """The compiled runs' warm-up (compile and capture, excluded from the timed calls) and graph counts."""
    for cfg, d in res:
        if cfg in ("CU", "CT", "CN"):
            print(f"{cfg}: warm-up with compile {d.get('warmup_s', float('nan')):.1f} s, graphs compiled {d.get('compiled_graphs')}")


def main():
    out = sys.argv[1]
    calls, rounds, errors = load(os.path.join(out, "sampledcost.txt"))
    res = results(os.path.join(out, "sampledcost.txt"))
    med = {c: statistics.median(v) for c, v in calls.items()}
    print("| configuration | calls | median generate() | per-round medians | vs base (pooled) | per-round range |")
    print("| --- | --- | --- | --- | --- | --- |")
    for cfg in NAMES:
        if cfg not in calls:
            continue
        r = rounds[cfg]
        base = BASES.get(cfg)
        slow, rng = "", ""
        if base in med:
            slow = f"{100 * (med[cfg] / med[base] - 1):+.1f}% vs {base}"
            per = [a / b - 1 for a, b in zip(r, rounds[base])]
            rng = f"{100 * min(per):+.1f}% .. {100 * max(per):+.1f}%"
        print(f"| {cfg} {NAMES[cfg]} | {len(calls[cfg])} | {1e3 * med[cfg]:.1f} ms | "
              f"{1e3 * min(r):.1f}-{1e3 * max(r):.1f} ms ({len(r)} rounds) | {slow} | {rng} |")
    for cfg, errs in sorted(errors.items()):
        for e in errs:
            print(f"FAILED {cfg} ({NAMES.get(cfg, cfg)}): at {e.get('stage')}: {e.get('error')}")
    if all(c in med for c in ("U", "N", "S", "T")):
        u = med["U"]
        floor, full = med["N"] - u, med["T"] - u
        expect = floor + 0.10 * (full - floor)
        print(f"\nparts (share of untraced): NVTX-only floor {100 * floor / u:+.1f}%, full {100 * full / u:+.1f}%; "
              f"sampled 10% if only its windows cost: {100 * expect / u:+.1f}%, measured {100 * (med['S'] - u) / u:+.1f}%"
              + (f" (0.25 s period: {100 * (med['SS'] - u) / u:+.1f}%)" if "SS" in med else ""))
    for cfg, split in phase_split(out, res).items():
        parts = [f"{k} {len(v)} calls, median {1e3 * statistics.median(v):.1f} ms"
                 + (f" ({100 * (statistics.median(v) / med['U'] - 1):+.1f}% vs U" if "U" in med else "")
                 + (f", {100 * (statistics.median(v) / med['N'] - 1):+.1f}% vs N)" if "N" in med else ")" if "U" in med else "")
                 for k, v in split.items() if v]
        print(f"{cfg} by phase (calls overlapping no recording window / one): " + "; ".join(parts))
    for line in fast_state(res) + within_process(res):
        print(line)
    compile_lines(res)
    for cfg, d in switch_costs(out).items():
        parts = [f"{k} n {len(v)} median {statistics.median(v):.2f} ms max {max(v):.2f} ms" for k, v in d.items() if v]
        print(f"switches of {cfg}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
