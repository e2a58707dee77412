"""Carbon and cost in the Python API (issue 35): Monitor(carbon_intensity=, price=, carbon_source=)
and $JOULEPROF_CARBON_INTENSITY / $JOULEPROF_PRICE, as `jouleprof measure` has them: every window
and the result carry gCO2e and cost with the energy's uncertainty, in the CLI JSON's words."""
import json
import time

import pytest

import jouleprof

J_PER_KWH = 3.6e6


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch, tmp_path):
    """No config file or variable of the machine running the tests leaks in."""
    monkeypatch.setenv("JOULEPROF_CONFIG", str(tmp_path / "no-config"))
    for var in ("JOULEPROF_CARBON_INTENSITY", "JOULEPROF_PRICE", "JOULEPROF_CARBON_SOURCE"):
        monkeypatch.delenv(var, raising=False)


def measured(**kwargs):
    mon = jouleprof.Monitor(device="sim", idle_s=0, period_ms=50, **kwargs)
    mon.set_sim_power(400)
    with mon.window("decode", tokens=64) as w:
        time.sleep(0.3)
    return mon, w.result, mon.finish()


def test_arguments_give_gco2e_and_cost_with_the_energys_uncertainty():
    mon, w, m = measured(carbon_intensity=400, price=0.3, carbon_source="grid operator 2025")
    kwh = w.energy_j / J_PER_KWH
    assert w.energy_j > 0 and w.uncertainty_j > 0
    assert w.gco2e == pytest.approx(kwh * 400)
    assert w.gco2e_uncertainty == pytest.approx(w.uncertainty_j / J_PER_KWH * 400)
    assert w.cost == pytest.approx(kwh * 0.3)
    assert w.cost_uncertainty == pytest.approx(w.uncertainty_j / J_PER_KWH * 0.3)
    per = w.footprint["per"]["token"]
    assert per["gco2e"] == pytest.approx(w.gco2e / 64)
    assert per["cost_uncertainty"] == pytest.approx(w.cost_uncertainty / 64)

    # The result's section, as in `measure --json`; the window after finish() says the same.
    fp = m.footprint
    assert fp["schema"] == "jouleprof.footprint/1"
    assert fp["carbon_intensity_g_per_kwh"] == 400 and fp["price_per_kwh"] == 0.3
    assert fp["carbon_intensity_source"] == "carbon_intensity: grid operator 2025"
    assert fp["price_source"] == "price"
    decode = m.window("decode")
    assert decode.gco2e == pytest.approx(w.gco2e)
    assert [x["name"] for x in fp["windows"]] == [x.name for x in m.windows]
    assert json.loads(m.to_json())["footprint"] == fp


def test_same_words_as_the_cli_json(tmp_path):
    from conftest import cli
    out = tmp_path / "r.json"
    cli("measure", "--device", "sim", "--idle", "0", "--no-store", "-q", "--carbon-intensity", "400", "--price", "0.3",
        "--json", str(out), "--", "sleep", "0.1")
    from_cli = json.loads(out.read_text())["footprint"]
    _, w, m = measured(carbon_intensity=400, price=0.3)
    assert set(m.footprint) == set(from_cli)
    assert set(m.footprint["windows"][0]) == set(from_cli["windows"][0])
    assert set(w.footprint) <= set(from_cli["windows"][0]) | {"per"}


def test_environment_as_the_cli(monkeypatch):
    monkeypatch.setenv("JOULEPROF_CARBON_INTENSITY", "250")
    monkeypatch.setenv("JOULEPROF_PRICE", "0.12")
    _, w, m = measured()
    assert w.gco2e == pytest.approx(w.energy_j / J_PER_KWH * 250)
    assert w.cost == pytest.approx(w.energy_j / J_PER_KWH * 0.12)
    assert m.footprint["carbon_intensity_source"] == "$JOULEPROF_CARBON_INTENSITY"
    assert m.footprint["price_source"] == "$JOULEPROF_PRICE"
    # An argument wins over the environment, as a flag does.
    _, w, m = measured(carbon_intensity=100)
    assert w.gco2e == pytest.approx(w.energy_j / J_PER_KWH * 100)
    assert m.footprint["carbon_intensity_source"] == "carbon_intensity"


def test_none_without_settings_and_stored_with_the_run(db):
    _, w, m = measured()
    assert w.gco2e is None and w.cost is None and w.footprint is None and m.footprint is None
    _, w, m = measured(price=0.5)
    assert w.gco2e is None and w.cost > 0
    run = m.store(db)
    back = jouleprof.store.open(db).measurement(run)
    assert back.footprint == m.footprint


def test_bad_values_in_pythons_words(monkeypatch):
    with pytest.raises(jouleprof.InvalidArgumentError, match=r"^carbon_intensity must be a number from 0 to 5000"):
        jouleprof.Monitor(device="sim", idle_s=0, carbon_intensity=-1)
    with pytest.raises(jouleprof.InvalidArgumentError, match="price must be a number, not '0.3'"):
        jouleprof.Monitor(device="sim", idle_s=0, price="0.3")
    with pytest.raises(jouleprof.InvalidArgumentError, match="^carbon_source is given without a carbon intensity"):
        jouleprof.Monitor(device="sim", idle_s=0, carbon_source="grid")
    monkeypatch.setenv("JOULEPROF_PRICE", "cheap")
    with pytest.raises(jouleprof.InvalidArgumentError, match=r"\$JOULEPROF_PRICE must be a number .* got 'cheap'"):
        jouleprof.Monitor(device="sim", idle_s=0)
