"""GPU selection through the real NVML loader against the fake libnvidia-ml: no GPU, unknown GPU."""
import os

import pytest

from conftest import python

FAKE = os.environ.get("JOULEPROF_TEST_FAKE_NVML")
pytestmark = pytest.mark.skipif(not FAKE, reason="run through ctest (fake libnvidia-ml path)")


def test_no_driver_raises_no_gpu_error():
    code = ("import jouleprof\n"
            "try:\n jouleprof.Monitor(idle_s=0)\n"
            "except jouleprof.NoGpuError as e:\n print('NoGpuError:', e)\n")
    p = python(code, {"JOULEPROF_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"})
    assert p.returncode == 0, p.stderr
    assert "NoGpuError:" in p.stdout and "sim" in p.stdout
    # Python's words, not the command line's (issue 35 item 6).
    assert 'Monitor(device="sim")' in p.stdout and "--device" not in p.stdout, p.stdout


def test_driver_init_failure_raises_no_gpu_error():
    code = ("import jouleprof\n"
            "try:\n jouleprof.Monitor(device='nvml', idle_s=0)\n"
            "except jouleprof.NoGpuError as e:\n print('NoGpuError:', e)\n")
    p = python(code, {"JOULEPROF_NVML_LIB": FAKE, "JOULEPROF_FAKE_NVML_INIT_ERROR": "9"})
    assert p.returncode == 0, p.stderr
    assert "NoGpuError:" in p.stdout


def test_unknown_gpu_index_and_fake_nvml_window():
    code = ("import time, jouleprof\n"
            "try:\n jouleprof.Monitor(device='nvml', gpus=[7], idle_s=0)\n"
            "except jouleprof.GpuNotFoundError as e:\n print('GpuNotFoundError:', e)\n"
            "mon = jouleprof.Monitor(device='nvml', gpus=[0], idle_s=0)\n"
            "mon.begin_window('w'); time.sleep(0.3); r = mon.end_window('w')\n"
            "print('energy', r.energy_j > 0, r.method, list(r.gpu_energy_j), mon.simulated)\n"
            "mon.finish()\n")
    p = python(code, {"JOULEPROF_NVML_LIB": FAKE})
    assert p.returncode == 0, p.stderr
    assert "GpuNotFoundError:" in p.stdout
    assert "energy True timeline [0] False" in p.stdout
