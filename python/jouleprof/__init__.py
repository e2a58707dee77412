"""jouleprof: energy of AI inference on GPUs, measured from inside Python.

    import jouleprof
    mon = jouleprof.Monitor(gpus=[0])          # device="sim" without a GPU
    mon.begin_window("prefill")
    ...
    r = mon.end_window("prefill")
    print(r.energy_j, r.method, r.uncertainty_j)
    with mon.window("decode", tokens=128) as w:
        ...
    print(w.result.per("tokens"), "J/token")
    mon.finish(store=True)

A binding of the C++ library: the same sampler, window energies and store as
``jouleprof measure`` (docs/python.md). ``jouleprof.torch`` (NVTX ranges for `jouleprof trace`)
and ``jouleprof.markers`` and ``jouleprof.trace`` (pause/resume ``jouleprof trace`` from inside the
program) are pure Python and import without the compiled extension.
"""

from .errors import (GpuLostError, GpuNotFoundError, InvalidArgumentError, JouleprofError, NoGpuError,
                     NotFoundError, OpenWindowsError, StoreError, VendorError, WindowError)
from . import markers, trace

__all__ = [
    "Monitor", "WindowResult", "Measurement", "markers", "trace", "store", "__version__",
    "JouleprofError", "NoGpuError", "GpuNotFoundError", "GpuLostError", "WindowError", "OpenWindowsError",
    "InvalidArgumentError", "NotFoundError", "StoreError", "VendorError",
]

try:
    from ._jouleprof import __version__
    from .monitor import Measurement, Monitor, WindowResult
    from . import store
except ImportError as _error:  # a source tree on PYTHONPATH: jouleprof.torch and markers still work
    _missing = _error

    def __getattr__(name):
        if name in ("__version__", "Monitor", "Measurement", "WindowResult", "store"):
            raise ImportError(f"jouleprof.{name} needs the compiled extension jouleprof._jouleprof ({_missing}); "
                              "install the package: pip install ./python (docs/python.md)")
        raise AttributeError(f"module 'jouleprof' has no attribute '{name}'")
