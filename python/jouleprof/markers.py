"""Phase markers for code run under ``jouleprof measure`` (docs/markers.md).

``jouleprof measure`` names a FIFO in $JOULEPROF_MARKERS; these functions write ``begin``/``end``/
``count`` lines to it with the exact wall-clock time. Outside ``jouleprof measure`` they do
nothing, so instrumented code runs unchanged anywhere.

    from jouleprof import markers
    with markers.phase("prefill", tokens=512):
        model(prompt)
"""

import contextlib
import os
import threading
import time

from .errors import InvalidArgumentError

ENV = "JOULEPROF_MARKERS"
_lock = threading.Lock()
_fifo = None


def enabled():
    """True when running under ``jouleprof measure``."""
    return bool(os.environ.get(ENV))


def _check_name(what, name):
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise InvalidArgumentError(f"{what} {name!r}: a name is one word without spaces")


def _write(line):
    global _fifo
    path = os.environ.get(ENV)
    if not path:
        return
    with _lock:
        if _fifo is None:
            _fifo = open(path, "w", buffering=1)
        _fifo.write(line + "\n")


def begin(name):
    _check_name("phase", name)
    _write(f"begin {name} t={time.time():.6f}")


def end(name):
    _check_name("phase", name)
    _write(f"end {name} t={time.time():.6f}")


def count(key, value, phase=None):
    """Attaches a count (tokens=128) to a phase (default: the run)."""
    _check_name("count", key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"count {key} must be a number, not {value!r}")
    if phase is not None:
        _check_name("phase", phase)
    _write(f"count {key} {value}" + (f" {phase}" if phase else ""))


@contextlib.contextmanager
def phase(name, **counts):
    """``with markers.phase("decode", tokens=128):`` — begin and end around the block."""
    begin(name)
    try:
        yield
    finally:
        end(name)
        for k, v in counts.items():
            count(k, v, name)
