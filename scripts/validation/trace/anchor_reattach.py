"""Whose driver-API records does CUPTI keep after it was detached and attached again? (issue 33 (c))

    python anchor_reattach.py SCENARIO    (scripts/device-trace.sh anchorprobe runs each in its own process)

Detaching CUPTI (cuptiFinalize) in the sampled mode's off phase and attaching it again at the next
window was tried (branch research/cupti-detach); the trace's NVTX anchors are the records of
cuDriverGetVersion calls, which must come from the program's thread. Here the main thread plays the
program (it starts CUDA before CUPTI attaches), a second thread the injection library's timer.
CUPTI is driven with ctypes, cuDriverGetVersion called 10 times on each thread per step, the
driver-API records counted per thread (system thread ids). Scenarios, each through two
detach/attach cycles after a first attached step:
  timer_attach_main_switch   the timer attaches and enables the anchor record; main disabled its own
                             before the detach and enables it again after (the detaching build)
  timer_attach_no_switch     the timer attaches and enables; main never switches
  main_attach                main attaches and enables
Prints one line: `anchor_reattach {json}` with each step's counts {"main": n, "timer": n}.
On an H200 (CUDA 13.0, 2026-11-28) main got 0 records in every step of every scenario and the timer
10 of 10: a thread that made CUDA calls before CUPTI attached produces no API records, so after a
detach and an attach the program's anchors are gone (docs/validation/trace.md).
"""
import ctypes
import json
import queue
import sys
import threading

from cupti_buffers import buffer_callbacks

DRIVER, DEVICE, KERNEL = 4, 8, 10
CBID_DRIVER_GET_VERSION = 2
SYSTEM_THREAD_IDS = 1

cupti = ctypes.CDLL("libcupti.so.13")
cuda = ctypes.CDLL("libcuda.so.1")
cupti.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
counts = {}


def completed(ctx, stream, buf, size, valid):
    rec = ctypes.c_void_p()
    while cupti.cuptiActivityGetNextRecord(buf, valid, ctypes.byref(rec)) == 0:
        if ctypes.c_uint32.from_address(rec.value).value == DRIVER:
            tid = ctypes.c_uint32.from_address(rec.value + 28).value
            counts[tid] = counts.get(tid, 0) + 1


REQ, DONE = buffer_callbacks(1 << 20, completed)


class Timer:
    """A thread that runs what it is given, in order (the injection library's timer thread)."""
    def __init__(self):
        self.q = queue.Queue()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while True:
            fn, done = self.q.get()
            fn()
            done.set()

    def run(self, fn):
        done = threading.Event()
        self.q.put((fn, done))
        done.wait()


def attach():
    cupti.cuptiActivityRegisterCallbacks(REQ, DONE)
    cupti.cuptiSetThreadIdType(SYSTEM_THREAD_IDS)
    cupti.cuptiActivityEnable(DEVICE)
    cupti.cuptiActivityEnable(KERNEL)
    anchor_record(True)


def anchor_record(on):
    cupti.cuptiActivityEnableDriverApi(CBID_DRIVER_GET_VERSION, 1 if on else 0)


def anchors():
    v = ctypes.c_int()
    for _ in range(10):
        cuda.cuDriverGetVersion(ctypes.byref(v))


def main():
    scenario = sys.argv[1]
    assert cuda.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    cuda.cuCtxSetCurrent(ctx)
    timer = Timer()
    main_tid, timer_tid = threading.get_native_id(), timer.t.native_id
    out = {}

    def step(label):
        anchors()
        timer.run(anchors)
        cupti.cuptiActivityFlushAll(1)
        out[label] = {"main": counts.get(main_tid, 0), "timer": counts.get(timer_tid, 0)}
        counts.clear()

    attach()  # as initialize() does, on the thread that starts CUDA
    step("attached")
    for cycle in (1, 2):
        if scenario == "timer_attach_main_switch":
            anchor_record(False)  # main's own switch at its first range event of the off phase
        cupti.cuptiActivityFlushAll(1)
        out[f"finalize_rc_{cycle}"] = cupti.cuptiFinalize()
        if scenario == "main_attach":
            attach()
        else:
            timer.run(attach)
        if scenario == "timer_attach_main_switch":
            anchor_record(True)
        step(f"reattached_{cycle}")
    print("anchor_reattach " + json.dumps({"scenario": scenario, **out}), flush=True)


if __name__ == "__main__":
    main()
