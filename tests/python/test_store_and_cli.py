"""The store round trip into DataFrames, and the Python figures against the C++ CLI's."""
import json
import os
import time

import pytest

import jouleprof
from conftest import cli

import pandas as pd  # python3-pandas (scripts/debian-packages.txt); frame=False is tested below


def measured(db, tags):
    mon = jouleprof.Monitor(device="sim", idle_s=0.5, period_ms=50)
    out = {}
    for name, watts, secs, tokens in (("prefill", 650, 0.25, 128), ("decode", 320, 1.1, 32), ("tail", 700, 0.04, 1)):
        time.sleep(0.25)
        with mon.window(name, tokens=tokens) as w:
            mon.set_sim_power(watts)
            time.sleep(secs)
            mon.set_sim_power(75)
        out[name] = w.result
    m = mon.finish(store=db, tags=tags)
    return m, out


def test_store_round_trip_into_dataframes(db):
    m, live = measured(db, {"model": "tiny", "batch": 8})
    assert m.run_id == 1
    s = jouleprof.store.open(db)

    runs = s.runs()
    assert isinstance(runs, pd.DataFrame) and list(runs["id"]) == [1]
    row = runs.iloc[0]
    assert row["tag.model"] == "tiny" and row["tag.batch"] == "8" and row["tag.simulated"] == "true"
    assert row["source"] == "python" and row["simulated"] and row["measured_runs"] == 1
    assert row["gpu_energy_j"] > 0

    w = s.windows("last")
    assert isinstance(w, pd.DataFrame)
    phases = w[w["kind"] == "phase"].set_index("name")
    assert list(phases.index) == ["prefill", "decode", "tail"]
    for name, r in live.items():
        assert phases.loc[name, "energy_j"] == pytest.approx(r.energy_j, rel=1e-9)
        assert phases.loc[name, "method"] == r.method
        assert phases.loc[name, "uncertainty_j"] == pytest.approx(r.uncertainty_j, rel=1e-9)
        assert phases.loc[name, "count.tokens"] == r.counts["tokens"]
    assert set(w["kind"]) == {"idle", "run", "phase"}

    per_gpu = s.windows(1, per_gpu=True)
    assert {"gpu", "timeline_j", "counter_j", "mean_power_w"} <= set(per_gpu.columns)

    tl = s.timeline("last")
    assert list(tl.columns) == ["run_id", "gpu", "metric", "t_s", "value"]
    power = tl[tl["metric"] == "power_sample_w"]
    assert len(power) > 50 and power["value"].max() > 600  # the 650 and 700 W bursts
    only = s.timeline(1, metrics=["energy_j"])
    assert set(only["metric"]) == {"energy_j"}

    # Without pandas: the same rows as lists of dicts.
    rows = s.windows(1, frame=False)
    assert isinstance(rows, list) and rows[0]["run_id"] == 1
    assert [r["name"] for r in rows if r["kind"] == "phase"] == ["prefill", "decode", "tail"]
    assert s.measurement(1).window("decode").energy_j == live["decode"].energy_j


def test_python_figures_equal_the_cpp_ones(db, tmp_path):
    """The C++ CLI reads the run back from the store: every window figure is the one Python gave,
    and to_json() is the result JSON `jouleprof measure --json` writes for it."""
    m, live = measured(db, {"case": "cross-check"})
    out = tmp_path / "run.json"
    cli("runs", "export", str(m.run_id), "--json", str(out), "--no-timelines", env={"JOULEPROF_DB": db})
    exported = json.loads(out.read_text())[0]  # runs export --json writes an array (docs/cli.md)
    ours = json.loads(m.to_json())
    assert exported["simulated"] is True and ours["schema_version"] == exported["schema_version"]
    by_name = {w["name"]: w for w in exported["windows"]}
    own = {w["name"]: w for w in ours["windows"]}
    for name, r in live.items():
        cw = by_name[name]
        assert cw["gpu_energy_j"] == pytest.approx(r.energy_j, rel=1e-12)
        assert own[name]["gpu_energy_j"] == pytest.approx(r.energy_j, rel=1e-12)
        g = cw["gpus"][0]
        assert g["method"] == r.method and g["uncertainty_j"] == pytest.approx(r.uncertainty_j, rel=1e-9)
        assert g["energy_j"] == pytest.approx(r.gpu_energy_j[0], rel=1e-12)
        # Every per-GPU figure is the result writer's, under the Python names (issue 31: the
        # response uncertainty was 0.0 here and null in the JSON for a window without a response).
        py = r.gpus[0]
        renamed = {"counter_energy_j": "counter_j", "timeline_energy_j": "timeline_j", "response_energy_j": "response_j",
                   "timeline_vs_counter": "disagreement", "above_idle_energy_j": "above_idle_j"}
        for key, value in own[name]["gpus"][0].items():
            mine = py[renamed.get(key, key)]
            assert (mine is None) == (value is None), (name, key, mine, value)
            if isinstance(value, float):
                assert mine == pytest.approx(value, rel=1e-12), (name, key)
        if py["response_j"] is None:
            assert py["response_uncertainty_j"] is None
    text = cli("runs", "show", str(m.run_id), env={"JOULEPROF_DB": db}).stdout
    assert "decode" in text and "simulated" in text.lower()


def test_missing_store_raises_not_found(tmp_path):
    with pytest.raises(jouleprof.NotFoundError):
        jouleprof.store.open(tmp_path / "none.db")
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    with pytest.raises(jouleprof.JouleprofError):
        jouleprof.store.open(bad).runs()


# --- trace analysis of a stored run (branch trace) ---
def test_trace_analysis_of_a_stored_run(db, tmp_path):
    from jouleprof.trace_analysis import analyse
    lib = tmp_path / "libfake_inject.so"  # any ELF-headed file: the command never loads CUDA
    lib.write_bytes(b"\x7fELF: a stand-in, never loaded")
    # The fake traced program writes its trace file itself, as the injection library would.
    cli("trace", "--device", "sim", "--idle", "0.3", "--db", db, "--inject-lib", str(lib), "-q", "--",
        os.environ["JOULEPROF_TEST_FAKE_TRACED"], "0.4", "--layers", "2")
    t = analyse("last", db=db)
    assert t["schema_version"] == 1 and len(t["gpus"]) == 1
    assert t["gpus"][0]["table_method"] == "split"
    assert t["activities"] > 0 and t["gpus"][0]["methods"], t.get("warnings")
    assert analyse(1, db=db, method="regression")["gpus"][0]["table_method"] == "regression"
    with pytest.raises(jouleprof.InvalidArgumentError):
        analyse(1, db=db, method="psychic")
    cli("measure", "--device", "sim", "--idle", "0", "--db", db, "--no-cpu", "--", "true")
    with pytest.raises(jouleprof.InvalidArgumentError, match="not traced"):
        analyse("last", db=db)
