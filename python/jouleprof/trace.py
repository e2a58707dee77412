"""Pausing ``jouleprof trace`` from inside the traced program (docs/trace.md, "Pausing from
inside the program").

Under ``jouleprof trace`` the CUPTI injection library is loaded into the process; these functions
call its C API (``jouleprof_trace_pause`` / ``_resume`` / ``_recording``). While paused it keeps
no kernel, copy or memset records, no launch records or anchors, and no NVTX ranges; the paused
time is written to the trace and the analysis works over the recorded time only.

    from jouleprof import trace
    warm_up(model)                      # compile, CUDA graph capture
    trace.pause()
    ...
    with trace.paused():                # this block is not recorded
        evaluate(model)

Outside ``jouleprof trace`` (or in a forked child of a traced process, or with a CUPTI that cannot
switch records off) every function is a no-op that returns False, never an exception: the
instrumented program runs unchanged anywhere. Calls may come from any thread.
"""

import contextlib
import ctypes
import os
import threading

__all__ = ["pause", "resume", "recording", "paused", "available"]

_DIR_ENV = "JOULEPROF_TRACE_DIR"
_lock = threading.Lock()
_lib = None


def _library():
    """The injection library's handle, or None when this process is not under ``jouleprof trace``."""
    global _lib
    if _lib is not None:
        return _lib
    if not os.environ.get(_DIR_ENV):
        return None
    path = os.environ.get("CUDA_INJECTION64_PATH") or os.environ.get("JOULEPROF_INJECT_LIB")
    if not path:
        return None
    with _lock:
        if _lib is not None:
            return _lib
        try:  # already loaded by CUDA (the usual case: the program has used the GPU)
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        except OSError:
            try:  # before CUDA starts: load it now, CUDA's own dlopen of that path finds this copy
                lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError:
                return None
        try:
            for name in ("jouleprof_trace_pause", "jouleprof_trace_resume", "jouleprof_trace_recording"):
                getattr(lib, name).restype = ctypes.c_int
                getattr(lib, name).argtypes = []
        except AttributeError:  # an injection library from before the pause API
            return None
        _lib = lib
        return lib


def available():
    """True when this process is traced by ``jouleprof trace`` and can be paused."""
    lib = _library()
    return lib is not None and lib.jouleprof_trace_recording() >= 0


def pause():
    """Stops recording kernels and NVTX ranges until :func:`resume`. True when this process's
    trace is paused now; False when not under ``jouleprof trace`` (nothing done)."""
    lib = _library()
    return lib is not None and lib.jouleprof_trace_pause() == 1


def resume():
    """Records again what was recorded before :func:`pause` (in sampled mode, the duty cycle's
    current phase). True when this process's trace records now; False when not traced."""
    lib = _library()
    return lib is not None and lib.jouleprof_trace_resume() == 1


def recording():
    """True when this process is traced and not paused; False when paused or not traced."""
    lib = _library()
    return lib is not None and lib.jouleprof_trace_recording() == 1


@contextlib.contextmanager
def paused():
    """Pauses the trace for a ``with`` block and resumes it after, unless it was paused already.
    Yields whether the block runs paused (False when not under ``jouleprof trace``)."""
    lib = _library()
    state = lib.jouleprof_trace_recording() if lib is not None else -1
    now_paused = state == 1 and lib.jouleprof_trace_pause() == 1
    try:
        yield now_paused or state == 0
    finally:
        if now_paused:
            lib.jouleprof_trace_resume()
