"""jouleprof.trace: pause/resume `jouleprof trace` from inside the program. Without the tracer
every call is a no-op returning False; with the injection library (the build's, loaded before
CUDA starts: no GPU here) the calls reach its C API and a pause is held until CUDA starts."""

import glob
import os
import subprocess
import sys

import pytest


def _inject_lib():
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        found = glob.glob(os.path.join(os.path.dirname(entry.rstrip("/")), "lib", "libjouleprof_inject.so"))
        if found:
            return found[0]
    return None


def _clean_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("JOULEPROF_TRACE_DIR", "CUDA_INJECTION64_PATH", "JOULEPROF_INJECT_LIB")}


CALLS = ("from jouleprof import trace\n"
         "r0 = trace.recording()\n"
         "with trace.paused() as p:\n"
         "    inside = trace.recording()\n"
         "print(trace.available(), r0, trace.pause(), trace.recording(), trace.resume(), trace.recording(), p, inside)\n")


def test_without_the_tracer_every_call_is_a_no_op_returning_false(monkeypatch):
    for k in ("JOULEPROF_TRACE_DIR", "CUDA_INJECTION64_PATH", "JOULEPROF_INJECT_LIB"):
        monkeypatch.delenv(k, raising=False)
    from jouleprof import trace
    assert trace.available() is False
    assert trace.pause() is False
    assert trace.resume() is False
    assert trace.recording() is False
    with trace.paused() as p:
        assert p is False


def test_a_library_path_that_does_not_load_is_a_no_op(tmp_path):
    env = {**_clean_env(), "JOULEPROF_TRACE_DIR": str(tmp_path), "CUDA_INJECTION64_PATH": str(tmp_path / "missing.so")}
    p = subprocess_ok(CALLS, env)
    assert p.stdout.split() == ["False"] * 8


def test_the_injection_librarys_c_api_is_reached(tmp_path):
    lib = _inject_lib()
    if lib is None:
        pytest.skip("libjouleprof_inject.so not in the build tree")
    env = {**_clean_env(), "JOULEPROF_TRACE_DIR": str(tmp_path), "CUDA_INJECTION64_PATH": lib}
    p = subprocess_ok(CALLS, env)
    # available, recording, pause, recording while paused, resume, recording, paused() block, inside it
    assert p.stdout.split() == ["True", "True", "True", "False", "True", "True", "True", "False"]
    # Not under jouleprof trace (no trace directory): the same library answers no-op.
    env.pop("JOULEPROF_TRACE_DIR")
    assert subprocess_ok(CALLS, env).stdout.split() == ["False"] * 8


def subprocess_ok(code, env):
    """Runs code in a fresh interpreter with exactly `env` (the library is loaded at most once per process)."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p
