#!/usr/bin/env python3
"""Issue 35's two high journal findings, reproduced against any jouleprof CLI with the fake NVML
of a build tree (docs/validation/hardening.md, "Issue 35's findings on bcdf828"):

  A. a GPU left at 990 MHz locked and 300 W by a killed sweep, its journal beside a bad *.json:
     `restore` and the restore at the start of another command must restore it;
  B. a journal naming a library (`"library": "/path/libevil.so"`) must not be loaded by the
     start-of-command restore (the library's constructor leaves a mark file).

  scripts/issue35-journal-repro.py CLI FAKE_NVML
Prints one line per check (`ok` / `FAIL`) and exits 1 when any fails."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

cli, fake = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CHANGED = "0 gpu_locked 1 990 990 mem_locked 0 0 0 app 1980 2619 power_mw 300000 persistence 1\n"
BAD = {"garbage": "}{ not json", "empty": "", "array": "[1, 2, 3]", "version2": None}


def journal(uuid, library):
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    return {"journal_version": 1, "host": os.uname().nodename, "boot_id": boot, "pid": 999999999, "pid_start_ticks": 1,
            "created_utc": "2026-01-01T00:00:00Z", "backend": "nvml", "library": library, "uuid": uuid, "name": "x",
            "index": 0, "original": {"gpu_locked_clocks": None, "mem_locked_clocks": None, "app_gpu_clock_mhz": 1410,
                                     "app_mem_clock_mhz": 2619, "power_limit_mw": 650000, "persistence": True}}


def setup(work, bad, library=None):
    d = os.path.join(work, "journals")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    state = os.path.join(work, "state.txt")
    with open(state, "w") as f:
        f.write(CHANGED)
    env = dict(os.environ, JOULEPROF_NVML_LIB=fake, JOULEPROF_FAKE_NVML_STATE=state,
               JOULEPROF_FAKE_NVML_SCENARIO=os.path.join(work, "one.txt"), JOULEPROF_CONTROL_DIR=d,
               JOULEPROF_DB=os.path.join(work, "runs.db"))
    out = subprocess.run([cli, "sweep", "--device", "nvml", "--discover", "--json", "-", "-q"], env=env, capture_output=True)
    uuid = json.loads(out.stdout)["gpus"][0]["uuid"]
    j = journal(uuid, library or fake)
    with open(os.path.join(d, uuid + ".json"), "w") as f:
        json.dump(j, f)
    if bad:
        text = BAD[bad] if BAD[bad] is not None else json.dumps(dict(j, journal_version=2))
        with open(os.path.join(d, bad + ".json"), "w") as f:
            f.write(text)
    return env, state


def restored(state):
    """The fake GPU is back at the journal's original: unlocked, application clock 1410, 650 W."""
    with open(state) as f:
        w = f.read().split()
    return w[w.index("gpu_locked") + 1] == "0" and w[w.index("app") + 1] == "1410" and w[w.index("power_mw") + 1] == "650000"


def main():
    failures = 0
    work = tempfile.mkdtemp(prefix="jp-i35-journal-")
    with open(os.path.join(work, "one.txt"), "w") as f:
        f.write("gpus 1\n")

    def report(ok, what):
        nonlocal failures
        failures += 0 if ok else 1
        print(("ok   " if ok else "FAIL ") + what)

    for bad in BAD:
        env, state = setup(work, bad)
        r = subprocess.run([cli, "restore"], env=env, capture_output=True, text=True)
        report(restored(state), f"A restore, {bad}.json beside the journal: GPU restored (exit {r.returncode}; "
                                f"{r.stderr.strip().splitlines()[-1][:120] if r.stderr.strip() else ''})")
        env, state = setup(work, bad)
        r = subprocess.run([cli, "estimate", "--list-hw"], env=env, capture_output=True, text=True)
        notes = [x for x in r.stderr.splitlines() if x.startswith("jouleprof:")]
        report(restored(state), f"A start of `estimate --list-hw`, {bad}.json beside: GPU restored ({len(notes)} jouleprof lines)")

    mark = os.path.join(work, "evil-ran")
    src = os.path.join(work, "evil.c")
    evil = os.path.join(work, "libevil.so")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n__attribute__((constructor)) static void boom(void) { FILE* f = fopen("'
                + mark + '", "w"); if (f) fclose(f); }\n')
    if subprocess.run(["cc", "-shared", "-fPIC", "-o", evil, src]).returncode == 0:
        env, state = setup(work, None, library=evil)
        env.pop("JOULEPROF_NVML_LIB")  # the configured NVML is the default soname, absent here
        subprocess.run([cli, "estimate", "--list-hw"], env=env, capture_output=True, text=True)
        report(not os.path.exists(mark), "B start of `estimate --list-hw`: the journal's library was not loaded")
    else:
        print("skip B: no C compiler")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
