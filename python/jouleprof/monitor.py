"""Zeus-style energy windows over the C++ Monitor (include/jouleprof/sampler/monitor.hpp).

``begin_window``/``end_window`` take a timestamp and poke the sampler thread; they make no NVML
call on the caller's thread. The energy of a window is resolved lazily: reading any energy field
of the returned ``WindowResult`` waits until the sensors' lag has passed (end + ~0.16 s, then
the sampler's next poll, at most one ``period_ms`` later), after which the figure is final: it
equals what ``finish()`` and ``jouleprof measure`` compute for the same window.
"""

import os
import sys
import time

from . import _jouleprof
from .errors import InvalidArgumentError, JouleprofError, NotFoundError, OpenWindowsError

_RESOLVE_TIMEOUT_S = 30.0  # a sampler that has not polled in this long is stuck (GPU hung)


def _positive_count(key, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"count {key} must be a number, not {value!r}")
    return float(value)


class WindowResult:
    """Energy of one window. Fields (all GPUs summed unless named per GPU):

    energy_j, gpu_energy_j ({gpu index: J}), above_idle_j (None without an idle baseline),
    duration_s, method ("counter", "timeline", "timeline(response)" ...; several joined by ","),
    uncertainty_j, complete, counts ({"tokens": 128.0}), cpu_energy_j ({RAPL domain: J}),
    gpus (every per-GPU figure as a dict), t0_s/t1_s (seconds on the monitor's time base).
    ``per("tokens")`` is energy_j per counted unit.
    With a carbon intensity or a price (Monitor's carbon_intensity=, price=, or the environment):
    gco2e, cost and their ``_uncertainty`` (from the energy's bound), and ``footprint``, the
    window's entry of the result's "footprint" section (energy_kwh, gco2e, cost, per counted unit);
    None without them.
    """

    __slots__ = ("name", "_c", "_id", "_data")

    def __init__(self, name, c_monitor=None, window_id=None, data=None):
        self.name = name
        self._c = c_monitor
        self._id = window_id
        self._data = data

    @property
    def ready(self):
        """True when the figures are final (reading them will not wait)."""
        return self._data is not None or self._c.is_final(self._id)

    def resolve(self, timeout=_RESOLVE_TIMEOUT_S):
        """Waits until the sensors' lag has passed and fetches the figures; returns self."""
        if self._data is not None:
            return self
        deadline = time.monotonic() + timeout
        delay = self._c.final_in_s(self._id)
        if delay:
            time.sleep(delay)  # interruptible: Ctrl-C works here
        while not self._c.is_final(self._id):
            if time.monotonic() > deadline:
                raise JouleprofError(f"window '{self.name}': the sampler has not polled for {timeout:.0f} s")
            time.sleep(0.005)
        self._data = self._c.window(self._id)
        return self

    def _get(self, key):
        return self.resolve()._data[key]

    energy_j = property(lambda self: self._get("energy_j"), doc="J over all GPUs (best method per GPU)")
    above_idle_j = property(lambda self: self._get("above_idle_j"), doc="J above the idle baseline, or None")
    duration_s = property(lambda self: self._get("duration_s"))
    t0_s = property(lambda self: self._get("t0_s"))
    t1_s = property(lambda self: self._get("t1_s"))
    complete = property(lambda self: self._get("complete"))
    counts = property(lambda self: dict(self._get("counts")))
    cpu_energy_j = property(lambda self: dict(self._get("cpu_energy_j")))
    gpus = property(lambda self: [dict(g) for g in self._get("gpus")], doc="per-GPU figures (dicts)")

    @property
    def gpu_energy_j(self):
        """{GPU index: J}."""
        return {g["gpu"]: g["energy_j"] for g in self._get("gpus")}

    @property
    def method(self):
        methods = []
        for g in self._get("gpus"):
            if g["method"] not in methods:
                methods.append(g["method"])
        return ",".join(methods)

    @property
    def uncertainty_j(self):
        """Sum of the per-GPU bounds (sensor calibration not included)."""
        return sum(g["uncertainty_j"] for g in self._get("gpus"))

    @property
    def footprint(self):
        """{"energy_kwh", "gco2e", "gco2e_uncertainty", "cost", "cost_uncertainty", "per": {unit: ...}}
        as in ``jouleprof measure --json``'s "footprint" section, or None (no intensity, no price)."""
        fp = self._get("footprint")
        return None if fp is None else dict(fp)

    def _footprint_field(self, key):
        fp = self._get("footprint")
        return None if fp is None else fp.get(key)

    gco2e = property(lambda self: self._footprint_field("gco2e"), doc="gCO2e of energy_j, or None")
    gco2e_uncertainty = property(lambda self: self._footprint_field("gco2e_uncertainty"),
                                 doc="± gCO2e from uncertainty_j, or None")
    cost = property(lambda self: self._footprint_field("cost"), doc="cost of energy_j at the price, or None")
    cost_uncertainty = property(lambda self: self._footprint_field("cost_uncertainty"), doc="± cost from uncertainty_j, or None")

    def per(self, count_name):
        """Energy per counted unit, e.g. ``per("tokens")`` in J/token."""
        counts = self._get("counts")
        if count_name not in counts:
            raise InvalidArgumentError(
                f"window '{self.name}' has no count '{count_name}' (counts: {sorted(counts) or 'none'})")
        if counts[count_name] == 0:
            raise InvalidArgumentError(f"window '{self.name}': count '{count_name}' is 0")
        return self.energy_j / counts[count_name]

    def to_dict(self):
        return dict(self.resolve()._data)

    def __repr__(self):
        if self._data is None and not self.ready:
            return f"<WindowResult '{self.name}' (resolves {self._c.final_in_s(self._id):.2f} s from now)>"
        d = self.resolve()._data
        flag = "" if d["complete"] else " incomplete"
        return (f"<WindowResult '{self.name}' {d['energy_j']:.4g} J ± {self.uncertainty_j:.2g} "
                f"in {d['duration_s']:.4g} s ({self.method}){flag}>")


class _WindowContext:
    """``with mon.window(name, tokens=N) as w:`` — closes the window on exit; an exception
    inside closes it marked incomplete and propagates. ``w.result`` is the WindowResult."""

    def __init__(self, mon, name, counts):
        self._mon = mon
        self.name = name
        self._counts = dict(counts)
        self.result = None

    def count(self, **counts):
        """Adds counts (tokens=N ...) to the window, also after it closed."""
        for k, v in counts.items():
            self._counts[k] = self._counts.get(k, 0.0) + _positive_count(k, v)
            if self.result is not None:
                self._mon._c.count(self.result._id, k, float(v))

    def __enter__(self):
        self._mon.begin_window(self.name)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.result = self._mon._end(self.name, exc_type is None, self._counts)
        return False

    def __getattr__(self, attr):  # w.energy_j etc. after the block
        if self.result is None:
            raise AttributeError(f"window '{self.name}' is still open")
        return getattr(self.result, attr)


class Measurement:
    """What ``finish()`` returns: every window, warnings, completeness; ``run_id`` when stored."""

    def __init__(self, c_measurement, run_id=None):
        self._m = c_measurement
        self.run_id = run_id
        self.windows = [WindowResult(d["name"], data=d) for d in c_measurement.windows]

    @property
    def phases(self):
        """The user's windows (kind "phase"), without the idle and run windows."""
        return [w for w in self.windows if w._data["kind"] == "phase"]

    def window(self, name):
        """The last window of that name."""
        for w in reversed(self.windows):
            if w.name == name:
                return w
        raise NotFoundError(f"no window named '{name}'")

    warnings = property(lambda self: list(self._m.warnings))
    complete = property(lambda self: self._m.complete)
    incomplete_reason = property(lambda self: self._m.incomplete_reason)
    simulated = property(lambda self: self._m.simulated)
    backend = property(lambda self: self._m.backend)
    gpus = property(lambda self: self._m.gpus)
    tags = property(lambda self: dict(self._m.tags))
    duration_s = property(lambda self: self._m.duration_s)
    footprint = property(lambda self: self._m.footprint,
                         doc='the "footprint" section of the result JSON (carbon and cost), or None')

    def to_json(self, indent=2):
        """The result JSON of ``jouleprof measure --json`` (docs/result-schema.md)."""
        return self._m.to_json(indent)

    def store(self, path=None):
        """Records the measurement in a run store (default: $JOULEPROF_DB, else the XDG path)."""
        self.run_id = self._m.store("" if path is None else os.fspath(path), "python")
        return self.run_id

    def __repr__(self):
        sim = " [simulated]" if self.simulated else ""
        state = "complete" if self.complete else f"incomplete: {self.incomplete_reason}"
        return f"<Measurement {len(self.phases)} windows, {state}{sim}>"


class Monitor:
    """Energy windows on the GPUs, in process.

    device: "auto" or "nvml" (the NVIDIA driver; NoGpuError without one) or "sim" (the simulated
    H100; every figure says simulated). gpus: NVML indices or UUIDs (default: CUDA_VISIBLE_DEVICES,
    else all). period_ms: the sampler's power-poll period. idle_s: idle baseline measured first
    (as ``jouleprof measure --idle``; 0: none, then above_idle_j is None). sync: called at every
    window edge, e.g. ``torch.cuda.synchronize``, so edges are where the GPU work is.
    counter_min_window_s: windows at least this long take the energy counter.
    carbon_intensity: grid intensity in gCO2e/kWh; price: electricity price per kWh; carbon_source:
    where the intensity comes from (recorded with the run). As ``jouleprof measure
    --carbon-intensity/--price/--carbon-source``: when not given, $JOULEPROF_CARBON_INTENSITY,
    $JOULEPROF_PRICE, $JOULEPROF_CARBON_SOURCE, then the config file. Windows and the result then
    carry gCO2e and cost with the energy's uncertainty.
    """

    def __init__(self, device="auto", gpus=None, period_ms=100, idle_s=2.0, sync=None, sim_scenario=None,
                 counter_min_window_s=1.0, cpu=True, carbon_intensity=None, price=None, carbon_source=None):
        if gpus is None:
            ids = []
        else:
            if isinstance(gpus, (int, str)):
                gpus = [gpus]
            ids = []
            for g in gpus:
                if isinstance(g, bool) or not isinstance(g, (int, str)) or (isinstance(g, int) and g < 0):
                    raise InvalidArgumentError(f"gpus: {g!r} is not a GPU index (>= 0) or UUID")
                ids.append(str(g))
        if not isinstance(idle_s, (int, float)) or idle_s < 0:
            raise InvalidArgumentError("idle_s must be >= 0 seconds")
        if sync is not None and not callable(sync):
            raise InvalidArgumentError("sync must be a callable (e.g. torch.cuda.synchronize) or None")
        for key, value in (("carbon_intensity", carbon_intensity), ("price", price)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InvalidArgumentError(f"{key} must be a number, not {value!r}")
        if carbon_source is not None and not isinstance(carbon_source, str):
            raise InvalidArgumentError(f"carbon_source must be a string, not {carbon_source!r}")
        self._c = _jouleprof.Monitor(device, ids, float(period_ms), os.fspath(sim_scenario or ""),
                                     float(counter_min_window_s), bool(cpu),
                                     None if carbon_intensity is None else float(carbon_intensity),
                                     None if price is None else float(price), carbon_source or "")
        self._sync = sync
        if idle_s > 0:
            wid = self._c.begin_idle()
            try:
                time.sleep(idle_s)
            except BaseException:
                self._c.end_idle(wid, False)
                raise
            self._c.end_idle(wid, True)
        self._c.start_run()

    # -- windows ---------------------------------------------------------------------------
    def begin_window(self, name):
        """Opens a window. Windows nest and may overlap; names may repeat."""
        if self._sync is not None:
            self._sync()
        self._c.begin(name)

    def end_window(self, name, **counts):
        """Closes the most recent open window of that name; counts (tokens=N) are attached.
        Returns its WindowResult, resolved when first read (WindowError if none is open)."""
        return self._end(name, True, counts)

    def _end(self, name, complete, counts):
        if self._sync is not None and complete:
            self._sync()
        wid = self._c.end(name, complete)
        for k, v in counts.items():
            self._c.count(wid, k, _positive_count(k, v))
        return WindowResult(name, self._c, wid)

    def window(self, name, **counts):
        """Context manager: ``with mon.window("decode", tokens=128) as w: ...``."""
        return _WindowContext(self, name, counts)

    @property
    def open_windows(self):
        return self._c.open_windows()

    # -- the end -----------------------------------------------------------------------------
    def finish(self, store=False, tags=None, close_open=False):
        """Stops sampling and computes every window. store: True (the default run store), a
        path, or False. tags: {key: value} recorded with the run. Windows still open are closed
        and marked incomplete, the measurement is recorded, and then OpenWindowsError is raised
        unless close_open=True. A KeyboardInterrupt in flight marks the measurement interrupted."""
        open_now = self._c.open_windows()
        interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
        tag_map = {str(k): str(v) for k, v in (tags or {}).items()}
        m = Measurement(self._c.finish(interrupted, tag_map, list(sys.argv)))
        if store is not False and store is not None:
            m.store(None if store is True else store)
        if open_now and not close_open:
            names = ", ".join(f"'{n}'" for n in open_now)
            raise OpenWindowsError(f"finish(): windows still open: {names} (closed and marked incomplete"
                                   + (f"; recorded as run {m.run_id}" if m.run_id is not None else "") + ")",
                                   m, m.run_id)
        return m

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._c.finished:
            self.finish(close_open=exc_type is not None)
        return False

    # -- about the GPUs ----------------------------------------------------------------------
    simulated = property(lambda self: self._c.simulated)
    backend = property(lambda self: self._c.backend)
    gpus = property(lambda self: self._c.gpus, doc="the monitored GPUs (index, name, uuid ...)")

    def set_sim_power(self, watts):
        """The simulated GPU's power from now on (device="sim" only; tests and demos)."""
        self._c.set_sim_power(float(watts))
