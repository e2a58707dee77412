#!/usr/bin/env python3
"""Bad-input table for docs/validation/hardening.md (issue 22).

Runs the built CLI on the simulated GPU with generated hostile inputs, one class at a time, and
counts per class: inputs tried, aborts (a crash signal or an uncaught exception), hangs (still
running 1 s after SIGTERM sent at the time limit), and wrong figures with exit 0 (a result that
says "complete" or prints a figure that cannot be right). Inputs come from a seeded generator, not
a hand-picked list; the seed and counts are printed with the table.

  scripts/hardening-table.py [--cli build/ci/bin/jouleprof] [--seed 22] [--scale 1.0] [--only 9,10]

Every class draws from its own seeded stream, so `--only` reproduces the full run's inputs of
the classes it names. The sweep SIGTERM and restore classes use the fake NVML of the build tree
(fake-nvml/), the trace class the fake traced program (tests/trace/jouleprof_fake_traced).
Class 15 (issue 35) feeds input files of every kind to every command that reads one: long
names, FIFOs and pipes, /dev/zero, folders, Triton-style args, Latin-1, terminal-injection
strings, gzip bombs and files over the input size limit.
Exit status 1 when any class has an abort, a hang, a wrong figure or an unprintable error.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

ABORT_SIGNALS = {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}


class Tally:
    def __init__(self, name):
        self.name, self.tried, self.aborts, self.hangs, self.wrong, self.refused, self.unclear = name, 0, 0, 0, 0, 0, 0
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
            if isinstance(doc, list) and len(doc) == 1:
                doc = doc[0]  # `runs show --json`: one array of result documents
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


def hostile_number(rng):
    """One generated text where a number is expected: an IEEE special, a power-of-two edge, any
    magnitude (overflowing and underflowing doubles included), zero, an ordinary value, a number
    with junk around it, non-UTF-8 bytes, or nothing."""
    sign = rng.choice(["", "", "-", "+"])
    k = rng.randrange(8)
    if k == 0:
        return sign + rng.choice(["nan", "NaN", "inf", "INF", "infinity"])
    if k == 1:
        return sign + str(2 ** rng.choice([7, 8, 15, 16, 31, 32, 53, 63, 64, 80]) + rng.randrange(-1, 2))
    if k == 2:
        return f"{sign}{rng.uniform(0, 10):.3g}e{rng.randrange(-400, 400)}"
    if k == 3:
        return sign + rng.choice(["0", "0.0", "00", "0e0", "0x0"])
    if k == 4:
        return sign + (str(rng.randrange(0, 100000)) if rng.random() < 0.5 else f"{rng.uniform(0, 5000):.4g}")
    if k == 5:
        junk = "".join(rng.choice(" x,.e_:/%=-+") for _ in range(rng.randrange(1, 3)))
        n = str(rng.randrange(0, 5000))
        return rng.choice([junk + n, n + junk, n[:1] + junk + n[1:]])
    if k == 6:
        return safe_arg(rand_bytes(rng, rng.randrange(1, 8)))
    return ""


def hostile_list(rng):
    """A comma-separated list of 1-3 items, hostile or plausible (a plausible one hides a hostile neighbour)."""
    items = [hostile_number(rng) if rng.random() < 0.7 else str(rng.choice([990, 1410, 1980, 300, 500, 2619]))
             for _ in range(rng.randrange(1, 4))]
    if any(isinstance(i, bytes) for i in items):
        return b",".join(i if isinstance(i, bytes) else i.encode() for i in items)
    return ",".join(items)


def one_line_error(rc, err):
    """Exit 2 (bad input) must come with exactly one `jouleprof: error:` line, printable: valid
    UTF-8 without control characters (it quotes what the user typed)."""
    if rc != 2:
        return True
    lines = [l for l in err.split(b"\n") if l.startswith(b"jouleprof: error:")]
    if len(lines) != 1:
        return False
    try:
        text = lines[0].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in text)


def non_finite_or_negative(x, path=""):
    """The first number in a JSON document that is NaN/inf, or negative under a physical key."""
    physical = ("_w", "_s", "_j", "_mhz", "energy", "power", "time")
    if isinstance(x, dict):
        for k, v in x.items():
            why = non_finite_or_negative(v, f"{path}/{k}")
            if why:
                return why
    elif isinstance(x, list):
        for i, v in enumerate(x):
            why = non_finite_or_negative(v, f"{path}/{i}")
            if why:
                return why
    elif isinstance(x, float) and not math.isfinite(x):
        return f"{path} = {x}"
    elif isinstance(x, (int, float)) and not isinstance(x, bool) and x < 0:
        key = path.rsplit("/", 1)[-1]
        if any(key.endswith(p) for p in physical) and "delta" not in key and "error" not in key and "change" not in key:
            return f"{path} = {x}"
    return None


def class_sampler(r, rng, n):
    t = Tally("sampler options of measure (--period-ms, --counter-min-window, --ci-warn, --idle, --cooldown-tolerance, "
              "--cooldown-max, --sim-power) with generated numbers")
    opts = ["--period-ms", "--counter-min-window", "--ci-warn", "--idle", "--cooldown-tolerance", "--cooldown-max", "--sim-power"]
    for i in range(n):
        o, v = opts[i % len(opts)], hostile_number(rng)
        out = os.path.join(r.work, "m.json")
        if os.path.exists(out):
            os.remove(out)
        extra = ["--cooldown"] if o.startswith("--cooldown") else []
        rc, so, se = r.run(["measure", "--device", "sim", "--runs", "2", "-q", "--no-store", "--json", out] + extra +
                           ([] if o == "--idle" else ["--idle", "0"]) + [o, v, "--", "sleep", "0.05"], t, limit=10)
        if rc == 0:
            doc = load_json(out)
            why = figures_wrong(doc) if doc is not None else "exit 0 without a readable result"
            if why:
                t.note("wrong", f"{o} {v!r}: {why}")
        if rc is not None and not one_line_error(rc, se):
            t.note("unclear", f"{o} {v!r}: exit 2 without one printable `jouleprof: error:` line")
    return t


SIM_CLOCKS = None


def sim_clocks(r):
    global SIM_CLOCKS
    if SIM_CLOCKS is None:
        p = subprocess.run([r.cli, "sweep", "--device", "sim", "--discover", "--json", "-", "-q"], env=r.env, capture_output=True)
        doc = load_json_bytes(p.stdout) or {}
        g = (doc.get("gpus") or [{}])[0]
        SIM_CLOCKS = (set(c for cl in g.get("gpu_clocks_mhz_by_mem_clock", {}).values() for c in cl),
                      set(g.get("mem_clocks_mhz", [])), g.get("power_limit_min_w") or 0, g.get("power_limit_max_w") or 1e9)
    return SIM_CLOCKS


def sweep_runs(r, db):
    p = subprocess.run([r.cli, "runs", "list", "--db", db, "--json", "-"], env=r.env, capture_output=True)
    return load_json_bytes(p.stdout) or [] if p.returncode == 0 else []


def check_sweep_store(r, t, db, what):
    """A finished sweep's stored points: finite, non-negative energy; settings the GPU has."""
    clocks, mems, pmin, pmax = sim_clocks(r)
    for run in sweep_runs(r, db):
        e = run.get("gpu_energy_j")
        if e is not None and (not math.isfinite(e) or e < 0):
            t.note("wrong", f"{what}: stored energy {e}")
        tags = run.get("tags") or {}
        for key, allowed in (("clock_mhz", clocks), ("mem_clock_mhz", mems)):
            v = tags.get(key)
            if v not in (None, "-", "") and allowed:
                try:
                    if int(v) not in allowed:
                        t.note("wrong", f"{what}: ran at {key}={v}, which the GPU does not offer")
                except ValueError:
                    t.note("wrong", f"{what}: tag {key}={v!r}")
        v = tags.get("power_limit_w")
        if v not in (None, "-", ""):
            try:
                if not pmin <= float(v) <= pmax:
                    t.note("wrong", f"{what}: ran at power limit {v} W, outside {pmin}-{pmax} W")
            except ValueError:
                t.note("wrong", f"{what}: tag power_limit_w={v!r}")


def class_sweep_options(r, rng, n):
    t = Tally("sweep options (--device sim: --clocks, --power-limits, --mem-clocks, --param, --runs, --warmup, --idle, --seed) "
              "with generated numbers and lists")
    fast = os.path.join(r.work, "fast.txt")
    with open(fast, "w") as f:
        f.write("workload_time_scale 0.1\n")
    sim_clocks(r)
    for i in range(n):
        db = os.path.join(r.work, f"sweep-{i}.db")
        opt = ["--clocks", "--power-limits", "--mem-clocks", "--param", "--runs", "--warmup", "--idle", "--seed"][i % 8]
        base = {"--clocks": "1980", "--runs": "1", "--warmup": "0", "--idle": "0", "--order": "sequential"}
        if opt == "--clocks":
            v = hostile_list(rng) if rng.random() < 0.7 else "step:" + str(hostile_number(rng))
        elif opt in ("--power-limits", "--mem-clocks"):
            v = hostile_list(rng)
        elif opt == "--param":
            key = rng.choice(["batch", "", "b=c", "{x}"]) if rng.random() < 0.6 else safe_arg(rand_bytes(rng, 3))
            val = hostile_list(rng)
            v = (key.encode() if isinstance(key, str) else key) + b"=" + (val if isinstance(val, bytes) else val.encode())
        else:
            v = hostile_number(rng)
            if opt == "--seed":
                base["--order"] = "random"
        base[opt] = v
        args = ["sweep", "--device", "sim", "--sim-scenario", fast, "--no-cpu", "-q", "--db", db]
        for k, val in base.items():
            args += [k, val]
        rc, so, se = r.run(args + ["--", "sh", "-c", "sleep 0.05"], t, limit=15)
        if rc == 0:
            check_sweep_store(r, t, db, f"{opt} {v!r}")
        if rc is not None and not one_line_error(rc, se):
            t.note("unclear", f"{opt} {v!r}: exit 2 without one printable `jouleprof: error:` line")
    return t


def class_sweep_signals(r, rng, n, fake_nvml):
    t = Tally("SIGTERM in the middle of a sweep (simulated GPU, and the fake NVML whose GPU state is a file): ends within 1 s, "
              "exit 143, GPU restored, interrupted point stored incomplete")
    fast = os.path.join(r.work, "fast.txt")
    with open(fast, "w") as f:
        f.write("workload_time_scale 0.1\n")
    for i in range(n):
        nvml = fake_nvml and i % 2 == 1
        db, jdir = os.path.join(r.work, f"sig-{i}.db"), os.path.join(r.work, f"journal-{i}")
        env = {"JOULEPROF_CONTROL_DIR": jdir}
        state = os.path.join(r.work, f"state-{i}.txt")
        original = "0 gpu_locked 0 0 0 mem_locked 0 0 0 app 1410 2619 power_mw 650000 persistence 1\n"
        if nvml:
            sc = os.path.join(r.work, f"scenario-{i}.txt")
            with open(sc, "w") as f:
                f.write("gpus 1\nworkload_time_scale 0.1\n")
            with open(state, "w") as f:
                f.write(original)
            env.update(JOULEPROF_NVML_LIB=fake_nvml, JOULEPROF_FAKE_NVML_STATE=state, JOULEPROF_FAKE_NVML_SCENARIO=sc,
                       JOULEPROF_FAKE_NVML_SET_LOG=os.path.join(r.work, f"set-{i}.log"))
        args = ["sweep", "--device", "nvml" if nvml else "sim", "--clocks", "1980,1410,990", "--power-limits", "300,700", "--runs",
                "2", "--warmup", "0", "--idle", str(rng.choice([0, 0.2])), "--order", rng.choice(["sequential", "random"]),
                "--no-cpu", "-q", "--db", db] + ([] if nvml else ["--sim-scenario", fast]) + ["--", "sleep", "0.3"]
        at = rng.uniform(0.3, 3.0)
        rc, so, se = r.run(args, t, term_at=at, env=env)
        if rc is None:
            continue  # a hang, tallied
        what = f"{'fake NVML' if nvml else 'sim'} sweep, SIGTERM at {at:.2f} s"
        if rc == 0:
            continue  # finished before the signal
        if rc != 128 + signal.SIGTERM:
            t.note("wrong", f"{what}: exit {rc}, not 143")
        runs = sweep_runs(r, db)
        if runs and not any(x.get("status") != "complete" for x in runs):
            t.note("wrong", f"{what}: no stored point is marked incomplete ({len(runs)} complete)")
        if os.path.isdir(jdir) and [f for f in os.listdir(jdir) if f.endswith(".json")]:
            t.note("wrong", f"{what}: a restore journal is left")
        if nvml:
            with open(state) as f:
                now = f.read()
            if now != original:
                t.note("wrong", f"{what}: GPU state not restored: {now.strip()}")
    return t


def model_csv(path):
    """A small sweep CSV: 8 applications x 6 clocks, power ~ f^2.2, time ~ compute-bound share / f."""
    apps = [(f"app{i}", 150 + 25 * i, 1.0 + 0.3 * i, 0.1 + 0.1 * i, 0.9 - 0.1 * i) for i in range(8)]
    with open(path, "w") as f:
        f.write("application,sm_app_clock,power_usage,run_time,fp_active,dram_active\n")
        for a, p0, t0, fp, dr in apps:
            for c in (1980, 1800, 1600, 1400, 1200, 990):
                x = c / 1980
                f.write(f"{a},{c},{60 + p0 * x ** 2.2:.2f},{t0 * (fp / x + 1 - fp):.4f},{fp:.2f},{dr:.2f}\n")


def class_model_options(r, rng, n):
    t = Tally("numeric options of model fit/validate/predict and optimize (--max-clock, --probe-clock, --ridge, --xgb-rounds, "
              "--folds, --outlier-power-tol, --probes, --clocks, --objective slowdown:PCT)")
    data = os.path.join(r.work, "model.csv")
    model_csv(data)
    good = os.path.join(r.work, "good.model.json")
    subprocess.run([r.cli, "model", "fit", "--data", data, "--form", "poly", "-o", good, "-q"], env=r.env, capture_output=True)
    for i in range(n):
        v = hostile_number(rng)
        form = rng.choice(["poly", "xgboost"])
        kind = i % 9
        out = os.path.join(r.work, "model-out.json")
        if kind == 0:
            args = ["model", "fit", "--data", data, "--form", form, "-o", out, "--max-clock", v]
        elif kind == 1:
            args = ["model", "fit", "--data", data, "--form", form, "-o", out, "--probe-clock", v]
        elif kind == 2:
            args = ["model", "fit", "--data", data, "--form", "poly", "-o", out, "--ridge", v]
        elif kind == 3:
            args = ["model", "fit", "--data", data, "--form", "xgboost", "-o", out, "--xgb-rounds", v]
        elif kind == 4:
            args = ["model", "validate", "--data", data, "--form", form, "--split", "kfold", "--folds", v, "--json", "-"]
        elif kind == 5:
            args = ["model", "fit", "--data", data, "--form", form, "-o", out, "--outlier-power-tol", v]
        elif kind == 6:
            args = ["model", "predict", good, "--data", data, "--clocks", hostile_list(rng), "--json", "-"]
        elif kind == 7:
            args = ["optimize", "--data", data, "--objective", "slowdown:" + (v if isinstance(v, str) else v.decode("latin-1")),
                    "--json", "-"]
        else:
            args = ["optimize", "--model", good, "--data", data, "--probes", v, "--json", "-"]
        if os.path.exists(out):
            os.remove(out)
        rc, so, se = r.run(args, t, limit=30)
        if rc == 0:
            doc = load_json(out) if "-o" in args else load_json_bytes(so)
            why = "exit 0 without a readable result" if doc is None else non_finite_or_negative(doc)
            if why:
                t.note("wrong", " ".join(map(str, args[:2])) + f" {args[-2] if '-o' not in args[-3:] else ''} {v!r}: {why}")
        if rc is not None and not one_line_error(rc, se):
            t.note("unclear", f"{args[:2]} {v!r}: exit 2 without one printable `jouleprof: error:` line")
    return t


def class_trace_options(r, rng, n, traced):
    t = Tally("numeric options of trace (--period-ms, --idle, --sim-power, --lag-ms, --window-ms, --min-interval-ms, --top, "
              "--path-depth) on the simulated GPU")
    lib = os.path.join(r.work, "libfake_inject.so")
    # trace requires an ELF header on --inject-lib; the fake traced program writes its trace file
    # itself, so this stand-in is never loaded (as in tests/trace/test_trace_cli.cpp).
    with open(lib, "wb") as f:
        f.write(b"\x7fELF: a stand-in, never loaded\n")
    opts = ["--period-ms", "--idle", "--sim-power", "--lag-ms", "--window-ms", "--min-interval-ms", "--top", "--path-depth"]
    for i in range(n):
        o, v = opts[i % len(opts)], hostile_number(rng)
        out = os.path.join(r.work, "t.json")
        if os.path.exists(out):
            os.remove(out)
        args = ["trace", "--device", "sim", "--inject-lib", lib, "--db", os.path.join(r.work, "trace.db"), "--json", out]
        if o != "--idle":
            args += ["--idle", "0"]
        args += ["--method", rng.choice(["split", "regression", "interval"]), o, v, "--"] + ([traced, "0.5"] if traced else ["true"])
        rc, so, se = r.run(args, t, limit=15)
        if rc == 0:
            doc = load_json(out)
            why = figures_wrong(doc) if doc is not None else "exit 0 without a readable result"
            why = why or non_finite_or_negative((doc or {}).get("trace", {}))
            if why:
                t.note("wrong", f"{o} {v!r}: {why}")
        if rc is not None and not one_line_error(rc, se):
            t.note("unclear", f"{o} {v!r}: exit 2 without one printable `jouleprof: error:` line")
    return t


def class_restore(r, rng, n, fake_nvml):
    t = Tally("restore: journals whose numbers are generated (clocks, power limit, pid, version) against the fake NVML")
    if not fake_nvml:
        return t
    for i in range(n):
        jdir = os.path.join(r.work, f"rjournal-{i}")
        os.makedirs(jdir, exist_ok=True)
        state = os.path.join(r.work, f"rstate-{i}.txt")
        changed = "0 gpu_locked 1 990 990 mem_locked 0 0 0 app 1980 2619 power_mw 300000 persistence 1\n"
        with open(state, "w") as f:
            f.write(changed)
        sc = os.path.join(r.work, "r-scenario.txt")
        with open(sc, "w") as f:
            f.write("gpus 1\n")
        env = {"JOULEPROF_NVML_LIB": fake_nvml, "JOULEPROF_FAKE_NVML_STATE": state, "JOULEPROF_FAKE_NVML_SCENARIO": sc,
               "JOULEPROF_FAKE_NVML_SET_LOG": os.path.join(r.work, "r-set.log")}
        # A journal as a dead jouleprof leaves it, with one number replaced by a generated one.
        uuid = subprocess.run([r.cli, "sweep", "--device", "nvml", "--discover", "--json", "-", "-q"],
                              env=dict(r.env, **env), capture_output=True)
        gpu = ((load_json_bytes(uuid.stdout) or {}).get("gpus") or [{}])[0]
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        j = {"journal_version": 1, "host": os.uname().nodename, "boot_id": boot, "pid": 999999999, "pid_start_ticks": 1,
             "created_utc": "2026-01-01T00:00:00Z", "backend": "nvml", "library": fake_nvml, "uuid": gpu.get("uuid", "GPU-x"),
             "name": gpu.get("name", "x"), "index": 0,
             "original": {"gpu_locked_clocks": None, "mem_locked_clocks": None, "app_gpu_clock_mhz": 1410, "app_mem_clock_mhz": 2619,
                          "power_limit_mw": 650000, "persistence": True}}
        field = rng.choice(["gpu_locked_clocks", "mem_locked_clocks", "app_gpu_clock_mhz", "app_mem_clock_mhz", "power_limit_mw",
                            "pid", "pid_start_ticks", "index", "journal_version"])
        v = hostile_number(rng)
        text = v.decode("latin-1") if isinstance(v, bytes) else v
        # A JSON number where the text is one (2^80 and 1e400 included), else a JSON string.
        literal = text if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", text) else json.dumps(text)
        if field.endswith("_clocks"):
            j["original"][field] = {"min_mhz": "@V@", "max_mhz": "@V@"}
        elif field in j["original"]:
            j["original"][field] = "@V@"
        else:
            j[field] = "@V@"
        with open(os.path.join(jdir, j["uuid"] + ".json"), "w") as f:
            f.write(json.dumps(j).replace('"@V@"', literal))
        num = json.loads(literal)
        val = {"min_mhz": num, "max_mhz": num} if field.endswith("_clocks") else num
        rc, so, se = r.run(["restore", "--journal-dir", jdir, "--json", "-"], t, limit=20, env=env)
        if rc == 0:
            with open(state) as f:
                now = f.read().split()
            # Exit 0 means the GPU now holds what the journal says, and that is a state the GPU can hold.
            if field == "power_limit_mw" and isinstance(val, (int, float)) and int(now[now.index("power_mw") + 1]) != val:
                t.note("wrong", f"restore exit 0 with power_limit_mw {val!r} but the GPU got {now[now.index('power_mw') + 1]} mW")
            if field == "app_gpu_clock_mhz" and isinstance(val, (int, float)) and int(now[now.index("app") + 1]) != val:
                t.note("wrong", f"restore exit 0 with app_gpu_clock_mhz {val!r} but the GPU got {now[now.index('app') + 1]} MHz")
            if field == "gpu_locked_clocks" and isinstance(val, dict) and isinstance(val["max_mhz"], (int, float)):
                if now[now.index("gpu_locked") + 1] == "1" and int(now[now.index("gpu_locked") + 3]) != val["max_mhz"]:
                    t.note("wrong", f"restore exit 0 with locked clock {val['max_mhz']!r} but the GPU got {now[now.index('gpu_locked') + 3]}")
        if rc is not None and not one_line_error(rc, se):
            t.note("unclear", f"restore with {field}={v!r}: exit 2 without one printable `jouleprof: error:` line")
    return t


def kineto_doc(events):
    return ('{"schemaVersion": 1, "traceEvents": [' + ", ".join(events) + "]}").encode("utf-8", "surrogateescape")


def kineto_kernel(name_json, args_json, ts=1):
    return '{"ph": "X", "cat": "kernel", "name": ' + name_json + ', "ts": ' + str(ts) + ', "dur": 2, "args": {' + args_json + "}}"


def hostile_arg(rng):
    """A Kineto arg value of an unexpected type or value (Triton / torch.compile traces, damage)."""
    return rng.choice(['"grid(100,)"', '"x"', "-1", "-2147483649", "4294967296", "1e400", "1.5", "null", "true", "[]",
                       "[1, 2]", "[-1, 1, 1]", '[1, "a", 1]', "{}", '{"a": [1]}', "[1, 1, 1, 1]", "9223372036854775808"])


def class_inputs(r, rng, n):
    """Issue 35's input classes: long names, pipes and FIFOs, /dev/zero, folders and special files,
    Triton args, Latin-1, terminal-injection strings, gzip bombs, oversized whitespace files."""
    import gzip
    t = Tally("input files (issue 35): long names, FIFOs and pipes, /dev/zero, folders, Triton args, Latin-1, injection strings, gzip bombs")
    d = os.path.join(r.work, "inputs")
    os.makedirs(os.path.join(d, "emptydir"), exist_ok=True)
    # File flags of every command that reads a whole file, each with a harmless rest of the line.
    file_flags = [
        lambda p: ["kernels", p],
        lambda p: ["kernels", "/nonexistent.json", "--classes", p],
        lambda p: ["kernels", "/nonexistent.json", "--tiers", p],
        lambda p: ["replay", "/nonexistent.json", "--from", p],
        lambda p: ["model", "fit", "--data", p, "-o", os.path.join(d, "m.json")],
        lambda p: ["model", "eval", p, "--data", os.path.join(d, "nodata.csv")],
        lambda p: ["measure", "--device", "sim", "--idle-from", p, "--no-store", "-q", "--", "true"],
        lambda p: ["measure", "--device", "sim", "--idle", "0", "--sim-scenario", p, "--no-store", "-q", "--", "true"],
        lambda p: ["measure", "--device", "sim", "--idle", "0", "--meter-csv", p, "--no-store", "-q", "--", "true"],
        lambda p: ["sweep", "--device", "sim", "--plan", p, "--no-store", "-q"],
        lambda p: ["estimate", "--model", "gemm:64x64x64", "--hw", "h100-sxm", "--calibration", p],
        lambda p: ["estimate", "--validate", p],
        lambda p: ["runs", "import", p],
        lambda p: ["runs", "import", os.path.join(d, "good.json"), "--timeline", p],
        lambda p: ["trace", "--device", "sim", "--inject-lib", p, "--no-store", "-q", "--", "true"],
    ]
    # A result to import with a bad --timeline.
    r.run(["measure", "--device", "sim", "--idle", "0", "-q", "--no-store", "--json", os.path.join(d, "good.json"), "--", "true"], t)
    fifo = os.path.join(d, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    big = os.path.join(d, "whitespace.json")  # over the 256 MiB input limit, real bytes
    with open(big, "wb") as f:
        chunk = b" \n\t" * (1 << 20)
        for _ in range(90):
            f.write(chunk)
        f.write(b"{}")
    special = {"/dev/zero": "device", fifo: "fifo", os.path.join(d, "emptydir"): "folder", big: "big"}
    kinds = ["special", "long_name", "long_option", "pipe", "triton", "latin1", "inject", "negative", "bomb"]
    for i in range(n):
        kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
        if kind == "special":
            p = rng.choice(list(special))
            args = rng.choice(file_flags)(p)
            rc, so, se = r.run(args, t, limit=20)
            if rc == 0 and special[p] != "fifo":
                t.note("wrong", f"{args[:3]} with {special[p]} {p}: exit 0")
            if rc == 1:
                t.note("unclear", f"{args[:3]} with {special[p]}: exit 1: {se[-200:]!r}")
            if rc is not None and not one_line_error(rc, se):
                t.note("unclear", f"{args[:3]} with {special[p]}: exit 2 without one printable error line")
            continue
        if kind == "long_option":
            n_chars = rng.choice([50000, 100000, 130000])
            args = rng.choice([["measure", "--device", "x" * n_chars], ["runs", "list", "--" + "y" * n_chars],
                               ["measure", "--device", "sim", "--gpus", "z" * n_chars, "--", "true"],
                               ["estimate", "--model", "m" * n_chars, "--hw", "h100-sxm"]])
            rc, so, se = r.run(args, t, limit=20)
            if rc is not None and not one_line_error(rc, se):
                t.note("unclear", f"{args[0]} with a {n_chars}-character word: exit 2 without one printable error line")
            if rc == 0:
                t.note("wrong", f"{args[0]} with a {n_chars}-character word: exit 0")
            continue
        path = os.path.join(d, f"t{i}.json")
        expect_kernels = None
        if kind == "long_name":
            length = rng.choice([40000, 200000, 1 << 20, (1 << 20) + 1, 3 << 20])
            name = "".join(rng.choice("xyz_<>:,()") for _ in range(64)) * (length // 64)
            doc = kineto_doc([kineto_kernel(json.dumps(name), '"grid": [1, 1, 1], "block": [32, 1, 1]'),
                              kineto_kernel('"ok"', '"grid": [1, 1, 1]', 5)])
            expect_kernels = 2 if len(name) <= (1 << 20) else 1
        elif kind in ("triton", "negative"):
            events, good = [], 0
            for e in range(rng.randrange(1, 12)):
                field = rng.choice(["grid", "block", "registers per thread", "shared memory", "External id", "correlation", "device", "bytes"])
                v = hostile_arg(rng) if kind == "triton" else str(-rng.randrange(1, 1 << 40))
                if rng.random() < 0.4:
                    events.append(kineto_kernel(f'"k{e}"', f'"grid": [{rng.randrange(1, 99)}, 1, 1], "block": [128, 1, 1]', e))
                    good += 1
                else:
                    events.append(kineto_kernel(f'"k{e}"', f'"{field}": {v}', e))
                if rng.random() < 0.3:  # a Triton launcher op with a string grid
                    events.append('{"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_0", "ts": 0, "dur": 1, "args": {"External id": 3, "grid": "grid(100,)", "num_warps": 4}}')
            doc = kineto_doc(events)
        elif kind == "latin1":
            raw = bytes(rng.choice([0xe9, 0xfc, 0xa0, 0xff, 0x80]) for _ in range(rng.randrange(1, 8)))
            doc = (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k' + raw + b'", "ts": 1, "dur": 2, "args": {}}]}')
        elif kind == "inject":
            evil = rng.choice(["\\u001b[2J\\u001b[H", "\\r0 fake row\\n", "\\u001b]0;title\\u0007", "\\u009b31m", "a\\nwarning: injected"])
            doc = kineto_doc([kineto_kernel('"' + evil + 'kernel"', '"grid": [1, 1, 1]')])
        elif kind == "bomb":
            path += ".gz"
            with gzip.open(path, "wb", compresslevel=1) as f:
                f.write(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "')
                block = b"x" * (1 << 20)
                for _ in range(rng.choice([80, 300])):
                    f.write(block)
            doc = None
        else:  # pipe: /dev/stdin fed from a pipe
            doc = kineto_doc([kineto_kernel('"piped"', '"grid": [2, 1, 1]', k) for k in range(rng.randrange(1, 50))])
            expect_kernels = doc.count(b'"piped"')
        if doc is not None:
            with open(path, "wb") as f:
                f.write(doc)
        if kind == "pipe":
            p = subprocess.Popen([r.cli, "kernels", "/dev/stdin", "--json", "-", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=r.env, cwd=r.work)
            t.tried += 1
            try:
                so, se = p.communicate(input=doc, timeout=20)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                t.note("hangs", "kernels /dev/stdin")
                continue
            if rc < 0 and -rc in ABORT_SIGNALS:
                t.note("aborts", "kernels /dev/stdin")
        else:
            args = rng.choice([["kernels", path, "--json", "-", "-q"], ["replay", path, "--plan", os.path.join(d, "plan.json")]])
            rc, so, se = r.run(args, t, limit=20)
            if args[0] == "replay":
                so = b""
        if rc is None:
            continue
        if rc == 1:
            t.note("unclear", f"{kind}: exit 1: {se[-200:]!r}")
        if not one_line_error(rc, se):
            t.note("unclear", f"{kind}: exit 2 without one printable error line")
        if rc == 0 and so:
            j = load_json_bytes(so)
            if j is None:
                t.note("wrong", f"{kind}: exit 0 without valid JSON")
                continue
            for k in j.get("kernels", []):
                if any(x < 0 for x in k.get("grid", []) + k.get("block", [])) or k.get("registers_per_thread", 0) < 0:
                    t.note("wrong", f"{kind}: a negative launch value in the table: {k.get('name', '')[:40]!r}")
            if expect_kernels is not None and j.get("totals", {}).get("kernels") != expect_kernels:
                t.note("wrong", f"{kind}: {j.get('totals', {}).get('kernels')} kernels, expected {expect_kernels}")
        if kind == "inject" and rc == 0:
            rc2, so2, se2 = r.run(["kernels", path], t, limit=20)
            if b"\x1b" in so2 + se2 or b"\r" in so2 or b"\n0 fake row" in so2 or b"\nwarning: injected" in so2:
                t.note("wrong", f"inject: a control character or a faked line reached the terminal: {so2[-120:]!r}")
        if kind == "bomb" and rc == 0:
            t.note("wrong", "a gzip bomb was accepted")
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/ci/bin/jouleprof")
    ap.add_argument("--fake-nvml", default=None, help="the fake libnvidia-ml (default: fake-nvml/libnvidia-ml.so.1 in the build tree of --cli)")
    ap.add_argument("--traced", default=None, help="the fake traced program (default: beside --cli in the build tree)")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", default="", help="comma-separated class numbers (1-based) to run")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    build = os.path.dirname(os.path.dirname(cli))
    fake = a.fake_nvml or os.path.join(build, "fake-nvml", "libnvidia-ml.so.1")
    fake = os.path.abspath(fake) if os.path.exists(fake) else None
    traced = a.traced or os.path.join(build, "tests", "trace", "jouleprof_fake_traced")
    traced = os.path.abspath(traced) if os.path.exists(traced) else None
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="jp-hardening-")
    r = Runner(cli, work)
    with open(os.path.join(work, "two.txt"), "w") as f:
        f.write("gpus 2\n")
    k = lambda n: max(4, int(n * a.scale))
    plan = [lambda: class_text(r, rng, k(60)), lambda: class_sizes(r, rng, k(120)), lambda: class_numbers(r, rng, k(60)),
            lambda: class_paths(r, rng, k(60)), lambda: class_imports(r, rng, k(200)), lambda: class_markers(r, rng, k(40)),
            lambda: class_refs(r, rng, k(48)), lambda: class_signals(r, rng, k(24)), lambda: class_sampler(r, rng, k(140)),
            lambda: class_sweep_options(r, rng, k(160)), lambda: class_sweep_signals(r, rng, k(24), fake),
            lambda: class_model_options(r, rng, k(180)), lambda: class_trace_options(r, rng, k(80), traced),
            lambda: class_restore(r, rng, k(60), fake), lambda: class_inputs(r, rng, k(150))]
    only = {int(x) for x in a.only.split(",") if x}
    started = time.time()
    classes = []
    for i, make in enumerate(plan, 1):
        if only and i not in only:
            continue
        # each class draws from its own stream, so --only reproduces the full run's inputs
        rng.seed(a.seed * 1000 + i)
        classes.append(make())
    took = time.time() - started
    shutil.rmtree(work, ignore_errors=True)
    print("| class | inputs | refused (exit ≠ 0) | aborts | hangs past SIGTERM + 1 s | wrong figures with exit 0 | exit 2 without one printable error line |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in classes:
        print(f"| {c.name} | {c.tried} | {c.refused} | {c.aborts} | {c.hangs} | {c.wrong} | {c.unclear} |")
    total = sum(c.tried for c in classes)
    print(f"\n{total} inputs, seed {a.seed}, scale {a.scale}, {took:.0f} s.")
    for c in classes:
        for e in c.examples:
            print(f"- {c.name.split(' (')[0]}: {e}")
    bad = sum(c.aborts + c.hangs + c.wrong + c.unclear for c in classes)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
