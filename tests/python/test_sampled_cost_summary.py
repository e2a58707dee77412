"""The sampled mode's cost summary (scripts/validation/trace/sampled_cost_summary.py, issue 33 (c)):
on synthetic rounds whose host has slow spells, the fast-state comparison and the thread CPU times
recover the configurations' known costs, where the pooled medians do not."""
import json
import os
import random
import re
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "validation", "trace", "sampled_cost_summary.py")
COSTS = {"U": 1.0, "SL": 1.04, "T": 1.20}


def write_rounds(path, rounds=8, seed=3):
    """`CONFIG hf_generate {json}` lines as hf_generate.py --host-reference writes them. Each process
    lands in a slow spell (reference and calls 1.7x) with probability 1/3, some calls of it too; the
    thread CPU time is the call's time without the spell."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(rounds):
            for cfg, cost in COSTS.items():
                slow_process = rng.random() < 1 / 3
                spans, ref, cpu, steal, t = [], [], [], [], 0
                for _ in range(15):
                    spell = 1.7 if slow_process or rng.random() < 0.2 else 1.0
                    work = 0.140 * cost * rng.uniform(0.99, 1.01)
                    ref.append(0.011 * spell * rng.uniform(0.98, 1.02))
                    spans.append([t, t + int(work * spell * 1e9)])
                    cpu.append(work)
                    steal.append(work * (spell - 1))
                    t += 10**9
                times = sorted((b - a) / 1e9 for a, b in spans)
                d = {"generate_s": times, "median_s": times[len(times) // 2], "warmup_s": 1.0, "call_spans_ns": spans,
                     "host_reference_s": ref, "call_thread_cpu_s": cpu, "call_steal_s": steal}
                f.write(f"{cfg} hf_generate {json.dumps(d)}\n")


def figures(out, section):
    """{config: (estimate, low, high)} in percent from the lines after `section`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(section))
    res = {}
    for line in lines[start + 1:]:
        m = re.match(r"  (\w+) ([+-][\d.]+)% vs U \(95% bootstrap ([+-][\d.]+)% \.\. ([+-][\d.]+)%", line)
        if not m:
            break
        res[m.group(1)] = tuple(float(x) for x in m.group(2, 3, 4))
    return res


def test_fast_state_and_cpu_time_recover_the_known_costs(tmp_path):
    write_rounds(tmp_path / "sampledcost.txt")
    p = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert re.search(r"correlation with the untraced calls' times [01]\.\d\d \(120 calls\)", p.stdout), p.stdout
    assert re.search(r"host steal during the calls: \d+ of 360 calls", p.stdout), p.stdout
    for section in ("fast host state", "thread CPU time per call"):
        got = figures(p.stdout, section)
        assert set(got) == {"SL", "T"}, (section, p.stdout)
        for cfg, (est, low, high) in got.items():
            want = 100 * (COSTS[cfg] - 1)
            assert abs(est - want) < 1.5, (section, cfg, est, want)
            assert low <= est <= high and high - low < 6, (section, cfg, low, high)


def test_without_a_host_reference_only_the_pooled_table(tmp_path):
    with open(tmp_path / "sampledcost.txt", "w") as f:
        for cfg in ("U", "SL"):
            d = {"generate_s": [0.14, 0.15, 0.16], "median_s": 0.15, "warmup_s": 1.0}
            f.write(f"{cfg} hf_generate {json.dumps(d)}\n")
    p = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "| SL --sample 10% (5 s period) | 3 | 150.0 ms" in p.stdout
    assert "+0.0% vs U" in p.stdout
    assert "host reference" not in p.stdout and "fast host state" not in p.stdout


def test_within_process_ratios_over_processes(tmp_path):
    with open(tmp_path / "sampledcost.txt", "w") as f:
        for r in (1.03, 1.05, 1.04, 1.20, 0.99):
            d = {"generate_s": [0.14, 0.15], "median_s": 0.15, "warmup_s": 1.0, "ab": {"pause_effective": True, "ratio": r}}
            f.write(f"SB hf_generate {json.dumps(d)}\n")
        d = {"generate_s": [0.14, 0.15], "median_s": 0.15, "warmup_s": 1.0, "ab": {"pause_effective": False, "ratio": 2.0}}
        f.write(f"SB hf_generate {json.dumps(d)}\n")  # not paused (not under jouleprof trace): left out
    p = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = re.search(r"SB within each process, recording over paused: \+4\.0% \(95% bootstrap over 5 processes "
                  r"([+-][\d.]+)% \.\. ([+-][\d.]+)%; per process -1\.0% \.\. \+20\.0%\)", p.stdout)
    assert m, p.stdout
    assert float(m.group(1)) <= 4.0 <= float(m.group(2))
