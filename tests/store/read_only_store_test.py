#!/usr/bin/env python3
"""A read-only run store in a read-only folder is readable (issue 22).

  read_only_store_test.py JOULEPROF_CLI

Three stores, each file 0444 in a folder 0555, read by an unprivileged user (root ignores file
permissions: as root the reads run through setpriv or runuser as `nobody`; as another user, as
that user):
  clean/   a store whose writer closed it: `runs list` and `runs show` list its run;
  wal/     a copy taken while a reader held a snapshot, so the second run is only in the -wal
           (with its -shm): both runs are listed (opened immutable, SQLite would skip the -wal);
  no-shm/  the same without the -shm, which cannot be created there: a one-line error, exit ≠ 0.
No file in those folders may change. Exit 77 (skipped) only when running as root with no way to
drop privileges.
"""
import hashlib
import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def as_user_prefix():
    """The command prefix that runs a program without root's privileges, or None."""
    if os.geteuid() != 0:
        return []
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    if shutil.which("setpriv"):
        prefix = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    elif shutil.which("runuser"):
        prefix = ["runuser", "-u", "nobody", "--"]
    else:
        return None
    r = subprocess.run(prefix + ["id", "-u"], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() == "0":
        return None
    return prefix


def digest(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def main():
    cli = os.path.abspath(sys.argv[1])
    prefix = as_user_prefix()
    if prefix is None:
        print("skipped: running as root and cannot drop privileges (no nobody user, setpriv or runuser)")
        return 77
    work = tempfile.mkdtemp(prefix="jouleprof-ro-")
    os.chmod(work, 0o755)
    try:
        return run(cli, prefix, work)
    finally:
        for root, dirs, _ in os.walk(work):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(work, ignore_errors=True)


def run(cli, prefix, work):
    env = dict(os.environ, HOME=work, TMPDIR=work)
    env.pop("JOULEPROF_DB", None)
    # The unprivileged user may not reach the build tree (e.g. under /root): run a copy then.
    if prefix and subprocess.run(prefix + [cli, "--version"], capture_output=True, env=env).returncode != 0:
        shutil.copy(cli, os.path.join(work, "jouleprof"))
        cli = os.path.join(work, "jouleprof")
        os.chmod(cli, 0o755)

    def measure(db, tag):
        subprocess.run([cli, "measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-cpu", "--db", db, "--tag",
                        tag, "--", "true"], env=env, check=True, capture_output=True)

    src = os.path.join(work, "src")
    os.makedirs(src)
    db = os.path.join(src, "runs.db")
    measure(db, "who=first")
    clean = os.path.join(work, "clean")
    os.makedirs(clean)
    shutil.copy(db, os.path.join(clean, "runs.db"))
    # A reader's snapshot keeps the second run out of the main file: it stays in the -wal.
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM runs").fetchall()
    measure(db, "who=second")
    wal, no_shm = os.path.join(work, "wal"), os.path.join(work, "no-shm")
    os.makedirs(wal)
    os.makedirs(no_shm)
    for suffix in ("", "-wal", "-shm"):
        shutil.copy(db + suffix, os.path.join(wal, "runs.db" + suffix))
    for suffix in ("", "-wal"):
        shutil.copy(db + suffix, os.path.join(no_shm, "runs.db" + suffix))
    reader.execute("COMMIT")
    reader.close()
    check(os.path.getsize(os.path.join(wal, "runs.db-wal")) > 0, "the wal/ copy holds a non-empty -wal")

    before = {}
    for d in (clean, wal, no_shm):
        for name in os.listdir(d):
            os.chmod(os.path.join(d, name), 0o444)
        os.chmod(d, 0o555)
        before[d] = digest(d)

    def jp(*args):
        r = subprocess.run(prefix + [cli] + list(args), capture_output=True, env=env, cwd=work)
        return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")

    who = "nobody" if prefix else "uid " + str(os.geteuid())
    rc, out, err = jp("runs", "list", "--db", os.path.join(clean, "runs.db"))
    check(rc == 0 and "who=first" in out, f"clean/: runs list as {who} exits 0 and lists the run (rc {rc}: {err.strip()})")
    rc, out, err = jp("runs", "show", "last", "--db", os.path.join(clean, "runs.db"), "--json", "-")
    try:
        shown = json.loads(out) if rc == 0 else None
    except ValueError:
        shown = None
    check(isinstance(shown, list) and len(shown) == 1 and shown[0].get("status") is not None,
          f"clean/: runs show last --json - exits 0 with the run (rc {rc}: {err.strip()})")
    rc, out, err = jp("runs", "list", "--db", os.path.join(wal, "runs.db"), "--json", "-")
    try:
        listed = json.loads(out) if rc == 0 else None
    except ValueError:
        listed = None
    runs = listed
    check(isinstance(runs, list) and len(runs) == 2,
          f"wal/: runs list sees both runs, the second only in the -wal (rc {rc}, {len(runs) if isinstance(runs, list) else '-'} runs: {err.strip()})")
    rc, out, err = jp("runs", "show", "2", "--db", os.path.join(wal, "runs.db"))
    check(rc == 0 and "who=second" in out, f"wal/: runs show 2 shows the run in the -wal (rc {rc}: {err.strip()})")
    rc, out, err = jp("runs", "list", "--db", os.path.join(no_shm, "runs.db"))
    lines = err.strip().splitlines()
    check(rc != 0 and len(lines) == 1 and lines[0].startswith("jouleprof: error:") and "-wal" in lines[0],
          f"no-shm/: a one-line error naming the -wal, exit ≠ 0 (rc {rc}: {err.strip()})")
    for d in (clean, wal, no_shm):
        check(digest(d) == before[d], f"{os.path.basename(d)}/: no file changed or added")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
