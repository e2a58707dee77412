#!/usr/bin/env python3
"""Table-driven CLI test (docs/cli.md): every row of cases.txt is `RC STREAM REGEX :: ARGS`;
jouleprof ARGS must exit with RC and STREAM (out, err or both) must match REGEX (Python re,
searched). ARGS are shell words with $DB (a store holding runs 1-3), $DIR (a scratch folder with
dvfs.csv, a simulated DVFS sweep for model/optimize) and
$FIX (tests/cli/fixtures) replaced. Every row expecting exit 1, 2 or 3 also checks the contract's form:
exactly one line on stderr starting "jouleprof: error: ".
Usage: run_cases.py JOULEPROF CASES.txt"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_dvfs import write_sim_dvfs_csv  # noqa: E402

cli, cases = os.path.abspath(sys.argv[1]), Path(sys.argv[2])
here = Path(__file__).parent


def run(args, d, env=None):
    e = dict(os.environ, JOULEPROF_DB=str(Path(d) / "default.db"), LC_ALL="C.UTF-8")
    e.pop("CUDA_VISIBLE_DEVICES", None)
    if env:
        e.update(env)
    return subprocess.run([cli, *args], cwd=d, capture_output=True, text=True, timeout=180, env=e,
                          stdin=subprocess.DEVNULL)


def setup(d):
    """A store with three runs: two tagged batch=1/batch=8 with decode tokens, one plain."""
    db = str(Path(d) / "runs.db")
    work = ("echo begin decode > $JOULEPROF_MARKERS; sleep 0.4; "
            "echo end decode > $JOULEPROF_MARKERS; echo count tokens 128 decode > $JOULEPROF_MARKERS")
    for tag in ("batch=1", "batch=8"):
        r = run(["measure", "--device", "sim", "--idle", "0", "--runs", "2", "-q", "--db", db, "--tag", tag,
                 "--", "sh", "-c", work], d)
        assert r.returncode == 0, r.stderr
    r = run(["measure", "--device", "sim", "--idle", "0", "-q", "--db", db, "--", "sleep", "0.2"], d)
    assert r.returncode == 0, r.stderr
    write_sim_dvfs_csv(Path(d) / "dvfs.csv")  # for model / optimize rows
    return db


failures = 0
total = 0
with tempfile.TemporaryDirectory(prefix="jouleprof-cli-") as d:
    db = setup(d)
    subst = {"$DB": db, "$DIR": d, "$FIX": str(here / "fixtures")}
    for lineno, line in enumerate(cases.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        head, _, argtext = line.partition(" :: ")
        rc_s, stream, pattern = head.split(maxsplit=2)
        words = shlex.split(argtext)
        for k, v in subst.items():
            words = [w.replace(k, v) for w in words]
        total += 1
        r = run(words, d)
        text = {"out": r.stdout, "err": r.stderr, "both": r.stdout + r.stderr}[stream]
        problems = []
        if r.returncode != int(rc_s):
            problems.append(f"exit {r.returncode}, expected {rc_s}")
        if not re.search(pattern, text, re.M):
            problems.append(f"{stream} does not match /{pattern}/")
        if int(rc_s) in (1, 2, 3) and r.returncode == int(rc_s):
            lines = [x for x in r.stderr.splitlines() if x.startswith("jouleprof: error: ")]
            if len(lines) != 1:
                problems.append(f"expected one 'jouleprof: error:' line on stderr, got {len(lines)}")
        if problems:
            failures += 1
            print(f"FAIL {cases.name}:{lineno}: jouleprof {argtext}\n  " + "; ".join(problems) +
                  f"\n  stdout: {r.stdout[-600:]!r}\n  stderr: {r.stderr[-600:]!r}")
print(f"{total - failures}/{total} CLI cases pass")
sys.exit(1 if failures else 0)
