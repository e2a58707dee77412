"""NVTX ranges on a PyTorch model's modules, and prefill/decode phases with token counts, for
`jouleprof trace` (docs/trace.md, "PyTorch").

    import jouleprof.torch as jt
    handle = jt.annotate(model)          # forward pre/post hooks on named_modules, depth 4
    model.generate(**inputs)             # phases "prefill" / "decode" found from input lengths
    handle.finish()                      # closes the open phase (also done by atexit)

Run under `jouleprof trace -- python script.py`: the ranges give the per-layer, per-component
table (attention, MLP, norms, embedding, LM head); the phases become measured windows with
token counts, so J/token per phase. Without jouleprof the hooks cost a little and do nothing
else. Pure Python: only torch.cuda.nvtx and the marker FIFO ($JOULEPROF_MARKERS).
"""

from __future__ import annotations

import atexit
import contextlib
import os
from typing import Callable, Iterator, List, Optional

import torch

__all__ = ["annotate", "Annotation", "phase", "count", "MarkerWriter", "replay_step", "replay_step_isolated"]


class MarkerWriter:
    """Lines of the marker protocol (docs/markers.md) to the FIFO jouleprof created, if any."""

    def __init__(self, path: Optional[str] = None):
        path = path if path is not None else os.environ.get("JOULEPROF_MARKERS")
        self._f = open(path, "w", buffering=1) if path else None  # line-buffered

    @property
    def active(self) -> bool:
        return self._f is not None

    def write(self, line: str) -> None:
        if self._f is not None:
            self._f.write(line + "\n")


_markers: Optional[MarkerWriter] = None


def _writer() -> MarkerWriter:
    global _markers
    if _markers is None:
        _markers = MarkerWriter()
    return _markers


@contextlib.contextmanager
def phase(name: str, tokens: Optional[int] = None) -> Iterator[None]:
    """A named phase: an NVTX range (start/end, so it spans threads) and a measured window."""
    rid = torch.cuda.nvtx.range_start(name)
    _writer().write(f"begin {name}")
    try:
        yield
    finally:
        torch.cuda.nvtx.range_end(rid)
        _writer().write(f"end {name}")
        if tokens is not None:
            count("tokens", tokens, name)


def count(key: str, value: float, window: str = "") -> None:
    """Attach a count (e.g. tokens) to the phase window `window` (default: the run)."""
    _writer().write(f"count {key} {value} {window}".rstrip())


def _token_shape(args, kwargs):
    ids = kwargs.get("input_ids") if kwargs else None
    if ids is None and args and torch.is_tensor(args[0]):
        ids = args[0]
    if ids is None and kwargs and torch.is_tensor(kwargs.get("inputs_embeds")):
        e = kwargs["inputs_embeds"]
        return e.shape[0], e.shape[1]
    if ids is None or ids.dim() < 2:
        return None
    return ids.shape[0], ids.shape[1]


class Annotation:
    """Hooks added by annotate(); remove() takes them off, finish() closes the open phase."""

    def __init__(self, model: torch.nn.Module, depth: int, include: Optional[Callable[[str, torch.nn.Module], bool]],
                 phases: bool):
        self._handles: List = []
        self._phase: Optional[str] = None
        self._tokens = {"prefill": 0, "decode": 0}
        self._markers = _writer()
        self._phases = phases
        push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop

        def pre(name):
            def hook(module, args):
                push(name)
            return hook

        def post(module, args, output):
            pop()

        for name, module in model.named_modules():
            if not name:
                continue
            if depth > 0 and name.count(".") + 1 > depth:
                continue
            if include is not None and not include(name, module):
                continue
            self._handles.append(module.register_forward_pre_hook(pre(name)))
            self._handles.append(module.register_forward_hook(post))
        if phases:
            # The whole forward is one range named by its phase: paths read "decode/model.layers.3/mlp".
            self._handles.append(model.register_forward_pre_hook(self._root_pre, with_kwargs=True))
            self._handles.append(model.register_forward_hook(self._root_post))
        atexit.register(self.finish)

    def _switch(self, new: str) -> None:
        if self._phase == new:
            return
        self._close()
        self._phase = new
        self._markers.write(f"begin {new}")

    def _close(self) -> None:
        if self._phase is None:
            return
        # The window ends when the GPU has finished the phase's work, not when it was queued.
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        self._markers.write(f"end {self._phase}")
        n = self._tokens[self._phase]
        if n:
            self._markers.write(f"count tokens {n} {self._phase}")
        self._tokens[self._phase] = 0
        self._phase = None

    def _root_pre(self, module, args, kwargs):
        shape = _token_shape(args, kwargs)
        kind = "decode" if shape is not None and shape[1] == 1 else "prefill"
        if shape is not None:
            self._tokens[kind] += shape[0] * (1 if kind == "decode" else shape[1])
        self._switch(kind)
        torch.cuda.nvtx.range_push(kind)

    def _root_post(self, module, args, output):
        torch.cuda.nvtx.range_pop()

    def finish(self) -> None:
        """Closes the open prefill/decode window (call after generate())."""
        self._close()

    def remove(self) -> None:
        self.finish()
        for h in self._handles:
            h.remove()
        self._handles.clear()


def annotate(model: torch.nn.Module, depth: int = 4,
             include: Optional[Callable[[str, torch.nn.Module], bool]] = None,
             phases: bool = True) -> Annotation:
    """NVTX ranges around the forward of every module of `model` whose dotted name has at most
    `depth` parts (0: all; 4 reaches model.layers.N.self_attn / .mlp / .input_layernorm), named
    by that name; `include(name, module)` filters further. With `phases`, each forward of the
    model is a "prefill" (input length > 1) or "decode" (length 1) range, and consecutive
    forwards of one kind form one measured window with its token count.
    """
    return Annotation(model, depth, include, phases)


def replay_step(fn, *args, **options):
    """Captures one call of ``fn(*args)`` as a CUDA graph and replays each of its kernels exactly,
    alone, measured with the GPU's power sensor (jouleprof.replay.replay_step; docs/replay.md)."""
    from .replay import replay_step as _replay_step
    return _replay_step(fn, *args, **options)


def replay_step_isolated(factory, *factory_args, **options):
    """replay_step in a child process built by ``factory(*factory_args)``, restarted past each
    kernel whose replay faults (jouleprof.replay.replay_step_isolated; docs/replay.md)."""
    from .replay import replay_step_isolated as _isolated
    return _isolated(factory, *factory_args, **options)
