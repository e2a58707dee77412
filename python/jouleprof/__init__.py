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
``jouleprof measure`` (docs/python.md).
"""

from ._jouleprof import __version__
from .errors import (GpuLostError, GpuNotFoundError, InvalidArgumentError, JouleprofError, NoGpuError,
                     NotFoundError, OpenWindowsError, StoreError, VendorError, WindowError)
from .monitor import Measurement, Monitor, WindowResult
from . import markers, store

__all__ = [
    "Monitor", "WindowResult", "Measurement", "markers", "store", "__version__",
    "JouleprofError", "NoGpuError", "GpuNotFoundError", "GpuLostError", "WindowError", "OpenWindowsError",
    "InvalidArgumentError", "NotFoundError", "StoreError", "VendorError",
]
