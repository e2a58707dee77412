"""The run store (docs/store.md) as tables: runs, windows and timelines as pandas DataFrames,
or as lists of dicts without pandas (``frame=False``, or pandas not installed).

    from jouleprof import store
    db = store.open()                      # $JOULEPROF_DB, else ~/.local/share/jouleprof/runs.db
    runs = db.runs()                       # one row per stored run; tags as "tag.KEY" columns
    w = db.windows("last")                 # one row per window (per GPU with per_gpu=True)
    tl = db.timeline("last")               # long format: run_id, gpu, metric, t_s, value
"""

import os

from . import _jouleprof
from .errors import InvalidArgumentError
from .monitor import Measurement


def _pandas(frame):
    if frame is False:
        return None
    try:
        import pandas
    except ImportError:
        if frame is True:
            raise
        return None
    return pandas


def _table(rows, frame, columns=None):
    pd = _pandas(frame)
    if pd is None:
        return rows
    return pd.DataFrame(rows, columns=columns) if columns is not None and not rows else pd.DataFrame(rows)


def open(path=None):  # noqa: A001 (the module's verb)
    """Opens a run store for reading (it must exist: NotFoundError otherwise)."""
    return Store(path)


_WINDOW_COLUMNS = ["run_id", "window", "name", "kind", "run", "parent", "t0_s", "t1_s", "duration_s", "complete",
                   "energy_j", "above_idle_j", "method", "uncertainty_j"]


class Store:
    def __init__(self, path=None):
        self._s = _jouleprof.Store("" if path is None else os.fspath(path))

    @property
    def path(self):
        return self._s.path

    def _ids(self, runs):
        if runs is None:
            return [r["id"] for r in self._s.runs()]
        if isinstance(runs, (int, str)):
            runs = [runs]
        return [self._s.resolve(str(r)) for r in runs]

    def runs(self, frame=None):
        """One row per run: id, started_at_utc, command, host, status, gpu_names, simulated,
        duration_s, measured_runs, gpu_energy_j (mean over measured runs), gpu_energy_ci95_j,
        run_duration_s, and one "tag.KEY" column per tag."""
        rows = []
        for r in self._s.runs():
            row = {k: v for k, v in r.items() if k != "tags"}
            row["command"] = " ".join(r["command"])
            row["gpu_names"] = ", ".join(r["gpu_names"])
            for k, v in r["tags"].items():
                row["tag." + k] = v
            rows.append(row)
        return _table(rows, frame)

    def measurement(self, run="last", timelines=False):
        """The stored run as a Measurement (windows with every figure, warnings, JSON)."""
        (rid,) = self._ids(run)
        return Measurement(self._s.load(rid, timelines), run_id=rid)

    def windows(self, runs="last", per_gpu=False, frame=None):
        """One row per window of the given runs (an id, "last", "last~N", a list, or None: all):
        energies summed over GPUs, method, uncertainty, counts as "count.KEY" columns. With
        per_gpu=True, one row per window and GPU with every per-GPU figure."""
        rows = []
        for rid in self._ids(runs):
            m = self._s.load(rid, False)
            for i, w in enumerate(m.windows):
                base = {"run_id": rid, "window": i, "name": w["name"], "kind": w["kind"], "run": w["run"],
                        "parent": w["parent"], "t0_s": w["t0_s"], "t1_s": w["t1_s"],
                        "duration_s": w["duration_s"], "complete": w["complete"]}
                counts = {"count." + k: v for k, v in w["counts"].items()}
                if per_gpu:
                    for g in w["gpus"]:
                        rows.append({**base, **g, **counts})
                    continue
                methods = []
                for g in w["gpus"]:
                    if g["method"] not in methods:
                        methods.append(g["method"])
                rows.append({**base, "energy_j": w["energy_j"], "above_idle_j": w["above_idle_j"],
                             "method": ",".join(methods),
                             "uncertainty_j": sum(g["uncertainty_j"] for g in w["gpus"]), **counts})
        return _table(rows, frame, None if per_gpu else _WINDOW_COLUMNS)

    def timeline(self, run="last", metrics=None, frame=None):
        """Every sample of one run, long format: run_id, gpu, metric, t_s (run time base), value.
        metrics: names to keep (power_sample_w, power_instant_w, energy_j, sm_clock_mhz ...)."""
        (rid,) = self._ids(run)
        cols = self._s.load(rid, True).timeline_columns()
        n = len(cols["t_s"])
        keep = range(n)
        if metrics is not None:
            wanted = {metrics} if isinstance(metrics, str) else set(metrics)
            unknown = wanted - set(cols["metric"])
            if unknown and n:
                raise InvalidArgumentError(f"run {rid} has no samples of {sorted(unknown)}")
            keep = [i for i in range(n) if cols["metric"][i] in wanted]
        pd = _pandas(frame)
        if pd is not None:
            df = pd.DataFrame({"run_id": rid, "gpu": cols["gpu"], "metric": cols["metric"], "t_s": cols["t_s"],
                               "value": cols["value"]})
            return df if metrics is None else df.iloc[list(keep)].reset_index(drop=True)
        return [{"run_id": rid, "gpu": cols["gpu"][i], "metric": cols["metric"][i], "t_s": cols["t_s"][i],
                 "value": cols["value"][i]} for i in keep]
