import os
import shutil
import subprocess
import sys

import pytest

import jouleprof


@pytest.fixture
def sim():
    """A Monitor on the simulated GPU with a short idle baseline (75 W idle)."""
    mon = jouleprof.Monitor(device="sim", idle_s=0.5, period_ms=50)
    yield mon
    if not mon._c.finished:
        mon.finish(close_open=True)


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "runs.db")


def cli(*args, env=None, check=True):
    """Runs the C++ CLI (path from CTest)."""
    exe = os.environ.get("JOULEPROF_CLI") or shutil.which("jouleprof")
    if not exe:
        pytest.fail("JOULEPROF_CLI is not set (run through ctest)")
    p = subprocess.run([exe, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and p.returncode != 0:
        raise AssertionError(f"jouleprof {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def python(code, env=None):
    """Runs code in a fresh interpreter (for environment set before the library loads)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
