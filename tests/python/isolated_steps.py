"""Factories for replay_step_isolated's tests (tests/python/test_replay.py): module-level, so a
"spawn" child imports them by name. Each builds a graph on the fake CUDA driver (fakes/cuda) in the
child, as a program's factory would build its model and capture its step."""
import ctypes
import os


class FakeGraph:
    """A graph of the fake driver, as a captured torch.cuda.CUDAGraph offers it (raw_cuda_graph)."""

    def __init__(self, spec: str):
        lib = ctypes.CDLL(os.environ["JOULEPROF_TEST_FAKE_CUDA"])
        lib.fakecuda_build_graph.restype = ctypes.c_void_p
        lib.fakecuda_build_graph.argtypes = [ctypes.c_char_p]
        self.handle = lib.fakecuda_build_graph(spec.encode())

    def raw_cuda_graph(self) -> int:
        return self.handle


def fake_step(spec: str) -> FakeGraph:
    return FakeGraph(spec)


def plain_step(x):
    """A step that is a plain function (captured with torch in the child)."""
    return lambda: x


def failing_factory():
    raise ValueError("the model's weights are missing\nsecond line")
