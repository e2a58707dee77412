"""The exact replay's binding (jouleprof.replay) against the fake CUDA driver (fakes/cuda): the
listing and grouping of a synthetic graph, one-line errors, and the result object's prediction.
The capture itself needs torch and a GPU (scripts/device-replay-exact.sh)."""
import ctypes
import json
import os
import sys

import pytest

import jouleprof
from jouleprof import _jouleprof
from jouleprof.replay import ExactReplay

FAKE = os.environ.get("JOULEPROF_TEST_FAKE_CUDA")


@pytest.fixture
def fake():
    if not FAKE:
        pytest.skip("JOULEPROF_TEST_FAKE_CUDA is not set (run through ctest)")
    lib = ctypes.CDLL(FAKE)
    lib.fakecuda_build_graph.restype = ctypes.c_void_p
    lib.fakecuda_build_graph.argtypes = [ctypes.c_char_p]
    return lib


def test_list_groups_a_graph(fake):
    g = fake.fakecuda_build_graph(b"kernel,_Z4gemmPfS_i,12,20000;kernel,relu,3,1000;host,,2,0")
    groups, warnings = _jouleprof.list_cuda_graph(g, FAKE)
    assert groups == [("kernel", "gemm(float*, float*, int)", 12), ("kernel", "relu", 3)]
    assert warnings == ["2 nodes of type host not replayed (the replay re-creates kernel, memcpy and memset nodes)"]


def test_errors_are_one_line(fake):
    with pytest.raises(jouleprof.InvalidArgumentError, match=r"^no CUDA graph \(null handle\)$"):
        _jouleprof.replay_cuda_graph(0, {"cuda_library": FAKE})
    with pytest.raises(jouleprof.JouleprofError, match="cannot load the CUDA driver"):
        _jouleprof.replay_cuda_graph(1, {"cuda_library": "/nonexistent/libcuda.so.1"})


def test_unknown_option_is_refused():
    from jouleprof.replay import replay_step
    with pytest.raises(jouleprof.InvalidArgumentError, match="unknown option"):
        replay_step(lambda: None, trails=3)


def test_prediction_scales_with_steps(tmp_path):
    data = {"schema": "jouleprof.exact_replay", "rows": [], "step": {"measured": False},
            "prediction": {"time_s": 0.002, "energy_j": 1.5, "energy_half_width_j": 0.01, "measured_share": 1.0,
                           "timed_share": 0.0}}
    r = ExactReplay(True, "", data)
    assert r.predict(10) == pytest.approx((0.02, 15.0))
    p = tmp_path / "x.json"
    r.save(str(p))
    assert json.loads(p.read_text())["prediction"]["energy_j"] == 1.5
    n = ExactReplay(False, "the step cannot be captured as a CUDA graph (RuntimeError: x)")
    n.save(str(p))
    assert json.loads(p.read_text()) == {"schema": "jouleprof.exact_replay", "schema_version": 1, "captured": False,
                                         "reason": "the step cannot be captured as a CUDA graph (RuntimeError: x)"}
    assert "not captured" in n.text()


def test_prediction_uses_the_whole_step_when_it_was_measured():
    data = {"schema": "jouleprof.exact_replay", "rows": [],
            "step": {"measured": True, "time_s": 0.0021, "energy_j": 1.65, "power_w": 785.7},
            "prediction": {"time_s": 0.002, "energy_j": 1.5, "energy_half_width_j": 0.01, "measured_share": 1.0,
                           "timed_share": 0.0, "context": {"energy_factor": 1.1, "time_factor": 1.05}}}
    r = ExactReplay(True, "", data)
    assert r.predict(10) == pytest.approx((0.021, 16.5))
    assert r.predict(10, basis="rows") == pytest.approx((0.02, 15.0))
    assert "+10.0% energy" in r.text()
    with pytest.raises(jouleprof.InvalidArgumentError, match="basis must be"):
        r.predict(1, basis="kernels")
    data["step"] = {"measured": False, "reason": "measure_step off"}
    with pytest.raises(jouleprof.InvalidArgumentError, match="not measured"):
        ExactReplay(True, "", data).predict(1, basis="step")


def test_rows_off_gives_the_whole_step_only(fake):
    # The fake's "fault" kernel faults when replayed alone: with rows off it never is.
    g = fake.fakecuda_build_graph(b"kernel,gemm,4,20000;kernel,stale_index,2,3000,fault")
    opts = {"cuda_library": FAKE, "sensor": "sim", "warmup_s": 0, "trials": 3, "trial_s": 0.05, "settle_s": 0.01, "rows": False}
    r = ExactReplay(True, "", json.loads(_jouleprof.replay_cuda_graph(g, opts)))
    assert r.rows == []  # the faulting kernel was never replayed alone (C++ test: the step's figures)
    assert r.warnings[-1] == "rows off: the whole step only, no node replayed alone"
    with pytest.raises(jouleprof.InvalidArgumentError, match="no row was replayed"):
        r.predict(1, basis="rows")


def test_replay_rotates_through_the_layers_buffers(fake):
    # The fake runs a launch on the buffer of the launch just before in half its time (L2).
    g = fake.fakecuda_build_graph(b"kernel,gemm,12,20000,l2")
    opts = {"cuda_library": FAKE, "sensor": "sim", "warmup_s": 0, "trials": 3, "trial_s": 0.05, "settle_s": 0.01}
    rows = json.loads(_jouleprof.replay_cuda_graph(g, opts))["rows"]
    assert rows[0]["time_s"] == pytest.approx(20e-6, rel=1e-3)


# --- The tier replay's prediction (jouleprof.replay.predict_trace: `jouleprof replay` as one call) ---

TRACE = os.path.join(os.path.dirname(__file__), "..", "data", "replay", "bloom_tiny_forward.json")

# A stand-in for jouleprof-replay: every planned row at 10 µs and 200 W per call, gaps at 90 W.
ENGINE = """import json, sys
plan = json.load(open(sys.argv[1]))
items = [{"row": it["row"], "status": "ok", "time_ns": 1e4, "time_ns_half_width": 0.0, "power_w": 200.0,
          "energy_j": 2e-3, "energy_j_half_width": 0.0} for it in plan["items"]]
json.dump({"schema": "jouleprof.replay_measurements", "gpu": "stand-in", "idle_w": 70.0, "gap_w": 90.0,
           "items": items, "not_replayed": plan["not_replayed"]}, open(sys.argv[2], "w"))
"""


def test_predict_trace_runs_the_pipeline_of_the_cli(tmp_path, db):
    from conftest import cli
    from jouleprof.replay import predict_trace
    engine = tmp_path / "engine"
    engine.write_text(f"#!{sys.executable}\n" + ENGINE)
    engine.chmod(0o755)
    kept = tmp_path / "kept.json"
    r = predict_trace(TRACE, engine=str(engine), device="sim", idle_s=0, db=db, keep_measurements=str(kept), quiet=True)
    assert r.data["schema"] == "jouleprof.replay"
    assert r.run_id is not None and r.store_error is None
    t, e = r.predict()
    assert (t, e) == (r.prediction["predicted_duration_s"], r.prediction["predicted_energy_j"])
    assert e > 0
    assert "predicted" in r.text
    # The same prediction as `jouleprof replay --from` of the kept engine output, byte for byte.
    from_cli = cli("replay", TRACE, "--from", str(kept), "--no-store", "-q", "--json", "-").stdout
    again = predict_trace([TRACE], measurements=str(kept), db=db, quiet=True)
    assert again.data == json.loads(from_cli) == r.data
    assert again.run_id is None  # nothing run, nothing stored
    assert "predicted" in cli("runs", "show", str(r.run_id), "--db", db).stdout


def test_predict_trace_errors_are_one_line(tmp_path):
    from jouleprof.replay import predict_trace
    with pytest.raises(jouleprof.InvalidArgumentError, match="unknown option"):
        predict_trace(TRACE, rotate=False)
    with pytest.raises(jouleprof.JouleprofError, match="no such trace"):
        predict_trace(str(tmp_path / "none.json"), measurements=str(tmp_path / "none.out"))


def test_a_step_that_cannot_be_captured_falls_back_to_the_shape_tiers(tmp_path, db, monkeypatch):
    import shutil
    import jouleprof.replay as jr
    engine = tmp_path / "engine"
    engine.write_text(f"#!{sys.executable}\n" + ENGINE)
    engine.chmod(0o755)

    def no_capture(fn, *args, warmup=3):
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    traced = []
    monkeypatch.setattr(jr, "capture", no_capture)
    monkeypatch.setattr(jr, "trace_step", lambda fn, *a, path: (traced.append(a), shutil.copy(TRACE, path)))
    r = jr.replay_step(lambda x: x, 3, quiet=True, tier_options={"engine": str(engine), "device": "sim", "idle_s": 0, "db": db})
    assert traced == [(3,)]
    assert not r.captured and r.tiers is not None
    assert "cannot be captured" in r.reason and "shape tiers instead" in r.reason and "\n" not in r.reason
    t, e = r.predict(steps=10)
    assert (t, e) == pytest.approx((10 * r.tiers.prediction["predicted_duration_s"], 10 * r.tiers.prediction["predicted_energy_j"]))
    assert e > 0
    assert "predicted from the shape tiers" in r.text()
    p = tmp_path / "step.json"
    r.save(str(p))
    assert json.loads(p.read_text())["tier_prediction"] == r.tiers.prediction
    # Without an engine the fallback fails in the same one line, and predict() says there is nothing.
    r = jr.replay_step(lambda x: x, 3, quiet=True, tier_options={"engine": str(tmp_path / "none")})
    assert r.tiers is None and "fallback failed too" in r.reason and "\n" not in r.reason
    with pytest.raises(jouleprof.InvalidArgumentError, match="no prediction"):
        r.predict()
    r = jr.replay_step(lambda x: x, 3, quiet=True, fallback=False)
    assert r.tiers is None and "use `jouleprof kernels`" in r.reason and traced == [(3,), (3,)]


def test_in_process_fault_says_the_context_is_lost_and_the_way_past_it(fake, capfd):
    # In this process (no restart), a fault leaves CUDA unusable: one stderr line says so before the
    # caller's next CUDA call fails, naming replay_step_isolated.
    from isolated_steps import FakeGraph
    from jouleprof.replay import _replay_step
    g = FakeGraph("kernel,gemm,4,20000;kernel,reads_freed,2,5000,fault")
    r = _replay_step(None, (), 0, None, False, False, None, _isolated_opts(), captured=g)
    assert {x["name"]: x["status"] for x in r.rows}["reads_freed"] == "failed"
    err = capfd.readouterr().err
    assert err.count("jouleprof: this process's CUDA context was lost (reads_freed faulted)") == 1
    assert "replay_step_isolated" in err


def test_compare_matches_rows_by_id_and_says_the_board(tmp_path):
    def doc(uuid, gemm_j, relu_j, relu_status="measured"):
        return {"schema": "jouleprof.exact_replay", "schema_version": 1, "gpu": "G", "gpu_uuid": uuid, "rows": [
            {"id": "a1", "name": "gemm", "status": "measured", "time_s": 100e-6, "energy_per_call_j": gemm_j},
            {"id": "b2", "name": "relu", "status": relu_status, "time_s": 20e-6, "energy_per_call_j": relu_j},
            {"id": "c3", "name": "tiny", "status": "measured", "time_s": 2e-6, "energy_per_call_j": 1e-4}]}
    a = ExactReplay(True, "", doc("GPU-1", 0.050, 0.0040))
    a.save(str(tmp_path / "a.json"))
    a = ExactReplay.load(str(tmp_path / "a.json"))
    c = a.compare(ExactReplay(True, "", doc("GPU-1", 0.051, 0.0036)))
    assert c["compared"] == 2 and c["within"] == 1 and c["same_board"] is True  # tiny (< 10 us) left out
    assert [r["name"] for r in c["rows"]] == ["relu", "gemm"]                    # largest difference first
    assert c["energy_max_abs"] == pytest.approx(0.1)
    other = a.compare(ExactReplay(True, "", doc("GPU-2", 0.05, 0.004, relu_status="timed")))
    assert other["compared"] == 1 and other["same_board"] is False               # a timed row is not compared
    assert a.compare(ExactReplay(True, "", dict(doc("", 0.05, 0.004), gpu_uuid="")))["same_board"] is None
    (tmp_path / "x.json").write_text('{"schema": "jouleprof.replay"}')
    with pytest.raises(jouleprof.InvalidArgumentError, match="is not an exact replay"):
        ExactReplay.load(str(tmp_path / "x.json"))


# --- replay_step_isolated: the restart past a faulting row (docs/replay.md, "Faults and limits") ---

def _isolated_opts():
    # The fake's GPU clock is virtual: the sim sensor's samples never fall inside a trial, so the rows
    # replayed end "timed" (their time measured) and the whole step is not measured.
    return {"cuda_library": FAKE, "sensor": "sim", "warmup_s": 0, "trials": 3, "trial_s": 0.05, "settle_s": 0.01, "coverage": 1.0}


def test_isolated_a_dying_row_is_faulted_and_the_rest_measured(fake, capfd):
    # The fake ends the process (exit 3, one stderr line naming the CUDA error) when stale_index is
    # replayed alone: the first child dies at that row, the second takes it as faulted and finishes.
    from isolated_steps import fake_step
    from jouleprof.replay import replay_step_isolated
    spec = "kernel,gemm,4,20000;kernel,stale_index,2,5000,die;kernel,relu,8,3000"
    r = replay_step_isolated(fake_step, spec, **_isolated_opts())
    assert r.captured and r.graph is None and r.output is None
    rows = {x["name"]: x for x in r.rows}
    assert rows["stale_index"]["status"] == "faulted"
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in rows["stale_index"]["reason"]
    assert rows["gemm"]["status"] == rows["relu"]["status"] == "timed"
    assert r.data["isolation"]["processes"] == 2
    assert r.data["gpu_uuid"].startswith("GPU-")  # the board, for `trace --replay` to compare with the run's
    assert list(r.data["isolation"]["faulted"]) == [rows["stale_index"]["id"]]
    assert r.prediction["time_s"] == pytest.approx(4 * 20e-6 + 8 * 3e-6, rel=1e-6)
    assert r.prediction["failed_node_share"] == pytest.approx(2 / 14)
    assert any(w.startswith("kernel stale_index faulted when replayed alone (fakecuda: kernel stale_index: CUDA_ERROR_ILLEGAL_ADDRESS")
               for w in r.warnings)
    assert "fakecuda: kernel stale_index" in capfd.readouterr().err  # the child's stderr, relayed


def test_isolated_the_sensor_is_the_cuda_devices_board(fake, monkeypatch, tmp_path):
    # Two NVML GPUs; the CUDA device is NVML's GPU 1 by its UUID: that GPU's sensor is measured and
    # the document names its board. A UUID no sensor has: the CUDA ordinal's sensor, and one warning.
    nvml = os.environ.get("JOULEPROF_TEST_FAKE_NVML")
    if not nvml:
        pytest.skip("JOULEPROF_TEST_FAKE_NVML is not set (run through ctest)")
    from isolated_steps import fake_step
    from jouleprof.replay import replay_step_isolated
    scenario = tmp_path / "two-gpus.txt"
    scenario.write_text("gpus 2\n")
    monkeypatch.setenv("JOULEPROF_NVML_LIB", nvml)
    monkeypatch.setenv("JOULEPROF_FAKE_NVML_SCENARIO", str(scenario))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    opts = dict(_isolated_opts(), sensor="nvml")
    monkeypatch.setenv("JOULEPROF_FAKE_CUDA_UUID", "fa4e0000-0000-4000-8000-000000000001")
    r = replay_step_isolated(fake_step, "kernel,gemm,4,20000", **opts)
    assert r.data["gpu_uuid"] == "GPU-fa4e0000-0000-4000-8000-000000000001"
    assert not [w for w in r.warnings if w.startswith("no power sensor")]
    monkeypatch.setenv("JOULEPROF_FAKE_CUDA_UUID", "00000000-0000-4000-8000-000000000009")
    r = replay_step_isolated(fake_step, "kernel,gemm,4,20000", **opts)
    assert r.data["gpu_uuid"] == "GPU-fa4e0000-0000-4000-8000-000000000000"
    assert [w for w in r.warnings if w.startswith("no power sensor")] == [
        "no power sensor has this CUDA device's UUID (GPU-00000000-0000-4000-8000-000000000009): the sensor of GPU 0 "
        "(GPU-fa4e0000-0000-4000-8000-000000000000) is measured"]


def test_isolated_a_fault_with_the_process_alive_restarts_too(fake):
    # "fault": the launch fails with a sticky error and the process lives (the engine writes the fault).
    from isolated_steps import fake_step
    from jouleprof.replay import replay_step_isolated
    r = replay_step_isolated(fake_step, "kernel,gemm,4,20000;kernel,reads_freed,2,5000,fault;kernel,relu,8,3000", quiet=True,
                             **_isolated_opts())
    rows = {x["name"]: x for x in r.rows}
    assert rows["reads_freed"]["status"] == "faulted"
    assert rows["reads_freed"]["reason"] == "cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS (700)"
    assert rows["gemm"]["status"] == rows["relu"]["status"] == "timed"
    assert r.data["isolation"]["processes"] == 2


def test_isolated_rows_of_a_faulting_kernel_are_skipped_with_it(fake):
    # Two rows of one kernel (each layer's index_copy_ of a StaticCache step): after the first faults
    # the second is not replayed (one restart in all); same_kernel=False isolates each on its own.
    from isolated_steps import fake_step
    from jouleprof.replay import replay_step_isolated
    spec = "kernel,gemm,4,20000;kernel,stale_index,2,5000,die;kernel,stale_index,3,6000,die;kernel,relu,8,3000"
    r = replay_step_isolated(fake_step, spec, quiet=True, **_isolated_opts())
    stale = [x for x in r.rows if x["name"] == "stale_index"]
    assert [x["status"] for x in stale] == ["faulted", "faulted"]
    first = r.data["isolation"]["faulted"]
    assert r.data["isolation"]["processes"] == 2 and len(first) == 2
    assert sum(x["reason"].startswith("not replayed: the same kernel faulted alone in row ") for x in stale) == 1
    assert sum(w.startswith("kernel stale_index: not replayed: the same kernel faulted alone in row ") for w in r.warnings) == 1
    assert sum(w.startswith("kernel stale_index faulted when replayed alone") for w in r.warnings) == 1
    assert {x["status"] for x in r.rows if x["name"] != "stale_index"} == {"timed"}
    apart = replay_step_isolated(fake_step, spec, quiet=True, same_kernel=False, **_isolated_opts())
    assert apart.data["isolation"]["processes"] == 3
    assert [x["status"] for x in apart.rows if x["name"] == "stale_index"] == ["faulted", "faulted"]


def test_isolated_without_restarts_left_the_rest_is_not_measured(fake, tmp_path):
    from isolated_steps import fake_step
    from jouleprof.replay import replay_step_isolated
    p = tmp_path / "exact.json"
    r = replay_step_isolated(fake_step, "kernel,gemm,4,20000;kernel,stale_index,2,5000,die;kernel,relu,8,3000", max_restarts=0,
                             quiet=True, json_path=str(p), **_isolated_opts())
    rows = {x["name"]: x for x in r.rows}
    assert rows["stale_index"]["status"] == "faulted"
    assert rows["gemm"]["status"] == rows["relu"]["status"] == "not_measured"
    assert rows["gemm"]["reason"] == "not measured: 0 restart(s) (max_restarts), each past a faulting row"
    assert r.prediction["energy_j"] == 0 and r.prediction["failed_node_share"] == 1.0
    assert r.data["isolation"]["processes"] == 1
    assert json.loads(p.read_text())["rows"] == r.rows


def test_isolated_relays_the_tail_of_a_childs_stderr():
    from jouleprof.replay import _tail
    assert _tail("a\nb\n") == "a\nb\n"
    many = "".join(f"assert {i}\n" for i in range(1000))
    out = _tail(many)
    assert out.startswith("jouleprof: (980 earlier lines of the child's stderr left out)\n")
    assert out.endswith("assert 999\n") and out.count("\n") == 21


def test_isolated_errors_are_one_line(fake):
    import isolated_steps
    from jouleprof.replay import replay_step_isolated
    with pytest.raises(jouleprof.InvalidArgumentError, match="must be picklable.*not a lambda"):
        replay_step_isolated(lambda: None)
    with pytest.raises(jouleprof.InvalidArgumentError, match="unknown option"):
        replay_step_isolated(isolated_steps.fake_step, "kernel,k,1,1000", trails=3)
    with pytest.raises(jouleprof.JouleprofError, match=r"^replay_step_isolated: ValueError: the model's weights are missing$"):
        replay_step_isolated(isolated_steps.failing_factory, quiet=True)
    # A step that cannot be captured in the child (here: no torch, or no GPU): replay_step's answer.
    r = replay_step_isolated(isolated_steps.plain_step, 3, quiet=True, fallback=False, **_isolated_opts())
    assert not r.captured and "cannot be captured" in r.reason and "\n" not in r.reason
