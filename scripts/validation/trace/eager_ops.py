"""Per-op cost of eager PyTorch launches, for `scripts/device-trace.sh sampledcost` (issue 33 (c)).

    python eager_ops.py [--ops N] [--reps R] [--cupti-steps [--hf]] [--phases SECONDS]

One tiny in-place op (`x.add_(1)`, one kernel launch) N times, synchronised, best and median of
R repetitions, in µs per op: `plain`, then `nvtx` (each op inside an NVTX push/pop, as
jouleprof.torch.annotate brackets modules), then `copy` (every 16th op followed by a 4-byte
device-to-host copy, as generate()'s stopping checks do). Under `jouleprof trace` each figure
carries the tracer's per-launch cost; a launch-bound loop shows it without generate()'s Python
spread. Prints one line: `eager_ops {json}`.

--cupti-steps (not under `jouleprof trace`): CUPTI driven from this process (ctypes on
libcupti.so.13) through the states a sampled trace passes, the per-op cost measured after each,
in one process, so the host's process-to-process spread drops out: none (twice, the drift), DEVICE
records only (the NVTX-only floor's CUPTI), the anchor call's driver-API record switched on and off,
kernel records on, off, then every kind a trace records on and off, then CUPTI detached
(cuptiFinalize) and attached again, then detached once more and only cuptiGetTimestamp called
(does it attach CUPTI again?); CUPTI's clock against the host's. Which switch leaves a cost behind once it is off is the off
phase's extra cost. `--cupti-steps context` switches the kernel and copy records for this
process's context alone (cuptiActivityEnableContext), the alternative to the global switch;
`--cupti-steps product` the sampled mode's own switches, each from the thread that makes it
(cupti_product_steps). With
--hf, the figure of each state is the small NVTX-annotated HF Llama's generate() (hf_generate.py
--small --annotate --gen 32), best and median of --reps calls, in ms, instead of the tiny ops.

--phases SECONDS: where in the sampled mode's cycle the cost falls, within one process. The
NVTX-bracketed op (every 16th followed by a copy) in synchronised batches of --batch ops for
SECONDS; each batch is placed in the duty cycle of $JOULEPROF_TRACE_SAMPLE and
$JOULEPROF_TRACE_SAMPLE_PERIOD_MS (the injection's windows start at multiples of the period in
CLOCK_REALTIME; unset: a nominal 10% of 1 s, `"nominal": true`): `window` (inside a recording
window), `after` (the tenth of a period after a window's end), `off` (the rest), and
`before_first` (batches before the loop's first window: the process before any record was switched
on, the sampled mode's own floor in the same process). Per class: batches, median wall and
thread-CPU µs per op. Prints `eager_ops_phases {json}`.
"""
import argparse
import ctypes
import json
import os
import statistics
import time

import torch

from cupti_buffers import buffer_callbacks


def timed(fn, ops, reps):
    fn(min(ops, 2000))  # warm
    torch.cuda.synchronize()
    per = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(ops)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / ops * 1e6)
    return {"best_us": min(per), "median_us": statistics.median(per)}


# CUPTI activity kinds and the anchor's driver callback id (cupti_activity.h, cupti_driver_cbid.h, CUDA 13).
MEMCPY, MEMSET, DEVICE, KERNEL, MEMCPY2, GRAPH_TRACE = 1, 2, 8, 10, 22, 51
CBID_DRIVER_GET_VERSION = 2


def attached_with_devices(cupti, cbs, measure):
    """Both step sequences' start: without CUPTI (twice: the drift), then attached with DEVICE
    records only (the NVTX-only floor's CUPTI). Returns the figures so far."""
    out = {"none": measure(), "none_again": measure()}
    assert cupti.cuptiActivityRegisterCallbacks(*cbs) == 0, "cuptiActivityRegisterCallbacks"
    cupti.cuptiActivityEnable(DEVICE)
    out["device_only"] = measure()
    return out


def cupti_steps(measure):
    """The per-op figures after each CUPTI switch, in order (see the module's docstring)."""
    cupti = ctypes.CDLL("libcupti.so.13")
    cuda = ctypes.CDLL("libcuda.so.1")
    cbs = buffer_callbacks(4 << 20)
    out = attached_with_devices(cupti, cbs, measure)
    cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 1)
    v = ctypes.c_int()
    cuda.cuDriverGetVersion(ctypes.byref(v))
    out["anchor_record_on"] = measure()
    cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 0)
    out["anchor_record_off"] = measure()
    cupti.cuptiActivityEnable(KERNEL)
    out["kernel_on"] = measure()
    cupti.cuptiActivityDisable(KERNEL)
    out["kernel_off"] = measure()
    for k in (KERNEL, MEMCPY, MEMCPY2, MEMSET, GRAPH_TRACE):
        cupti.cuptiActivityEnable(k)
    out["all_on"] = measure()
    for k in (KERNEL, MEMCPY, MEMCPY2, MEMSET, GRAPH_TRACE):
        cupti.cuptiActivityDisable(k)
    cupti.cuptiActivityFlushAll(1)
    out["all_off"] = measure()
    # Detached (the only way back to a process CUPTI never recorded in), called here between
    # synchronised measurements, where no CUDA call runs; then attached again, recording.
    out["clock"] = cupti_clock(cupti)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out["detach_rc"] = cupti.cuptiFinalize()
    out["detach_ms"] = (time.perf_counter() - t0) * 1e3
    out["detached"] = measure()
    t0 = time.perf_counter()
    cupti.cuptiActivityRegisterCallbacks(*cbs)
    for k in (DEVICE, KERNEL, MEMCPY, MEMCPY2, MEMSET, GRAPH_TRACE):
        cupti.cuptiActivityEnable(k)
    out["attach_ms"] = (time.perf_counter() - t0) * 1e3
    out["attached_again_on"] = measure()
    # Detached a second time, then only cuptiGetTimestamp called: whether that attaches CUPTI
    # again (and its cost comes back), i.e. whether NVTX timestamps may come from CUPTI's clock
    # while detached.
    for k in (KERNEL, MEMCPY, MEMCPY2, MEMSET, GRAPH_TRACE):
        cupti.cuptiActivityDisable(k)
    cupti.cuptiActivityFlushAll(1)
    torch.cuda.synchronize()
    out["detach_again_rc"] = cupti.cuptiFinalize()
    out["detached_again"] = measure()
    t0 = time.perf_counter()
    out["clock_detached"] = cupti_clock(cupti)
    out["timestamp_detached_ms"] = (time.perf_counter() - t0) * 1e3
    out["after_timestamp"] = measure()
    return out


def cupti_clock(cupti):
    """cuptiGetTimestamp against CLOCK_REALTIME and CLOCK_MONOTONIC, bracketed: the offsets in ns
    (their spread over 5 readings), and how long one call took."""
    ts = ctypes.c_uint64()
    real, mono, took = [], [], []
    for _ in range(5):
        r0, m0 = time.clock_gettime_ns(time.CLOCK_REALTIME), time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        cupti.cuptiGetTimestamp(ctypes.byref(ts))
        r1, m1 = time.clock_gettime_ns(time.CLOCK_REALTIME), time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        real.append(ts.value - (r0 + r1) // 2)
        mono.append(ts.value - (m0 + m1) // 2)
        took.append(r1 - r0)
    return {"minus_realtime_ns": [min(real), max(real)], "minus_monotonic_ns": [min(mono), max(mono)],
            "call_ns": [min(took), max(took)]}


def context_libraries():
    """libcupti, libcuda and this thread's current CUDA context (the per-context steps switch it)."""
    cupti = ctypes.CDLL("libcupti.so.13")
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    assert cuda.cuCtxGetCurrent(ctypes.byref(ctx)) == 0 and ctx.value, "no current CUDA context"
    return cupti, cuda, ctx


def cupti_context_steps(measure):
    """--cupti-steps context: kernel and copy records switched for this process's context only
    (cuptiActivityEnableContext / DisableContext) instead of globally: whether that leaves the
    same cost once off."""
    cupti, _, ctx = context_libraries()
    out = attached_with_devices(cupti, buffer_callbacks(4 << 20), measure)
    kinds = (KERNEL, MEMCPY, MEMCPY2, MEMSET)
    out["enable_rc"] = [cupti.cuptiActivityEnableContext(ctx, k) for k in kinds]
    out["context_on"] = measure()
    for k in kinds:
        cupti.cuptiActivityDisableContext(ctx, k)
    cupti.cuptiActivityFlushAll(1)
    out["context_off"] = measure()
    return out


def cupti_product_steps(measure, windows=3):
    """--cupti-steps product: the sampled mode's own sequence (src/trace/inject/inject.cpp), each
    switch where the injection makes it: after the DEVICE-only floor, the anchor call's driver-API
    record enabled (initialize()), then switched off by this thread (the program's thread at its
    first range event of an off phase); then `windows` times: the sampled kinds (kernel, copies,
    memset, graph trace) enabled for the context by another thread (the timer thread; a kind
    refused per context is enabled globally, as the injection does), one anchor call there,
    this thread's anchor record on, measured (`window_i`); the kinds off and a flush from the other
    thread, this thread's anchor record off, measured (`off_i`). Which state leaves the off phase
    above the floor."""
    import threading
    cupti, cuda, ctx = context_libraries()
    out = attached_with_devices(cupti, buffer_callbacks(4 << 20), measure)
    v = ctypes.c_int()
    cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 1)
    out["anchor_record_on"] = measure()
    cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 0)
    out["anchor_record_off"] = measure()
    kinds = (KERNEL, MEMCPY, MEMCPY2, MEMSET, GRAPH_TRACE)
    global_kinds = []

    def on_timer_thread(fn):
        t = threading.Thread(target=fn)
        t.start()
        t.join()

    def window_on():
        tried = [k for k in kinds if k not in global_kinds]
        rcs = [cupti.cuptiActivityEnableContext(ctx, k) for k in tried]
        global_kinds.extend(k for k, rc in zip(tried, rcs) if rc != 0)
        for k in global_kinds:
            cupti.cuptiActivityEnable(k)
        cuda.cuDriverGetVersion(ctypes.byref(v))
        out.setdefault("enable_context_rc", dict(zip(map(str, tried), rcs)))  # the first window's: every kind tried

    def window_off():
        for k in kinds:
            if k in global_kinds:
                cupti.cuptiActivityDisable(k)
            else:
                cupti.cuptiActivityDisableContext(ctx, k)
        cupti.cuptiActivityFlushAll(0)

    for w in range(1, windows + 1):
        on_timer_thread(window_on)
        cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 1)
        out[f"window_{w}"] = measure()
        on_timer_thread(window_off)
        cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 0)
        out[f"off_{w}"] = measure()
    out["switched_globally"] = [str(k) for k in global_kinds]
    return out


def hf_measure(reps):
    """generate() of the small annotated Llama as hf_generate.py times it: best and median in ms."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
    import jouleprof.torch as jt
    from hf_generate import build
    model = build(small=True)
    jt.annotate(model, depth=4)
    ids = torch.randint(0, 32000, (1, 128), device="cuda")
    kw = dict(max_new_tokens=32, min_new_tokens=32, do_sample=False, pad_token_id=0)  # as hf_generate.py
    with torch.no_grad():
        model.generate(ids, **kw)

    def measure():
        t = []
        with torch.no_grad():
            for _ in range(reps):
                t0 = time.perf_counter()
                model.generate(ids, **kw)
                torch.cuda.synchronize()
                t.append((time.perf_counter() - t0) * 1e3)
        return {"generate": {"best_ms": min(t), "median_ms": statistics.median(t)}}
    return measure


def phase_of(t_ns, period_ns, on_ns):
    """The duty cycle's class of a moment (CLOCK_REALTIME ns): window, after (the tenth of a period
    after a window's end) or off."""
    ph = t_ns % period_ns
    return "window" if ph < on_ns else "after" if ph < on_ns + period_ns // 10 else "off"


def phases(step, seconds, batch, env=None):
    """--phases: `step(n)` in batches, each classed by where it falls in the duty cycle."""
    env = os.environ if env is None else env
    nominal = "JOULEPROF_TRACE_SAMPLE" not in env
    percent = float(env.get("JOULEPROF_TRACE_SAMPLE", 10))
    period_ns = int(float(env.get("JOULEPROF_TRACE_SAMPLE_PERIOD_MS", 1000)) * 1e6)
    on_ns = int(period_ns * percent / 100)
    step(batch)  # warm
    torch.cuda.synchronize()
    per = {"before_first": [], "window": [], "after": [], "off": []}
    seen_window = False
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        r0, t0, c0 = time.time_ns(), time.perf_counter(), time.thread_time()
        step(batch)
        torch.cuda.synchronize()
        wall, cpu, r1 = time.perf_counter() - t0, time.thread_time() - c0, time.time_ns()
        a, b = phase_of(r0, period_ns, on_ns), phase_of(r1, period_ns, on_ns)
        seen_window = seen_window or "window" in (a, b)
        if a == b:  # a batch across a class boundary counts in neither
            per[a if seen_window else "before_first"].append((wall / batch * 1e6, cpu / batch * 1e6))
    out = {"nominal": nominal, "percent": percent, "period_ms": period_ns / 1e6, "batch": batch}
    for k, v in per.items():
        out[k] = {"n": len(v)}
        if v:
            out[k].update(wall_us=statistics.median(w for w, _ in v), cpu_us=statistics.median(c for _, c in v))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cupti-steps", nargs="?", const="global", choices=["global", "context", "product"],
                    help="CUPTI switched from this process (see above); context: per-context switches")
    ap.add_argument("--hf", action="store_true", help="with --cupti-steps: each state timed on HF generate()")
    ap.add_argument("--phases", type=float, metavar="SECONDS", help="the per-op cost by place in the duty cycle (above)")
    ap.add_argument("--batch", type=int, default=200, help="with --phases: ops per timed batch")
    a = ap.parse_args()
    x = torch.zeros(256, device="cuda")
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop

    def plain(n):
        for _ in range(n):
            x.add_(1.0)

    def nvtx(n):
        for _ in range(n):
            push("op")
            x.add_(1.0)
            pop()

    def copy(n):
        for i in range(n):
            x.add_(1.0)
            if i % 16 == 15:
                x[0].item()

    def nvtx_copy(n):
        for i in range(n):
            push("op")
            x.add_(1.0)
            pop()
            if i % 16 == 15:
                x[0].item()

    if a.phases:
        print("eager_ops_phases " + json.dumps(phases(nvtx_copy, a.phases, a.batch)), flush=True)
        return

    def measure():
        return {name: timed(fn, a.ops, a.reps) for name, fn in (("plain", plain), ("nvtx", nvtx), ("copy", copy))}

    if a.hf:
        measure = hf_measure(a.reps)
    steps = {"global": cupti_steps, "context": cupti_context_steps, "product": cupti_product_steps}.get(a.cupti_steps)
    res = steps(measure) if steps else measure()
    print(("eager_ops_cupti " if a.cupti_steps else "eager_ops ") + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
