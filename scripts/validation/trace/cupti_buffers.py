"""CUPTI's activity-buffer callbacks as ctypes functions, for the probes that drive libcupti from
Python (eager_ops.py, anchor_reattach.py); no torch, no jouleprof."""
import ctypes

_KEEP = []  # the buffers handed to CUPTI and the callbacks' ctypes objects: alive for the process

REQUESTED_T = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                               ctypes.POINTER(ctypes.c_size_t))
COMPLETED_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


def buffer_callbacks(size, completed=lambda *a: None):
    """(requested, completed) for cuptiActivityRegisterCallbacks: each request gets a new buffer of
    `size` bytes; `completed(ctx, stream, buffer, size, valid_size)` reads the records (by default
    they are not read: only the cost of producing them counts)."""

    def requested(buf, size_out, max_records):
        b = ctypes.create_string_buffer(size)
        _KEEP.append(b)
        buf[0] = ctypes.cast(b, ctypes.c_void_p).value
        size_out[0] = size
        max_records[0] = 0

    cbs = (REQUESTED_T(requested), COMPLETED_T(completed))
    _KEEP.append(cbs)
    return cbs
