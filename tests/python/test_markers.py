"""jouleprof.markers under `jouleprof measure` (phases with counts) and outside it (no-op)."""
import json
import subprocess
import sys

from conftest import cli, python

import jouleprof

SCRIPT = """
import time
from jouleprof import markers
assert markers.enabled()
with markers.phase("prefill", tokens=7):
    time.sleep(0.2)
markers.begin("decode"); time.sleep(0.3); markers.end("decode")
markers.count("tokens", 3, "decode")
"""


def test_markers_under_measure(tmp_path):
    out = tmp_path / "m.json"
    script = tmp_path / "w.py"
    script.write_text(SCRIPT)
    cli("measure", "--device", "sim", "--idle", "0", "--no-store", "--json", str(out), "-q", "--",
        sys.executable, str(script))
    result = json.loads(out.read_text())
    phases = {w["name"]: w for w in result["windows"] if w["kind"] == "phase"}
    assert set(phases) == {"prefill", "decode"}
    assert phases["prefill"]["counts"] == {"tokens": 7.0} and phases["decode"]["counts"] == {"tokens": 3.0}
    assert 0.18 < phases["prefill"]["duration_s"] < 0.5


def test_markers_are_a_no_op_outside_measure():
    p = python("from jouleprof import markers\nassert not markers.enabled()\n"
               "with markers.phase('x', tokens=1): pass\nprint('ok')",
               {"JOULEPROF_MARKERS": ""})
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr


def test_marker_names_are_checked():
    import pytest
    with pytest.raises(jouleprof.InvalidArgumentError):
        jouleprof.markers.begin("two words")
