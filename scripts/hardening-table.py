#!/usr/bin/env python3
"""Bad-input table for docs/validation/hardening.md (issue 22).

Runs the built CLI on the simulated GPU with generated hostile inputs, one class at a time, and
counts per class: inputs tried, aborts (a crash signal or an uncaught exception), hangs (still
running 1 s after SIGTERM sent at the time limit), and wrong figures with exit 0 (a result that
says "complete" or prints a figure that cannot be right). Inputs come from a seeded generator, not
a hand-picked list; the seed and counts are printed with the table.

  scripts/hardening-table.py [--cli build/ci/bin/jouleprof] [--seed 22] [--scale 1.0] [--markdown]
"""
import argparse
import json
import math
import os
import random
import shutil
import signal
import stat
import subprocess
import tempfile
import time

ABORT_SIGNALS = {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}


class Tally:
    def __init__(self, name):
        self.name, self.tried, self.aborts, self.hangs, self.wrong, self.refused = name, 0, 0, 0, 0, 0
        self.examples = []

    def note(self, kind, what):
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples) < 5:
            self.examples.append(f"{kind}: {what}")


class Runner:
    def __init__(self, cli, work):
        self.cli, self.work = cli, work
        self.env = dict(os.environ, JOULEPROF_DB=os.path.join(work, "runs.db"), TMPDIR=os.path.join(work, "tmp"))
        os.makedirs(self.env["TMPDIR"], exist_ok=True)

    def run(self, args, tally, limit=60, term_at=None, cwd=None, env=None):
        """Runs jouleprof ARGS; returns (rc, stdout, stderr) and tallies aborts and hangs."""
        tally.tried += 1
        e = dict(self.env, **(env or {}))
        p = subprocess.Popen([self.cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd or self.work,
                             env=e, start_new_session=True)
        deadline = term_at if term_at is not None else limit
        try:
            out, err = p.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=1.0)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
                tally.note("hangs", " ".join(map(repr, args))[:160])
                return None, out, err
        rc = p.returncode
        text = err.decode("utf-8", "replace")
        if (rc < 0 and -rc in ABORT_SIGNALS) or "terminate called" in text or "Assertion" in text:
            tally.note("aborts", f"rc {rc}: " + " ".join(map(repr, args))[:160])
        if rc not in (0, None) and rc > 0:
            tally.refused += 1
        return rc, out, err


def rand_bytes(rng, n):
    pool = [0x00, 0x01, 0x07, 0x0a, 0x0d, 0x1b, 0x7f, 0x80, 0x9b, 0xbf, 0xc0, 0xc3, 0xe2, 0xed, 0xf0, 0xf4, 0xf5, 0xfe, 0xff]
    return bytes(rng.choice(pool) if rng.random() < 0.5 else rng.randrange(32, 127) for _ in range(n))


def safe_arg(b):
    # argv cannot hold NUL; everything else is passed as bytes
    return b.replace(b"\x00", b"\x01") or b"x"


def load_json(path):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def figures_wrong(doc):
    """A result that claims to be right but cannot be."""
    if not isinstance(doc, dict):
        return "unreadable result"
    for w in doc.get("windows", []):
        t0, t1, e = w.get("t0_s"), w.get("t1_s"), w.get("gpu_energy_j")
        if w.get("status") == "complete":
            if t0 is None or t1 is None or t1 < t0:
                return f"complete window {w.get('name')} with t1 < t0"
            if e is not None and (e < 0 or not math.isfinite(e)):
                return f"complete window {w.get('name')} with energy {e}"
            if w.get("kind") == "phase" and t1 - t0 <= 0 and e == 0:
                return f"complete 0 J phase {w.get('name')}"
    return None


def measure(r, tally, extra, command, check=True, **kw):
    out = os.path.join(r.work, "m.json")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = r.run(["measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-store", "--json", out] + extra +
                       ["--"] + command, tally, **kw)
    if rc == 0 and check:
        doc = load_json(out)
        why = figures_wrong(doc) if doc is not None else "exit 0 without a readable result"
        if why:
            tally.note("wrong", why)
        return doc
    return None


def class_text(r, rng, n):
    t = Tally("text that is not valid UTF-8 / holds control characters (tags, arguments, marker lines, meter CSV, scenario names)")
    for i in range(n):
        b = safe_arg(rand_bytes(rng, rng.randrange(1, 12)))
        kind = i % 5
        if kind == 0:
            measure(r, t, [b"--tag", b"k=" + b], ["true"])
        elif kind == 1:
            measure(r, t, [], ["true", b])
        elif kind == 2:
            lines = os.path.join(r.work, "lines.bin")
            with open(lines, "wb") as f:
                f.write(b"begin " + b + b"\n" + b"count k" + b + b" 1\n" + b + b"\n")
            measure(r, t, [], ["sh", "-c", f"cat {lines} > $JOULEPROF_MARKERS"])
        elif kind == 3:
            csv = os.path.join(r.work, "meter.csv")
            now = time.time()
            with open(csv, "wb") as f:
                f.write(b"time,power_w," + b + b"\n")
                for k in range(5):
                    f.write(b"%.3f,%d,%s\n" % (now + k, 100 + k, b.replace(b",", b";").replace(b"\n", b" ")))
            measure(r, t, ["--meter-csv", csv, "--meter-utc"], ["true"])
        else:
            sc = os.path.join(r.work, "scenario.txt")
            with open(sc, "wb") as f:
                f.write(b"name " + b.replace(b"\n", b" ") + b"\n")
            measure(r, t, ["--sim-scenario", sc], ["true"])
    return t


def class_sizes(r, rng, n):
    t = Tally("sizes that overflow or exhaust memory (estimate dims, --image, --batch; bench llm --device sim --batch/--prompt)")
    big = lambda: rng.choice([1, 2, 7, 4096, 2**31 - 1, 2**32, 2**62, 2**63 - 1, rng.randrange(1, 2**63)])
    for i in range(n):
        kind = i % 4
        if kind == 0:
            args = ["estimate", "--model", f"gemm:{big()}x{big()}x{big()}", "--hw", "h100-sxm"]
        elif kind == 1:
            args = ["estimate", "--model", rng.choice(["resnet18", "vit-b16", "bert-base"]), "--image", str(big()), "--batch",
                    str(rng.choice([1, big()])), "--hw", "h100-sxm"]
        elif kind == 2:
            args = ["estimate", "--model", rng.choice(["copy", "relu", "softmax"]) + f":{big()}", "--hw", "h100-sxm"]
        else:
            args = ["bench", "llm", "--device", "sim", "--no-store", "--idle", "0", "--gen", "2", "--batch", str(big()), "--prompt",
                    str(rng.choice([8, big()]))]
        rc, so, se = r.run(args, t, limit=30)
        if rc == 0:
            text = so.decode("utf-8", "replace")
            if " -" in text.replace(" --", "") and any(u in text for u in (" B", " J", " s")):
                # a negative size, energy or time printed with exit 0
                for tok in text.split():
                    try:
                        if float(tok) < 0:
                            t.note("wrong", " ".join(args) + f" printed {tok}")
                            break
                    except ValueError:
                        pass
            if "nan" in text.lower() or "inf " in text.lower():
                t.note("wrong", " ".join(args) + " printed nan/inf")
    return t


def class_numbers(r, rng, n):
    t = Tally("numbers that are not numbers (NaN, inf, negative, huge) in typed options")
    opts = ["--period-ms", "--sim-power", "--cooldown-max", "--cooldown-tolerance", "--ci-warn", "--idle", "--meter-offset",
            "--counter-min-window"]
    vals = ["nan", "inf", "-inf", "-1", "1e400", "-0", "1e-400", "0x10", "1e308", "", "--", "5e"]
    for i in range(n):
        o, v = rng.choice(opts), rng.choice(vals)
        out = os.path.join(r.work, "m.json")
        if os.path.exists(out):
            os.remove(out)
        rc, so, se = r.run(["measure", "--device", "sim", "--runs", "1", "-q", "--no-store", "--json", out, o, v, "--", "true"], t,
                           limit=20)
        if rc == 0:
            doc = load_json(out)
            why = figures_wrong(doc)
            if why:
                t.note("wrong", f"{o} {v}: {why}")
    return t


def class_paths(r, rng, n):
    t = Tally("paths of the wrong kind (a directory or device where a file is expected, unwritable outputs)")
    d = os.path.join(r.work, "adir")
    os.makedirs(d, exist_ok=True)
    m = os.path.join(r.work, "ok.json")
    subprocess.run([r.cli, "measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-store", "--json", m, "--", "true"],
                   env=r.env, cwd=r.work, capture_output=True)
    inputs = [["measure", "--device", "sim", "-q", "--no-store", "--idle-from", d, "--", "true"],
              ["measure", "--device", "sim", "-q", "--no-store", "--meter-csv", d, "--", "true"],
              ["measure", "--device", "sim", "-q", "--no-store", "--sim-scenario", d, "--", "true"],
              ["estimate", "--validate", d], ["estimate", "--calibrate", d], ["runs", "import", d],
              ["runs", "import", m, "--timeline", d], ["report", d, "-o", os.path.join(r.work, "r.html")]]
    outputs = [lambda x: ["measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-store", "--json", x, "--", "true"],
               lambda x: ["measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-store", "--timeline", x, "--", "true"],
               lambda x: ["estimate", "--model", "gemm:64x64x64", "--hw", "h100-sxm", "--json", x],
               lambda x: ["report", m, "-o", x],
               lambda x: ["export-trace", m, "-o", x]]
    for i in range(n):
        if i % 2 == 0:
            args = rng.choice(inputs)
            rc, so, se = r.run(args, t, limit=30)
            if rc == 0:
                t.note("wrong", "accepted " + " ".join(args))
        else:
            target = rng.choice(["/dev/full", d])
            args = rng.choice(outputs)(target)
            rc, so, se = r.run(args, t, limit=30)
            if rc == 0:
                t.note("wrong", "exit 0 writing " + " ".join(args))
        leftovers = [f for f in os.listdir(r.work) if ".tmp" in f]
        if leftovers:
            t.note("wrong", f"temporary left behind: {leftovers}")
            for f in leftovers:
                os.remove(os.path.join(r.work, f))
    return t


def mutate(rng, doc):
    """One hostile edit somewhere in a result document."""
    paths = []

    def walk(x, p):
        paths.append(p)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, p + [k])
        elif isinstance(x, list):
            for k, v in enumerate(x[:6]):
                walk(v, p + [k])

    walk(doc, [])
    p = rng.choice(paths[1:])
    hostile = rng.choice([-1, 0, 1, 7, 10**6, 1e300, -1e300, 2**80, 2**63, -(2**63) - 1, "x", "incomplete", "done", None, [],
                          {}, True, "\u001b[31m", 0.5])
    x = doc
    for k in p[:-1]:
        x = x[k]
    if rng.random() < 0.15 and isinstance(x, dict):
        x.pop(p[-1], None)
    else:
        x[p[-1]] = hostile
    return doc


def class_imports(r, rng, n):
    t = Tally("imports that are structurally wrong but parse (result JSON), and deep nesting")
    base = os.path.join(r.work, "base.json")
    subprocess.run([r.cli, "measure", "--device", "sim", "--idle", "0.3", "--runs", "2", "-q", "--no-store", "--json", base, "--",
                    "sh", "-c", "echo 'begin p' > $JOULEPROF_MARKERS; sleep 0.2; echo 'end p' > $JOULEPROF_MARKERS"],
                   env=r.env, cwd=r.work, capture_output=True)
    original = load_json(base)
    db = os.path.join(r.work, "imports.db")
    for i in range(n):
        path = os.path.join(r.work, "bad.json")
        if i % 10 == 9:
            depth = rng.choice([100, 1000, 100000])
            text = "[" * depth + "]" * depth
        else:
            text = json.dumps(mutate(rng, json.loads(json.dumps(original))))
        with open(path, "w") as f:
            f.write(text)
        before = subprocess.run([r.cli, "runs", "--db", db, "list", "--json"], env=r.env, capture_output=True).stdout
        rc, so, se = r.run(["runs", "--db", db, "import", "--allow-duplicate", path], t, limit=30)
        after = subprocess.run([r.cli, "runs", "--db", db, "list", "--json"], env=r.env, capture_output=True).stdout
        if rc == 0:
            show = subprocess.run([r.cli, "runs", "--db", db, "show", "last", "--json"], env=r.env, capture_output=True)
            doc = load_json_bytes(show.stdout)
            why = figures_wrong(doc) if show.returncode == 0 else "imported run cannot be shown"
            if why:
                t.note("wrong", why)
        elif before != after:
            t.note("wrong", "refused import changed the store")
    return t


def load_json_bytes(b):
    try:
        return json.loads(b)
    except ValueError:
        return None


def class_markers(r, rng, n):
    t = Tally("marker lines that parse but are wrong (t=1e300, end before begin, unknown ends, deep nesting)")
    for i in range(n):
        now = time.time()
        lines = []
        for _ in range(rng.randrange(1, 30)):
            name = rng.choice(["a", "b", "c"])
            tt = rng.choice([None, now, now - 5, now + 5, 1e300, 1e11, 1, -1, now - 1e6])
            verb = rng.choice(["begin", "end", "count"])
            if verb == "count":
                lines.append(f"count tokens {rng.choice([1, -1, 1e300, 'nan'])} {name}")
            else:
                lines.append(f"{verb} {name}" + ("" if tt is None else f" t={tt!r}"))
        if i % 10 == 9:
            k = 5000
            lines = [f"begin p{j}" for j in range(k)] + [f"end p{j}" for j in reversed(range(k))]
        f = os.path.join(r.work, "markers.txt")
        with open(f, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        doc = measure(r, t, [], ["sh", "-c", f"cat {f} > $JOULEPROF_MARKERS; sleep 0.1"], limit=120)
        if doc:
            for w in doc.get("windows", []):
                if w.get("kind") == "phase" and w.get("status") == "complete" and w.get("t1_s", 0) < w.get("t0_s", 0):
                    t.note("wrong", "complete phase ending before it began")
    return t


def class_refs(r, rng, n):
    t = Tally("references that mean something else (run references, duplicate GPU selection, corrupt store, GPU lost)")
    db = os.path.join(r.work, "refs.db")
    for _ in range(3):
        subprocess.run([r.cli, "measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--db", db, "--", "true"], env=r.env,
                       capture_output=True)
    refs = ["last~", "last~x", "last~-1", "-1", "0", "99999999999999999999", "last~99999999999", "1e3", " 1", "last ", "~1",
            "last~1~1", "", "0x1"]
    for i in range(n):
        kind = i % 4
        if kind == 0:
            ref = rng.choice(refs)
            before = subprocess.run([r.cli, "runs", "--db", db, "list", "--json"], env=r.env, capture_output=True).stdout
            rc, so, se = r.run(["runs", "--db", db, "rm", ref], t)
            after = subprocess.run([r.cli, "runs", "--db", db, "list", "--json"], env=r.env, capture_output=True).stdout
            if before != after:
                t.note("wrong", f"runs rm {ref!r} removed a run")
        elif kind == 1:
            g = rng.choice(["0,0", "0,0,1", "1,1", "0,GPU-00000000", "0, 0", "00,0"])
            doc = measure(r, t, ["--gpus", g, "--sim-scenario", os.path.join(r.work, "two.txt")], ["true"])
            if doc is not None:
                idx = [x.get("index") for x in doc.get("gpus", [])]
                if len(idx) != len(set(idx)):
                    t.note("wrong", f"--gpus {g} measured a GPU twice")
        elif kind == 2:
            bad = os.path.join(r.work, "corrupt.db")
            shutil.copy(db, bad)
            size = os.path.getsize(bad)
            with open(bad, "r+b") as f:
                f.seek(rng.randrange(4096, size - 16))
                f.write(rand_bytes(rng, rng.randrange(16, 4096)))
            rc, so, se = r.run(["runs", "--db", bad, "list"], t)
            full = subprocess.run([r.cli, "runs", "--db", db, "list"], env=r.env, capture_output=True).stdout
            if rc == 0 and so != full:
                t.note("wrong", "corrupt store listed partly with exit 0")
        else:
            sc = os.path.join(r.work, "lost.txt")
            with open(sc, "w") as f:
                f.write(f"fail_after_s {rng.uniform(0.2, 1.0):.2f}\n")
            out = os.path.join(r.work, "m.json")
            if os.path.exists(out):
                os.remove(out)
            rc, so, se = r.run(["measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-store", "--sim-scenario", sc,
                                "--json", out, "--", "sleep", "1.5"], t)
            doc = load_json(out)
            if rc == 0 or (doc and doc.get("status") == "complete"):
                t.note("wrong", "GPU lost mid-run but exit 0 / complete")
    return t


def class_signals(r, rng, n):
    t = Tally("signals during long work (SIGTERM/SIGINT during measure, cool-down, the simulated bench)")
    for i in range(n):
        kind = i % 3
        if kind == 0:
            args = ["measure", "--device", "sim", "--idle", "1", "--runs", "3", "-q", "--no-store", "--json", "s.json"]
        elif kind == 1:
            args = ["measure", "--device", "sim", "--idle", "0", "--runs", "3", "--cooldown", "--cooldown-max", "30", "-q", "--no-store",
                    "--json", "s.json", "--", "sleep", "0.2"]
        else:
            args = ["bench", "llm", "--device", "sim", "--no-store", "--idle", "0", "--model", "llama-3.1-8b", "--prompt", "100000",
                    "--gen", "2", "--json", "s.json"]
        p = os.path.join(r.work, "s.json")
        if os.path.exists(p):
            os.remove(p)
        rc, so, se = r.run(args, t, term_at=rng.uniform(0.3, 3.0))
        doc = load_json(p)
        if doc is not None and rc is not None and doc.get("status") == "complete" and rc != 0:
            t.note("wrong", "interrupted but marked complete")
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/ci/bin/jouleprof")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="jp-hardening-")
    r = Runner(cli, work)
    with open(os.path.join(work, "two.txt"), "w") as f:
        f.write("gpus 2\n")
    k = lambda n: max(4, int(n * a.scale))
    started = time.time()
    classes = [class_text(r, rng, k(60)), class_sizes(r, rng, k(120)), class_numbers(r, rng, k(60)), class_paths(r, rng, k(60)),
               class_imports(r, rng, k(200)), class_markers(r, rng, k(40)), class_refs(r, rng, k(48)), class_signals(r, rng, k(24))]
    took = time.time() - started
    shutil.rmtree(work, ignore_errors=True)
    print(f"| class | inputs | refused (exit ≠ 0) | aborts | hangs past SIGTERM + 1 s | wrong figures with exit 0 |")
    print(f"| --- | ---: | ---: | ---: | ---: | ---: |")
    for c in classes:
        print(f"| {c.name} | {c.tried} | {c.refused} | {c.aborts} | {c.hangs} | {c.wrong} |")
    total = sum(c.tried for c in classes)
    print(f"\n{total} inputs, seed {a.seed}, {took:.0f} s.")
    for c in classes:
        for e in c.examples:
            print(f"- {c.name.split(' (')[0]}: {e}")
    bad = sum(c.aborts + c.hangs + c.wrong for c in classes)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
