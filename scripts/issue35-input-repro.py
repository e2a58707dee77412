#!/usr/bin/env python3
"""Issue 35's bad-input findings that crash, hang or print raw, reproduced against any jouleprof
CLI (docs/validation/hardening.md, "Issue 35's findings on bcdf828"). Each case says what a
correct CLI does; a line per case, `ok` or `FAIL` with the exit status (negative: killed by
that signal; "hang": still running after the case's limit).

  scripts/issue35-input-repro.py CLI
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

cli = os.path.abspath(sys.argv[1])


def kineto(name, args='"grid": [1, 1, 1], "block": [128, 1, 1]'):
    ev = {"ph": "X", "cat": "kernel", "name": "@N@", "ts": 1, "dur": 2, "args": {}}
    return json.dumps({"schemaVersion": 1, "traceEvents": [ev]}).replace('"@N@"', json.dumps(name)).replace(
        '"args": {}', '"args": {' + args + "}")


def run(args, limit=20, data=None, env=None):
    try:  # data: bytes fed through a pipe
        p = subprocess.run([cli, *args], capture_output=True, timeout=limit, input=data,
                           stdin=None if data is not None else subprocess.DEVNULL, env=dict(os.environ, **(env or {})))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "hang", "", ""


def main():
    d = tempfile.mkdtemp(prefix="jp-i35-inputs-")
    fails = 0

    def case(what, rc, ok):
        nonlocal fails
        fails += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}: exit {rc}")

    def clean(rc, err, want=2):  # refused with one error line, no crash
        return rc == want and sum(1 for x in err.splitlines() if x.startswith("jouleprof: error:")) == 1

    long_trace = os.path.join(d, "long.json")
    with open(long_trace, "w") as f:
        f.write(kineto("x" * 40000))
    rc, out, err = run(["kernels", long_trace])
    case("kernels, one kernel named 'x'*40000", rc, rc == 0)
    rc, out, err = run(["replay", long_trace, "--plan", os.path.join(d, "plan.json")])
    case("replay --plan, one kernel named 'x'*40000", rc, rc == 0)
    rc, out, err = run(["measure", "--device", "x" * 50000, "--", "true"])
    case("measure --device <50k characters>", rc, clean(rc, err))
    rc, out, err = run(["runs", "list", "--" + "y" * 100000])
    case("runs list --<100k characters>", rc, clean(rc, err))

    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    rc, out, err = run(["kernels", fifo], limit=10)
    case("kernels FIFO without a writer", rc, rc != "hang" and isinstance(rc, int) and rc >= 0)
    small = os.path.join(d, "small.json")
    with open(small, "w") as f:
        f.write(kineto("gemm_kernel"))
    with open(small, "rb") as f:
        rc, out, err = run(["kernels", "/dev/stdin"], data=f.read())
    case("kernels /dev/stdin (a pipe)", rc, rc == 0 and "1 kernels" in out)

    esc = os.path.join(d, "esc.json")
    with open(esc, "w") as f:
        f.write(kineto("\u001b[31mred\r0 fake row\nx"))
    rc, out, err = run(["kernels", esc])
    case("kernels, a name with ESC/CR/LF: nothing raw on the terminal", rc, rc == 0 and "\x1b" not in out and "\r" not in out)
    neg = os.path.join(d, "neg.json")
    with open(neg, "w") as f:
        f.write(kineto("gemm_kernel", '"grid": [-5, 1, 1], "block": [128, 1, 1], "registers per thread": -3'))
    rc, out, err = run(["kernels", neg, "--json", os.path.join(d, "neg-k.json")])
    text = open(os.path.join(d, "neg-k.json")).read() if rc == 0 and os.path.exists(os.path.join(d, "neg-k.json")) else ""
    case("kernels, negative grid and registers: not in the table", rc, rc == 0 and "-5" not in text and '": -3' not in text)
    triton = os.path.join(d, "triton.json")
    with open(triton, "w") as f:
        doc = json.loads(kineto("triton_kernel"))
        doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "triton_op", "ts": 0, "dur": 5,
                                   "args": {"grid": "grid(100,)"}})
        json.dump(doc, f)
    rc, out, err = run(["kernels", triton])
    case("kernels, a Triton cpu_op with \"grid\": \"grid(100,)\"", rc, rc == 0)
    empty = os.path.join(d, "emptydir")
    os.makedirs(empty)
    rc, out, err = run(["kernels", empty])
    case("kernels EMPTYDIR", rc, clean(rc, err))

    csv = os.path.join(d, "latin1.csv")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
    from sim_dvfs import write_sim_dvfs_csv  # noqa: PLC0415
    write_sim_dvfs_csv(csv)
    rc, out, err = run(["model", "fit", "--data", csv, "--form", "poly", "-o", os.path.join(d, "m.json")], limit=120)
    if rc == 0:
        m = json.load(open(os.path.join(d, "m.json")))
        m.setdefault("training", {}).setdefault("outlier_rule", {})["window"] = 0
        json.dump(m, open(os.path.join(d, "m0.json"), "w"))
        rc, out, err = run(["model", "eval", os.path.join(d, "m0.json"), "--data", csv], limit=120)
        case("model eval, a model file with training.outlier_rule.window 0", rc, isinstance(rc, int) and rc >= 0)
    raw = open(csv, "rb").read().replace(b"app0", b"caf\xe9")
    open(csv, "wb").write(raw)
    rc, out, err = run(["optimize", "--data", csv, "--json", "-"], limit=120)
    case("optimize --json, a Latin-1 application name", rc, rc == 0 and json.loads(out or "null"))

    replay_from = os.path.join(d, "from.json")
    json.dump({"schema": "jouleprof.replay/1", "rows": "not a list", "gpu": 7}, open(replay_from, "w"))
    rc, out, err = run(["replay", long_trace, "--from", replay_from])
    case("replay --from with wrong types", rc, clean(rc, err) and "internal error" not in err)

    rc, out, err = run(["sweep", "--device", "sim", "--clocks", "990", "--slurm", "--dry-run", "--time", "01:00:00\ntouch X"])
    case("sweep --slurm --time with a newline", rc, clean(rc, err) and "\ntouch X" not in out)
    shutil.rmtree(d, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
