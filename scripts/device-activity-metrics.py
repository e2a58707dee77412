#!/usr/bin/env python3
"""Activity metrics on the device for three workloads (issue 19): a bf16 GEMM, a memory-bound
copy and LLM decode (transformers, random weights). Sources: NVML utilization (fallback) and NVML
GPM metrics (Hopper: SM, tensor, DRAM activity, the DCGM profiling fields' counterparts); DCGM
and CUPTI PM sampling are probed for presence. Clocks are never changed. Writes JSON to argv[1]."""
import ctypes, ctypes.util, glob, json, os, sys, threading, time
import torch
import pynvml as N

out = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "workloads": {}, "probes": {}}
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
out["gpu"] = N.nvmlDeviceGetName(h)
out["driver"] = N.nvmlSystemGetDriverVersion()

GPM = {"sm_active": 2, "sm_occupancy": 3, "tensor_active": 5, "dram_active": 10, "fp64_active": 11, "fp32_active": 12, "fp16_active": 13}
try:
    gpm_ok = bool(N.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
except Exception as e:
    gpm_ok = False
    out["probes"]["gpm_error"] = repr(e)
out["probes"]["nvml_gpm_supported"] = gpm_ok

def gpm_window(seconds):
    s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    N.nvmlGpmSampleGet(h, s1); time.sleep(seconds); N.nvmlGpmSampleGet(h, s2)
    md = N.c_nvmlGpmMetricsGet_t()
    md.version = N.NVML_GPM_METRICS_GET_VERSION
    md.numMetrics = len(GPM); md.sample1 = s1; md.sample2 = s2
    for i, mid in enumerate(GPM.values()): md.metrics[i].metricId = mid
    N.nvmlGpmMetricsGet(md)
    res = {k: round(md.metrics[i].value / 100.0, 4) for i, k in enumerate(GPM)}
    N.nvmlGpmSampleFree(s1); N.nvmlGpmSampleFree(s2)
    return res

def measure(name, fn, seconds=6.0):
    stop = threading.Event()
    def loop():
        while not stop.is_set(): fn()
        torch.cuda.synchronize()
    t = threading.Thread(target=loop); t.start()
    time.sleep(1.0)
    util, gpm = [], []
    t_end = time.time() + seconds
    while time.time() < t_end:
        u = N.nvmlDeviceGetUtilizationRates(h)
        util.append((u.gpu, u.memory))
        if gpm_ok:
            try: gpm.append(gpm_window(0.5))
            except Exception as e: out["probes"]["gpm_get_error"] = repr(e); time.sleep(0.5)
        else: time.sleep(0.5)
    clk = N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM); pw = N.nvmlDeviceGetPowerUsage(h) / 1000
    stop.set(); t.join()
    r = {"nvml_utilization": {"source": "nvmlDeviceGetUtilizationRates", "gpu_pct_mean": sum(a for a, _ in util) / len(util),
                              "memory_pct_mean": sum(b for _, b in util) / len(util), "samples": len(util)},
         "sm_clock_mhz": clk, "power_w": pw}
    if gpm:
        r["nvml_gpm"] = {"source": "nvmlGpmMetricsGet (0.5 s windows)", "windows": len(gpm),
                         **{k: round(sum(g[k] for g in gpm) / len(gpm), 4) for k in GPM}}
    out["workloads"][name] = r
    print(name, json.dumps(r), flush=True)

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
measure("gemm_bf16_8192", lambda: torch.matmul(a, b))
del a, b
x = torch.empty(1 << 28, device="cuda", dtype=torch.float32); y = torch.empty_like(x)
measure("copy_1GiB", lambda: y.copy_(x))
del x, y
try:
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                      num_key_value_heads=8, vocab_size=128256)
    model = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, 1000, (1, 128), device="cuda")
    def decode():
        with torch.no_grad(): model.generate(ids, max_new_tokens=64, min_new_tokens=64, do_sample=False)
    measure("llm_decode_llama1b_shape_random_weights_b1", decode, seconds=8.0)
except Exception as e:
    out["workloads"]["llm_decode"] = {"error": repr(e)}

# DCGM: a host engine or library?
out["probes"]["dcgm_libs"] = sorted(set(glob.glob("/usr/lib/x86_64-linux-gnu/libdcgm*") + glob.glob("/usr/local/dcgm*/lib*/libdcgm*")))
out["probes"]["nv_hostengine"] = any(os.path.exists(os.path.join(p, "nv-hostengine")) for p in os.environ.get("PATH", "").split(":"))
# CUPTI PM sampling: the library, its entry points, and the profiling permission.
cupti = [p for p in glob.glob("/usr/local/cuda*/**/libcupti.so*", recursive=True)]
out["probes"]["cupti_libs"] = cupti[:4]
if cupti:
    lib = ctypes.CDLL(cupti[0])
    out["probes"]["cupti_pm_sampling_symbols"] = {s: hasattr(lib, s) for s in ["cuptiPmSamplingSetConfig", "cuptiPmSamplingEnable", "cuptiPmSamplingStart", "cuptiPmSamplingDecodeData"]}
try:
    out["probes"]["RmProfilingAdminOnly"] = [l.strip() for l in open("/proc/driver/nvidia/params") if "Profiling" in l]
except Exception as e:
    out["probes"]["RmProfilingAdminOnly"] = repr(e)
out["probes"]["uid"] = os.getuid()
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps(out["probes"]))
