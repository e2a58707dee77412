"""The exact replay of the two-class workload's kernels (docs/validation/trace.md, "Two-class
workload, replay-informed"): libjouleprof-twoclass.so (twoclass.cu built with -DTWOCLASS_LIBRARY)
captures one GEMM and one copy call into a CUDA graph, set up as `jouleprof-twoclass` sets them up,
and jouleprof's graph replay measures each alone (paced trials, the GPU's power sensor). The
result is the jouleprof.exact_replay document `jouleprof trace --replay` reads.

    PYTHONPATH=.pydev/py python3 twoclass_replay.py LIB OUT.json
Prints the replay's table; one `twoclass_replay_error ...` line and exit 3 on failure.
"""
import ctypes
import json
import sys


def main():
    lib_path, out = sys.argv[1], sys.argv[2]
    try:
        from jouleprof import _jouleprof
        lib = ctypes.CDLL(lib_path)
        lib.twoclass_capture.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)]
        lib.twoclass_capture.restype = ctypes.c_int
        graph = ctypes.c_ulonglong(0)
        if lib.twoclass_capture(ctypes.byref(graph)) != 0 or graph.value == 0:
            raise RuntimeError("twoclass_capture failed (its reason is on stderr)")
        # Longer trials than a decode step's replay: each class runs for milliseconds per call.
        text = _jouleprof.replay_cuda_graph(graph.value, dict(trials=5, trial_s=0.5, settle_s=0.3, warmup_s=2.0,
                                                              long_trial_s=1.0, row_cap_s=6.0, max_trials=8, graph_ms=20))
    except Exception as e:  # noqa: BLE001 (one line for the step's log)
        print("twoclass_replay_error " + json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        sys.exit(3)
    doc = json.loads(text)
    with open(out, "w") as f:
        f.write(text)
    for row in doc.get("rows", []):
        print(f"twoclass_replay {row.get('status')} {row.get('name')} grid {row.get('grid')} block {row.get('block')}: "
              f"{1e3 * row.get('time_s', 0):.4f} ms/call, {row.get('power_w', 0):.1f} W, {row.get('energy_per_call_j', 0):.5f} J/call",
              flush=True)
    print(f"twoclass_replay idle {doc.get('idle_power_w')} W, gpu {doc.get('gpu')}", flush=True)


if __name__ == "__main__":
    main()
