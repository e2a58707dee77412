#!/usr/bin/env python3
"""`bench llm --json -` on a GPU runs jouleprof-llm as a child: stdout must carry the JSON only,
the child's table must go to stderr. A stand-in for jouleprof-llm ($JOULEPROF_LLM) prints a table
on stdout and writes, to the file named by --json, a result the simulated benchmark produced.
Usage: check_bench_child.py JOULEPROF"""
import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

cli = os.path.abspath(sys.argv[1])
with tempfile.TemporaryDirectory(prefix="jouleprof-bench-child-") as d:
    env = dict(os.environ, JOULEPROF_DB=str(Path(d) / "runs.db"))
    sim = Path(d) / "sim.json"
    r = subprocess.run([cli, "bench", "llm", "--device", "sim", "--model", "tiny", "--prompt", "8", "--gen", "4",
                        "--min-seconds", "0.05", "--iso-seconds", "0.05", "--idle", "0", "--no-components", "-q",
                        "--no-store", "--json", str(sim), "--json-timelines"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"simulated bench failed: {r.stderr}")
    fake = Path(d) / "jouleprof-llm"
    fake.write_text(f"""#!/bin/sh
# stand-in for jouleprof-llm: the table on stdout, the result into --json FILE
out=""
while [ $# -gt 0 ]; do [ "$1" = "--json" ] && out="$2"; shift; done
echo "TABLE FROM jouleprof-llm"
cp {sim} "$out"
""")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env["JOULEPROF_LLM"] = str(fake)
    r = subprocess.run([cli, "bench", "llm", "--model", "tiny", "--no-store", "--json", "-"], env=env,
                       capture_output=True, text=True)
    problems = []
    if r.returncode != 0:
        problems.append(f"exit {r.returncode}: {r.stderr.strip()}")
    try:
        doc = json.loads(r.stdout)
        if doc.get("command", [])[:3] != ["jouleprof", "bench", "llm"]:
            problems.append(f"command is {doc.get('command')}")
    except json.JSONDecodeError as e:
        problems.append(f"stdout is not one JSON document ({e}): {r.stdout[:200]!r}")
    if "TABLE FROM jouleprof-llm" not in r.stderr:
        problems.append("the child's table is not on stderr")
    # A failing or signalled engine: its status is ours, with one error line (issue 35: exit 1, no line).
    for body, want_rc, want in (("exit 1", 1, "failed (exit 1)"), ("kill -9 $$", 137, "killed by signal 9")):
        fake.write_text(f"#!/bin/sh\n{body}\n")
        r = subprocess.run([cli, "bench", "llm", "--model", "tiny", "--no-store", "-q"], env=env,
                           capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        if r.returncode != want_rc or len(lines) != 1 or not lines[0].startswith("jouleprof: error: ") or want not in lines[0]:
            problems.append(f"engine '{body}': exit {r.returncode}, stderr {r.stderr!r}")
    for p in problems:
        print("FAIL", p)
    print("bench llm --json - with a child: " + ("ok" if not problems else "FAILED"))
    sys.exit(1 if problems else 0)
