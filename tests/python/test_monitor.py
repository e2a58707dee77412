"""The window API on the simulated GPU: figures, methods, nesting, context manager, errors."""
import time

import pytest

import jouleprof


def busy(mon, watts, seconds):
    mon.set_sim_power(watts)
    time.sleep(seconds)
    mon.set_sim_power(75)


def test_window_energy_methods_and_units(sim):
    assert sim.simulated and sim.backend == "sim"
    sim.begin_window("prefill")
    busy(sim, 400, 0.4)
    prefill = sim.end_window("prefill", tokens=512)
    time.sleep(0.3)
    sim.begin_window("decode")
    busy(sim, 300, 1.3)
    decode = sim.end_window("decode", tokens=64)

    # 0.4 s: the sample timeline; >= 1 s: the energy counter (as `jouleprof measure`).
    assert prefill.method == "timeline"
    assert decode.method == "counter"
    for r, watts in ((prefill, 400), (decode, 300)):
        expected = watts * r.duration_s
        assert r.energy_j == pytest.approx(expected, rel=0.08)
        assert r.uncertainty_j > 0
        assert list(r.gpu_energy_j) == [0] and r.gpu_energy_j[0] == r.energy_j
        assert r.above_idle_j == pytest.approx((watts - 75) * r.duration_s, rel=0.12)
        assert r.complete
    assert 0.4 <= prefill.duration_s < 0.6
    assert prefill.per("tokens") == pytest.approx(prefill.energy_j / 512)
    assert decode.counts == {"tokens": 64.0}
    with pytest.raises(jouleprof.InvalidArgumentError, match="no count 'bytes'"):
        prefill.per("bytes")
    m = sim.finish()
    assert m.simulated and m.complete and m.tags.get("simulated") == "true"
    assert [w.name for w in m.phases] == ["prefill", "decode"]


def test_short_window_is_not_zero(sim):
    """A 30 ms window reads 0 J from a counter that updates every 100 ms; here it must not."""
    time.sleep(0.3)
    sim.begin_window("short")
    busy(sim, 700, 0.03)
    r = sim.end_window("short")
    assert not r.ready  # the sensors' lag has not passed yet
    assert r.energy_j > 10  # resolves by waiting; true value ~21 J (700 W x 30 ms)
    assert r.ready
    assert r.method == "timeline(response)"
    assert abs(r.energy_j - 700 * r.duration_s) <= r.uncertainty_j + 3


def test_lazy_results_equal_finish(sim):
    results = []
    for i, watts in enumerate((200, 500, 650)):
        sim.begin_window(f"w{i}")
        busy(sim, watts, 0.05 + 0.2 * i)
        results.append(sim.end_window(f"w{i}"))
        time.sleep(0.25)
    early = [r.to_dict() for r in results]  # resolved before finish
    m = sim.finish()
    for e, w in zip(early, m.phases):
        assert e["energy_j"] == w.energy_j
        assert e["gpus"] == w.gpus


def test_nested_and_overlapping_windows(sim):
    sim.begin_window("outer")
    sim.begin_window("a")
    busy(sim, 300, 0.15)
    sim.begin_window("b")  # overlaps a
    busy(sim, 300, 0.15)
    a = sim.end_window("a")
    busy(sim, 300, 0.15)
    b = sim.end_window("b")
    sim.begin_window("a")  # the same name again, nested in outer
    inner_a = sim.end_window("a")
    outer = sim.end_window("outer")
    assert sim.open_windows == []
    assert outer.duration_s >= a.duration_s + 0.1
    assert a.t1_s > b.t0_s and b.t1_s > a.t1_s  # overlapping
    assert outer.energy_j > a.energy_j > 0 and outer.energy_j > b.energy_j > 0
    assert inner_a.t0_s >= b.t1_s
    m = sim.finish()
    names = [w.name for w in m.phases]
    assert names == ["outer", "a", "b", "a"]
    outer_i = [w.name for w in m.windows].index("outer")
    assert all(w._data["parent"] >= outer_i for w in m.phases[1:])


def test_context_manager_and_its_error_path(sim):
    with sim.window("ok", tokens=3) as w:
        busy(sim, 300, 0.1)
    assert w.result.complete and w.per("tokens") == pytest.approx(w.energy_j / 3)

    with pytest.raises(RuntimeError, match="boom"):
        with sim.window("fails") as bad:
            busy(sim, 300, 0.1)
            raise RuntimeError("boom")
    assert bad.result.complete is False  # closed, marked incomplete
    assert bad.result.energy_j > 0  # what was measured is kept

    with pytest.raises(KeyboardInterrupt):
        with sim.window("interrupted") as ki:
            raise KeyboardInterrupt
    assert ki.result.complete is False
    assert sim.open_windows == []
    m = sim.finish()
    assert not m.complete and "incomplete" in m.incomplete_reason
    assert {w.name: w.complete for w in m.phases} == {"ok": True, "fails": False, "interrupted": False}


def test_window_misuse_raises_window_error(sim):
    with pytest.raises(jouleprof.WindowError, match="no window of that name is open"):
        sim.end_window("never")
    sim.begin_window("x")
    with pytest.raises(jouleprof.WindowError, match=r"open: 'x'"):
        sim.end_window("y")
    sim.end_window("x")
    with pytest.raises(jouleprof.WindowError):
        sim.end_window("x")  # already closed
    with pytest.raises(jouleprof.InvalidArgumentError):
        sim.begin_window("")
    sim.finish()
    with pytest.raises(jouleprof.WindowError, match="finished"):
        sim.begin_window("late")


def test_open_window_at_finish_is_recorded_then_raised(sim, db):
    sim.begin_window("left-open")
    busy(sim, 300, 0.2)
    with pytest.raises(jouleprof.OpenWindowsError, match="left-open") as info:
        sim.finish(store=db, tags={"case": "open"})
    m = info.value.measurement
    assert info.value.run_id == m.run_id and m.run_id is not None
    w = m.window("left-open")
    assert w.complete is False and w.energy_j > 0
    stored = jouleprof.store.open(db).windows(m.run_id, frame=False)
    assert [r["name"] for r in stored if r["kind"] == "phase"] == ["left-open"]


def test_close_open_and_monitor_context():
    with jouleprof.Monitor(device="sim", idle_s=0) as mon:
        with mon.window("a"):
            pass
    assert mon._c.finished  # finished on leaving the block
    with pytest.raises(jouleprof.OpenWindowsError):  # the same rule as finish()
        with jouleprof.Monitor(device="sim", idle_s=0) as mon2:
            mon2.begin_window("left-open")
    with pytest.raises(RuntimeError):  # an exception in the block: open windows closed quietly
        with jouleprof.Monitor(device="sim", idle_s=0) as mon3:
            mon3.begin_window("b")
            raise RuntimeError("in the block")
    assert mon3._c.finished
    m2 = jouleprof.Monitor(device="sim", idle_s=0)
    m2.begin_window("b")
    m = m2.finish(close_open=True)
    assert m.window("b").complete is False and m.window("b").above_idle_j is None  # no baseline


def test_bad_arguments():
    with pytest.raises(jouleprof.InvalidArgumentError, match="device"):
        jouleprof.Monitor(device="gpu")
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        jouleprof.Monitor(device="sim", idle_s=-1)
    with pytest.raises(jouleprof.InvalidArgumentError, match="period_ms"):
        jouleprof.Monitor(device="sim", period_ms=0)
    with pytest.raises(jouleprof.InvalidArgumentError, match="gpus"):
        jouleprof.Monitor(device="sim", gpus=[-1])
    with pytest.raises(jouleprof.NotFoundError, match="scenario"):
        jouleprof.Monitor(device="sim", sim_scenario="/nonexistent/scenario.txt")
    mon = jouleprof.Monitor(device="sim", idle_s=0)
    mon.begin_window("w")
    with pytest.raises(jouleprof.InvalidArgumentError, match="tokens"):
        mon.end_window("w", tokens="many")
    mon.finish(close_open=True)


def test_absent_gpu_and_hidden_gpus_are_different_errors(monkeypatch):
    # An id naming no present GPU is a lookup error (its own error kind in C++, not the message);
    # CUDA_VISIBLE_DEVICES hiding every GPU is "no GPU".
    with pytest.raises(jouleprof.GpuNotFoundError, match="GPU '3' not found") as e:
        jouleprof.Monitor(device="sim", gpus=[3], idle_s=0)
    assert isinstance(e.value, LookupError) and not isinstance(e.value, jouleprof.NoGpuError)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    with pytest.raises(jouleprof.GpuNotFoundError):
        jouleprof.Monitor(device="sim", idle_s=0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    with pytest.raises(jouleprof.NoGpuError, match="hides every GPU") as e:
        jouleprof.Monitor(device="sim", idle_s=0)
    assert "gpus=" in str(e.value) and "--gpus" not in str(e.value), str(e.value)
