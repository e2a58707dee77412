"""Exact replay of a PyTorch step's own kernels (docs/replay.md, "Exact replay"), and the
prediction of a traced run from its kernels replayed by shape tier (``predict_trace``, the
library call behind ``jouleprof replay``).

    import jouleprof.torch as jt
    r = jt.replay_step(model, x)            # or a function: jt.replay_step(lambda: model(x))
    print(r.text())                          # per kernel: count, time and energy per call, ±
    t, e = r.predict(steps=100)              # 100 steps: seconds, joules
    r.save("exact.json")                     # rows for `jouleprof replay --exact exact.json`
    ExactReplay.load("exact.json").compare(r2)   # rows matched by id: repeatable? same board?

The step is run a few times (warm-up), captured as a CUDA graph in this process
(``torch.cuda.CUDAGraph(keep_graph=True)``), and the C++ library lists the graph's kernel,
memcpy and memset nodes, groups identical ones (function, launch configuration, argument bytes
with device pointers masked) and replays each group alone: a graph of copies of that node, with
its real arguments and the step's buffers still alive, measured in paced trials with the GPU's
power sensor. Where the step cannot be captured (a host synchronisation, a data-dependent shape)
the result says so in one line (``r.captured`` is False, ``r.reason``) and the step falls back to
the shape tiers: it is run once under torch.profiler with its input shapes and predicted as
``jouleprof replay`` predicts a trace (``r.tiers``, a TraceReplay whose rows name their tier;
``predict()`` then uses it). ``tier_options`` go to ``predict_trace`` (e.g. ``engine``: the
jouleprof-replay binary); ``fallback=False`` turns this off.
"""

from __future__ import annotations

import json as _json
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["replay_step", "replay_step_isolated", "ExactReplay", "predict_trace", "TraceReplay"]

_OPTION_KEYS = ("trials", "trial_s", "settle_s", "warmup_s", "ci_target", "long_trial_s", "row_cap_s", "max_trials",
                "coverage", "max_rows", "graph_ms", "measure_step", "rows", "sensor", "cuda_library")


class ExactReplay:
    """The exact replay of one step: rows (one per group of identical nodes), the whole graph's own
    figures (``step``), and the prediction of one step (Σ count × per-call figures)."""

    def __init__(self, captured: bool, reason: str = "", data: Optional[Dict[str, Any]] = None, graph=None,
                 output=None):
        self.captured = captured
        self.reason = reason
        self.data = data or {}
        self.graph = graph      # the torch.cuda.CUDAGraph (keeps the step's buffers alive); None from replay_step_isolated
        self.output = output    # what the captured step returned
        self.tiers: Optional["TraceReplay"] = None  # not captured: the step predicted from the shape tiers

    @property
    def rows(self) -> List[Dict[str, Any]]:
        return list(self.data.get("rows", []))

    @property
    def step(self) -> Dict[str, Any]:
        return dict(self.data.get("step", {}))

    @property
    def prediction(self) -> Dict[str, Any]:
        return dict(self.data.get("prediction", {}))

    @property
    def warnings(self) -> List[str]:
        return list(self.data.get("warnings", []))

    def predict(self, steps: int = 1, basis: Optional[str] = None) -> Tuple[float, float]:
        """(seconds, joules) of `steps` steps run back to back.

        basis "step": the whole captured graph replayed (its kernels among their neighbours, as the
        program runs them); "rows": Σ over rows of count × per call (each node alone). Default: "step"
        when the whole graph was measured, else "rows"."""
        if not self.captured:
            if self.tiers is None:
                from .errors import InvalidArgumentError
                raise InvalidArgumentError(f"predict: no prediction, {self.reason}")
            t, e = self.tiers.predict()
            return steps * t, steps * e
        if basis is None:
            basis = "step" if self.step.get("measured") else "rows"
        if basis == "step":
            s = self.step
            if not s.get("measured"):
                from .errors import InvalidArgumentError
                raise InvalidArgumentError(f"predict(basis='step'): the whole graph was not measured ({s.get('reason', 'measure_step off')})")
            return steps * s["time_s"], steps * s["energy_j"]
        if basis != "rows":
            from .errors import InvalidArgumentError
            raise InvalidArgumentError(f"predict: basis must be 'step' or 'rows', not {basis!r}")
        if not self.rows and not self.prediction.get("energy_j"):
            from .errors import InvalidArgumentError
            raise InvalidArgumentError("predict(basis='rows'): no row was replayed (rows=False, or every row failed)")
        p = self.prediction
        return steps * p.get("time_s", 0.0), steps * p.get("energy_j", 0.0)

    @classmethod
    def load(cls, path: str) -> "ExactReplay":
        """A replay saved with save() (a captured step's document; a step that was not captured
        comes back with its reason only)."""
        with open(path) as f:
            doc = _json.load(f)
        if doc.get("schema") != "jouleprof.exact_replay":
            from .errors import InvalidArgumentError
            raise InvalidArgumentError(f"ExactReplay.load: {path} is not an exact replay (schema {doc.get('schema')!r})")
        if doc.get("captured") is False:
            return cls(False, doc.get("reason", ""))
        return cls(True, "", doc)

    def compare(self, other: "ExactReplay", min_time_s: float = 10e-6, within: float = 0.02) -> Dict[str, Any]:
        """The rows of two replays of one step, matched by row id (stable across processes and
        captures): for the rows measured in both and at least ``min_time_s`` per call, each one's
        energy and time per call in ``other`` against this one, and how many agree within ``within``.
        ``same_board``: whether both ran on one GPU (their UUIDs; None when either lacks it). Replays
        on two boards of one model can differ by several percent (docs/validation/replay.md)."""
        mine = {x["id"]: x for x in self.rows if x.get("status") == "measured"}
        theirs = {x["id"]: x for x in other.rows if x.get("status") == "measured"}
        rows = []
        for rid, a in mine.items():
            b = theirs.get(rid)
            if b is None or a.get("time_s", 0) < min_time_s or not a.get("energy_per_call_j") or not a.get("time_s"):
                continue
            rows.append({"id": rid, "name": a["name"], "time_s": a["time_s"],
                         "energy_diff": b["energy_per_call_j"] / a["energy_per_call_j"] - 1, "time_diff": b["time_s"] / a["time_s"] - 1})
        rows.sort(key=lambda r: -abs(r["energy_diff"]))
        u, v = self.data.get("gpu_uuid"), other.data.get("gpu_uuid")
        return {"rows": rows, "compared": len(rows), "within": sum(abs(r["energy_diff"]) <= within for r in rows),
                "energy_max_abs": max((abs(r["energy_diff"]) for r in rows), default=None),
                "time_max_abs": max((abs(r["time_diff"]) for r in rows), default=None),
                "same_board": (u == v) if u and v else None}

    def save(self, path: str) -> None:
        doc = self.data
        if not self.captured:
            doc = {"schema": "jouleprof.exact_replay", "schema_version": 1, "captured": False, "reason": self.reason}
            if self.tiers is not None:
                doc["tier_prediction"] = self.tiers.prediction  # schema jouleprof.replay's prediction
        with open(path, "w") as f:
            _json.dump(doc, f, indent=1)

    def text(self, top: int = 15) -> str:
        if not self.captured:
            if self.tiers is None:
                return f"not captured: {self.reason}"
            return f"not captured: {self.reason}\npredicted from the shape tiers (jouleprof replay):\n{self.tiers.text}"
        p, s = self.prediction, self.step
        out = [f"exact replay on {self.data.get('gpu')}: {self.data.get('nodes')} nodes, {len(self.rows)} rows",
               f"one step (Σ rows): {p['time_s'] * 1e3:.4f} ms, {p['energy_j']:.4f} J ± {p['energy_half_width_j']:.4f} "
               f"(measured rows {100 * p['measured_share']:.1f}% of the energy, timed {100 * p['timed_share']:.1f}%)"]
        if s.get("measured"):
            out.append(f"the whole graph replayed: {s['time_s'] * 1e3:.4f} ms, {s['energy_j']:.4f} J at {s['power_w']:.1f} W")
            c = p.get("context")
            if c:
                out.append(f"context: the whole step {100 * (c['energy_factor'] - 1):+.1f}% energy, {100 * (c['time_factor'] - 1):+.1f}% "
                           "time against its nodes alone (predict() uses the step)")
        out.append(f"{'status':<12} {'count':>6} {'us/call':>10} {'W':>8} {'J':>10}  kernel")
        for r in self.rows[:top]:
            out.append(f"{r['status']:<12} {r['count']:>6} {r.get('time_s', 0) * 1e6:>10.2f} {r.get('power_w', 0):>8.1f} "
                       f"{r.get('energy_j', 0):>10.4f}  {r['name'][:80]}")
        out += [f"warning: {w}" for w in self.warnings]
        return "\n".join(out)

    def __repr__(self):
        if not self.captured:
            return f"<ExactReplay not captured: {self.reason}{'; shape tiers' if self.tiers else ''}>"
        t, e = self.predict()
        return f"<ExactReplay {len(self.rows)} rows: {t * 1e3:.3f} ms, {e:.4f} J per step>"


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def capture(fn: Callable, *args, warmup: int = 3):
    """Warms `fn(*args)` up on a side stream and captures one call as a CUDA graph that keeps its
    cudaGraph_t. Returns (graph, output); raises on a step that cannot be captured."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g):
        out = fn(*args)
    torch.cuda.synchronize()
    return g, out


def trace_step(fn: Callable, *args, path: str) -> None:
    """Runs ``fn(*args)`` once under torch.profiler (CPU and CUDA activity, input shapes) after one
    warm call, and writes the Kineto trace that ``jouleprof kernels`` / ``jouleprof replay`` read."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        fn(*args)
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)


def _tier_fallback(r: ExactReplay, fn: Callable, args, tier_options: Dict[str, Any], quiet: bool) -> None:
    """The step that could not be captured, traced once and predicted with the shape tiers; on
    failure the reason says why in the same line and r.tiers stays None."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="jouleprof-step-") as d:
        path = f"{d}/step.trace.json"
        try:
            trace_step(fn, *args, path=path)
            opts = {"store": False, **tier_options}
            r.tiers = predict_trace(path, quiet=True, **opts)
            r.reason += "; predicted from the shape tiers instead (each row names its tier)"
        except Exception as e:
            r.reason += f"; the shape-tier fallback failed too ({_first_line(e)})"


def replay_step(fn: Callable, *args, warmup: int = 3, json_path: Optional[str] = None, quiet: bool = False,
                fallback: bool = True, tier_options: Optional[Dict[str, Any]] = None, **options) -> ExactReplay:
    """Captures one call of ``fn(*args)`` and replays its kernels exactly (module docstring).

    options: trials (5), trial_s (0.2), settle_s (0.3), warmup_s (3: the whole graph replayed to a
    stable temperature first), ci_target (0.02), long_trial_s (1), row_cap_s (6), coverage (0.99 of
    the step's kernel time measured, longest first; the rest timed, at the measured rows' mean
    power), max_rows (60), graph_ms (2), measure_step (True), rows (True: each group alone; False:
    the whole step only), sensor ("nvml"). The copies of a
    group cycle through its members, each layer on its own buffers (docs/replay.md).

    The step is replayed many times: state it advances (transformers' StaticCache write position)
    must be reset inside ``fn`` (docs/replay.md, "Steps that change state").
    """
    _check_options("replay_step", options)
    return _replay_step(fn, args, warmup, json_path, quiet, fallback, tier_options, options)


def _check_options(caller: str, options: Dict[str, Any]) -> None:
    unknown = set(options) - set(_OPTION_KEYS)
    if unknown:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"{caller}: unknown option(s) {sorted(unknown)} (known: {', '.join(_OPTION_KEYS)})")


def _replay_step(fn: Callable, args, warmup: int, json_path: Optional[str], quiet: bool, fallback: bool,
                 tier_options: Optional[Dict[str, Any]], options: Dict[str, Any], captured=None) -> ExactReplay:
    """replay_step after its options were checked; `captured`: a graph already captured (anything
    with raw_cuda_graph()), replayed as it is."""
    try:
        graph, output = (captured, None) if captured is not None else capture(fn, *args, warmup=warmup)
        handle = graph.raw_cuda_graph()
    except Exception as e:  # a host sync or a dynamic shape inside the step
        r = ExactReplay(False, f"the step cannot be captured as a CUDA graph ({_first_line(e)}); no exact rows")
        if fallback:
            _tier_fallback(r, fn, args, dict(tier_options or {}), quiet)
        else:
            r.reason += ": trace it and use `jouleprof kernels` / `jouleprof replay` (shape tiers)"
        if not quiet:
            print(f"jouleprof: {r.reason}", file=sys.stderr)
        if json_path:
            r.save(json_path)
        return r
    from . import _jouleprof
    text = _jouleprof.replay_cuda_graph(int(handle), dict(options))
    r = ExactReplay(True, "", _json.loads(text), graph, output)
    if not quiet:  # a fault ended this process's CUDA: the caller's next CUDA call fails, so say why first
        for w in r.warnings:
            if w.startswith(_jouleprof.CONTEXT_LOST_WARNING):
                print(f"jouleprof: {w}", file=sys.stderr)
    if json_path:
        r.save(json_path)
    return r


def replay_step_isolated(factory: Callable, *factory_args, max_restarts: int = 8, same_kernel: bool = True, warmup: int = 3,
                         json_path: Optional[str] = None, quiet: bool = False, fallback: bool = True,
                         tier_options: Optional[Dict[str, Any]] = None, **options) -> ExactReplay:
    """replay_step in a child process, restarted past each kernel whose replay faults
    (docs/replay.md, "Faults and limits").

    ``factory(*factory_args)`` runs in the child (a "spawn" process: CUDA-safe), builds the model
    and returns the step: a callable, ``(callable, args)``, or a graph it captured itself (anything
    with ``raw_cuda_graph()``, e.g. ``torch.cuda.CUDAGraph(keep_graph=True)``). The factory and its
    arguments must be picklable: a module-level function, not a lambda. The child captures and
    replays as replay_step does, writing its progress to a file. A kernel fault leaves a CUDA
    context unusable and often ends the process; then a new child is started that takes the rows
    and the whole step's figures already measured, marks the faulting row ``faulted`` (its reason:
    the CUDA error, or the child's last stderr line naming one, else "the process died (exit N)")
    and replays the rest. After ``max_restarts`` restarts the rows left are ``not_measured``.
    Each restart costs one child start, the model's build and the warm-up. ``same_kernel`` (True):
    the other rows of a faulting row's kernel (the same function on other arguments: each layer's
    ``index_copy_`` of a StaticCache step) are not replayed either, and say so; without it each of
    them costs a restart of its own (32 on a 16-layer StaticCache decode, H200).

    Returns an ExactReplay whose ``graph`` and ``output`` are None: they lived in the child.
    ``data["isolation"]``: the processes started and the rows that faulted. Other arguments and
    options: as replay_step.
    """
    import multiprocessing
    import pickle
    import tempfile

    from . import _jouleprof
    from .errors import InvalidArgumentError
    _check_options("replay_step_isolated", options)
    try:
        pickle.dumps((factory, factory_args))
    except Exception as e:
        raise InvalidArgumentError("replay_step_isolated: the factory and its arguments must be picklable (a module-level function, "
                                   f"not a lambda or a local function): {_first_line(e)}") from None
    ctx = multiprocessing.get_context("spawn")
    faulted: Dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="jouleprof-isolated-") as d:
        progress = os.path.join(d, "progress.jsonl")
        for attempt in range(max_restarts + 1):
            child = _run_child(ctx, d, attempt, factory, factory_args,
                               (warmup, quiet, fallback, tier_options, dict(options, progress_path=progress, faulted=dict(faulted))),
                               progress, quiet)
            prog = _jouleprof.read_replay_progress(progress) if os.path.exists(progress) else None
            new = _new_faults(child, prog, faulted)
            if new and same_kernel and prog is not None:
                new.update(_same_kernel(prog, new, faulted))
            if not new:  # finished: the child's own document
                out = child["out"]
                r = ExactReplay(out["captured"], out["reason"], out["data"])
                r.tiers = out["tiers"]
                break
            faulted.update(new)
        else:
            reason = f"not measured: {max_restarts} restart(s) (max_restarts), each past a faulting row"
            r = ExactReplay(True, "", _json.loads(_jouleprof.replay_progress_document(progress, faulted, reason)))
    if r.captured:
        r.data["isolation"] = {"processes": attempt + 1, "faulted": dict(faulted)}
    if json_path:
        r.save(json_path)
    return r


def _run_child(ctx, d: str, attempt: int, factory, factory_args, settings, progress: str, quiet: bool) -> Dict[str, Any]:
    """One child to its end: {"exit", "out" (its result, None if it died), "stderr"}; the child's
    stderr is relayed unless quiet; an error the child raised is raised here."""
    import pickle

    result, err = os.path.join(d, f"result{attempt}.pickle"), os.path.join(d, f"stderr{attempt}.txt")
    prior = progress if os.path.exists(progress) else ""
    p = ctx.Process(target=_isolated_child, args=(factory, factory_args, settings, prior, result, err))
    p.start()
    p.join()
    text = ""
    if os.path.exists(err):
        with open(err, errors="replace") as f:
            text = f.read()
    if text and not quiet:
        sys.stderr.write(_tail(text))
    out = None
    if p.exitcode == 0 and os.path.exists(result):
        with open(result, "rb") as f:
            out = pickle.load(f)
    if out is not None and "error" in out:
        from . import errors
        raise getattr(errors, out["type"], errors.JouleprofError)(f"replay_step_isolated: {out['error']}")
    return {"exit": p.exitcode, "out": out, "stderr": text}


def _tail(text: str, keep: int = 20) -> str:
    """A child's stderr as relayed: its last `keep` lines. A device assert prints one line per GPU
    thread that failed it (thousands on a StaticCache decode, H200)."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= keep:
        return text
    return f"jouleprof: ({len(lines) - keep} earlier lines of the child's stderr left out)\n" + "".join(lines[-keep:])


def _new_faults(child: Dict[str, Any], prog: Optional[Dict[str, Any]], faulted: Dict[str, str]) -> Dict[str, str]:
    """The rows that faulted in this child (`prog`: the progress file read back, None without one):
    those it wrote as faulted (the process alive) and, if it died, the row it had started. A child
    that died outside a row: one-line error."""
    from .errors import JouleprofError
    new = {k: v for k, v in (prog["faulted"] if prog else {}).items() if k not in faulted}
    if child["out"] is not None:
        return new
    code = child["exit"]
    died = f"the process died ({'signal ' + str(-code) if code is not None and code < 0 else 'exit ' + str(code)})"
    last = [ln.strip() for ln in child["stderr"].splitlines() if ln.strip()]
    cuda = [ln for ln in last if "CUDA" in ln]
    reason = cuda[-1][:300] if cuda else f"{died}: {last[-1][:300]}" if last else died
    started = prog["started"] if prog else ""
    if not started or started == "step":
        where = "replaying the whole step" if started == "step" else "before replaying a row (building, capturing or listing the step)"
        raise JouleprofError(f"replay_step_isolated: the child process died {where}: {reason}")
    new[started] = reason
    return new


def _same_kernel(prog: Dict[str, Any], new: Dict[str, str], faulted: Dict[str, str]) -> Dict[str, str]:
    """The rows not yet finished whose kernel is one of the new faulting rows' (same function, other
    arguments), each with its reason; `prog`: the progress file read back."""
    names, done = prog["names"], set(prog["finished"])
    out = {}
    for fid, why in new.items():
        name = names.get(fid)
        if not name:
            continue
        for rid, other in names.items():
            if other == name and rid not in new and rid not in faulted and rid not in done:
                out[rid] = f"not replayed: the same kernel faulted alone in row {fid} ({why})"
    return out


def _isolated_child(factory, factory_args, settings, prior: str, result: str, err: str) -> None:
    """The child of replay_step_isolated: its stderr to a file (the parent reads the CUDA error a
    dying process printed), the step built and replayed, its result pickled, then a plain exit (a
    context a fault left unusable is not torn down)."""
    import pickle

    fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    warmup, quiet, fallback, tier_options, options = settings
    if prior:
        options["prior_progress"] = prior
    try:
        made = factory(*factory_args)
        fn, args, captured = made, (), None
        if hasattr(made, "raw_cuda_graph"):
            captured = made
        elif isinstance(made, tuple) and len(made) == 2 and callable(made[0]):
            fn, args = made[0], tuple(made[1])
        elif not callable(made):
            from .errors import InvalidArgumentError
            raise InvalidArgumentError(f"the factory returned {type(made).__name__}: a step callable, (callable, args) or a captured graph was expected")
        r = _replay_step(fn, args, warmup, None, quiet, fallback, tier_options, options, captured)
        out: Dict[str, Any] = {"captured": r.captured, "reason": r.reason, "data": r.data, "tiers": r.tiers}
    except Exception as e:
        out = {"error": _first_line(e), "type": type(e).__name__}
    with open(result + ".tmp", "wb") as f:
        pickle.dump(out, f)
    os.replace(result + ".tmp", result)
    sys.stderr.flush()
    os._exit(0)


_TRACE_OPTION_KEYS = ("measurements", "measured", "window", "phases", "classes", "tiers", "engine", "keep_measurements",
                      "store", "db", "device", "idle_s")


class TraceReplay:
    """A traced run predicted from its kernels replayed in isolation (``jouleprof replay``): the
    result document (``data``: schema "jouleprof.replay", as ``jouleprof replay --json``), the
    printed summary (``text``) and the run the replay session was stored as (``run_id``)."""

    def __init__(self, data: Dict[str, Any], text: str, run_id: Optional[int] = None, store_error: Optional[str] = None):
        self.data = data
        self.text = text
        self.run_id = run_id
        self.store_error = store_error

    @property
    def prediction(self) -> Dict[str, Any]:
        return dict(self.data.get("prediction", {}))

    @property
    def comparison(self) -> Dict[str, Any]:
        return dict(self.data.get("comparison", {}))

    @property
    def phases(self) -> List[Dict[str, Any]]:
        return list(self.data.get("phases", []))

    @property
    def warnings(self) -> List[str]:
        return list(self.data.get("warnings", []))

    def predict(self) -> Tuple[float, float]:
        """(seconds, joules) of the traced run, predicted."""
        p = self.prediction
        return p["predicted_duration_s"], p["predicted_energy_j"]

    def __repr__(self):
        t, e = self.predict()
        return f"<TraceReplay {len(self.data.get('kernels', []))} kernels: {t:.4f} s, {e:.3f} J>"


def predict_trace(traces, quiet: bool = False, **options) -> TraceReplay:
    """Predicts a traced run's time and energy from its unique kernels replayed in isolation,
    as ``jouleprof replay TRACE...`` does (docs/replay.md), and compares with a measured run.

    traces: a trace file or a list of them. options: measurements (an earlier output of
    jouleprof-replay, ``--from``; without it the engine runs now on this GPU, measured and stored),
    measured (a run id, "last" or a result JSON file: ``--measured``), window ("work"), phases
    (names), classes, tiers (rule files), engine (path), keep_measurements (path), store (True),
    db, device ("auto"), idle_s (1.0)."""
    unknown = set(options) - set(_TRACE_OPTION_KEYS)
    if unknown:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"predict_trace: unknown option(s) {sorted(unknown)} (known: {', '.join(_TRACE_OPTION_KEYS)})")
    if isinstance(traces, str):
        traces = [traces]
    opts = dict(options)
    if isinstance(opts.get("phases"), str):
        opts["phases"] = [opts["phases"]]
    opts["quiet"] = quiet
    from . import _jouleprof
    r = _jouleprof.replay_trace(list(traces), opts)
    if r["store_error"] and not quiet:
        print(f"jouleprof: the replay session was not stored: {r['store_error']}", file=sys.stderr)
    return TraceReplay(_json.loads(r["json"]), r["text"], r["run_id"], r["store_error"])
