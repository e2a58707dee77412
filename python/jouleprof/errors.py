"""Typed exceptions of the jouleprof package. Every one derives from JouleprofError."""


class JouleprofError(Exception):
    """Base class of every jouleprof error."""


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
