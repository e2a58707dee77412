"""Typed exceptions of the jouleprof package. Every one derives from JouleprofError."""


import re

# The C++ library words its hints for the command line; in Python they name Monitor's arguments.
_CLI_TO_PYTHON = [
    (re.compile(r"--device (auto|nvml|sim)\b"), lambda m: f'device="{m.group(1)}"'),
    (re.compile(r"--device\b"), lambda m: "device="),
    (re.compile(r"--gpus\b"), lambda m: "gpus="),
    (re.compile(r"--idle\b"), lambda m: "idle_s="),
    (re.compile(r"--period-ms\b"), lambda m: "period_ms="),
    (re.compile(r"--sim-scenario\b"), lambda m: "sim_scenario="),
    (re.compile(r"--counter-min-window\b"), lambda m: "counter_min_window_s="),
    (re.compile(r"--carbon-intensity\b"), lambda m: "carbon_intensity="),
    (re.compile(r"--carbon-source\b"), lambda m: "carbon_source="),
    (re.compile(r"--price\b"), lambda m: "price="),
]


def python_words(message):
    """A library message with its command-line flags named as Monitor's arguments."""
    if not isinstance(message, str):
        return message
    for pattern, repl in _CLI_TO_PYTHON:
        message = pattern.sub(repl, message)
    return message.replace('use device="sim"', 'use Monitor(device="sim")')


class JouleprofError(Exception):
    """Base class of every jouleprof error."""

    def __init__(self, message="", *args):
        super().__init__(python_words(message), *args)


class NoGpuError(JouleprofError):
    """No NVIDIA driver or GPU here (use ``Monitor(device="sim")`` for the simulated GPU)."""


class GpuNotFoundError(JouleprofError, LookupError):
    """A GPU index or UUID that this machine does not have."""


class GpuLostError(JouleprofError):
    """A GPU stopped answering during the measurement."""


class WindowError(JouleprofError):
    """Misuse of the window API: ending a window that is not open, windows still open at
    ``finish()``, using a finished monitor."""


class OpenWindowsError(WindowError):
    """``finish()`` found windows still open. They were closed, marked incomplete and the
    measurement was recorded anyway: ``.measurement`` holds it and ``.run_id`` its store id."""

    def __init__(self, message, measurement=None, run_id=None):
        super().__init__(message)
        self.measurement = measurement
        self.run_id = run_id


class InvalidArgumentError(JouleprofError, ValueError):
    """A bad argument or input file (names the argument and the allowed range)."""


class NotFoundError(JouleprofError, LookupError):
    """A file, run or store that does not exist."""


class StoreError(JouleprofError):
    """The run store refused (I/O, not a jouleprof database, a newer schema)."""


class VendorError(JouleprofError):
    """A vendor library (NVML) call failed; the message holds the call and the vendor's text."""


_BY_KIND = {
    "unavailable": NoGpuError,
    "not present": GpuNotFoundError,
    "not found": NotFoundError,
    "invalid argument": InvalidArgumentError,
    "parse error": InvalidArgumentError,
    "device lost": GpuLostError,
    "vendor library error": VendorError,
    "I/O error": StoreError,
    "window": WindowError,
}


def exception_for(kind):
    """The exception class for a C++ error kind (used by the extension module)."""
    return _BY_KIND.get(kind, JouleprofError)
