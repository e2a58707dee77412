#!/usr/bin/env python3
"""Calibration and validation measurements for `jouleprof estimate` on one NVIDIA GPU.

Run under `jouleprof measure` (scripts/device-estimate.sh): every phase is one marker window
(`begin NAME t=...` / `end NAME t=...`, written after cudaDeviceSynchronize) so jouleprof
measures its energy; this script records the iteration count, latency and shape of each phase
(and, as a cross-check, NVML's energy counter read outside the window edges) into a JSON file.

Usage: estimate_calib.py OUT.json [--onnx-dir DIR] [--seconds S] [--set calib|blind2]
Every phase runs about S seconds (default 2.5) after a warm-up; phases that fail are recorded
with their error and the script goes on.

Sets: `calib` (default) is the calibration set of 2026-11-22 (train and test items). `blind2` is
a second held-out set whose items were chosen and committed before it was first measured, and
whose results are never used to fit or change the model (docs/validation/estimate.md): other
GEMM shapes, other sizes of the memory-bound ops, other attention shapes, Llama-3.2-1B at other
batches/lengths, Llama-3.2-3B, BERT-base and vision networks the calibration never saw.
"""
import json
import math
import os
import sys
import time
import traceback

import torch

OUT = sys.argv[1]
ONNX_DIR = None
SECONDS = 2.5
SET = "calib"
args = sys.argv[2:]
while args:
    a = args.pop(0)
    if a == "--onnx-dir":
        ONNX_DIR = args.pop(0)
    elif a == "--seconds":
        SECONDS = float(args.pop(0))
    elif a == "--set":
        SET = args.pop(0)

_mk = os.environ.get("JOULEPROF_MARKERS")
_mf = open(_mk, "w", buffering=1) if _mk else None


def marker(line):
    if _mf:
        _mf.write(line + "\n")
        _mf.flush()


try:
    import pynvml
    pynvml.nvmlInit()
    _h = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception:  # the cross-check is optional
    pynvml = None
    _h = None


def nvml(fn, *a):
    try:
        return fn(_h, *a) if _h is not None else None
    except Exception:
        return None


if SET not in ("calib", "blind2"):
    sys.exit(f"estimate_calib.py: unknown --set {SET} (calib or blind2)")
results = {"schema_version": 1, "set": SET, "torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(0), "started_unix_s": time.time(), "phases": []}
if pynvml:
    results["driver"] = pynvml.nvmlSystemGetDriverVersion()
    results["power_limit_w"] = (nvml(pynvml.nvmlDeviceGetEnforcedPowerLimit) or 0) / 1000


def save():
    with open(OUT + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
    os.replace(OUT + ".tmp", OUT)


def phase(name, fn, split, **meta):
    """Runs fn repeatedly for ~SECONDS inside a marker window; records latency per call."""
    rec = {"name": name, "split": split, **meta}
    try:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        k = 0
        while k < 3 or time.perf_counter() - t0 < 0.2:
            fn()
            k += 1
            if k % 4 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / k
        n = max(3, int(SECONDS / dt))
        e0 = nvml(pynvml.nvmlDeviceGetTotalEnergyConsumption) if pynvml else None
        torch.cuda.synchronize()
        w0 = time.time()
        t0 = time.perf_counter()
        marker(f"begin {name} t={w0:.6f}")
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        w1 = time.time()
        marker(f"end {name} t={w1:.6f}")
        e1 = nvml(pynvml.nvmlDeviceGetTotalEnergyConsumption) if pynvml else None
        rec.update(iters=n, duration_s=t1 - t0, latency_s=(t1 - t0) / n, t0_unix_s=w0, t1_unix_s=w1)
        if e0 is not None and e1 is not None:
            rec["nvml_counter_energy_j"] = (e1 - e0) / 1000.0
        if pynvml:
            rec["sm_clock_mhz"] = nvml(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM)
            rec["temperature_c"] = nvml(pynvml.nvmlDeviceGetTemperature, pynvml.NVML_TEMPERATURE_GPU)
            rec["power_avg_w"] = (nvml(pynvml.nvmlDeviceGetPowerUsage) or 0) / 1000
        print(f"{name:32s} {split:5s} n={n:6d} lat={rec['latency_s']*1e3:9.4f} ms "
              f"E/iter={rec.get('nvml_counter_energy_j', float('nan'))/n*1e3:9.3f} mJ "
              f"clk={rec.get('sm_clock_mhz')} T={rec.get('temperature_c')}", flush=True)
    except Exception as e:  # keep going: one failed phase must not lose the others
        rec["error"] = f"{type(e).__name__}: {e}"
        print(f"{name}: FAILED {rec['error']}", flush=True)
        traceback.print_exc()
    results["phases"].append(rec)
    save()


dev = torch.device("cuda")
bf16 = torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def llama_config(name):
    from transformers import LlamaConfig
    dims = {"llama-3.2-1b": (2048, 8192, 16, 32, 64), "llama-3.2-3b": (3072, 8192, 28, 24, 128)}[name]
    cfg = LlamaConfig(hidden_size=dims[0], intermediate_size=dims[1], num_hidden_layers=dims[2],
                      num_attention_heads=dims[3], num_key_value_heads=8, head_dim=dims[4],
                      vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
                      rms_norm_eps=1e-5, tie_word_embeddings=True)
    cfg._attn_implementation = "sdpa"
    return cfg


def new_cache(cfg):
    from transformers import DynamicCache
    try:
        return DynamicCache(config=cfg)
    except TypeError:
        return DynamicCache()


def llama_phases(name, tag, prefills, decodes, split, profile_key=None):
    """Prefill (logits of the last position only) and decode steps (DynamicCache cropped back);
    with profile_key, the CUDA kernels of one batch-1 decode step at context 512 (for the
    estimator's dispatch model) go into results[profile_key]."""
    from transformers import LlamaForCausalLM
    cfg = llama_config(name)
    with torch.device(dev):
        model = LlamaForCausalLM(cfg).to(bf16).eval()
    for B_, P in prefills:
        ids = torch.randint(0, 128000, (B_, P), device=dev)
        phase(f"{tag}_prefill_b{B_}_p{P}", lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1),
              split, kind="llama_prefill", model=name, batch=B_, prompt=P)
    for B_, Cx in decodes:
        ids = torch.randint(0, 128000, (B_, Cx), device=dev)
        cache = new_cache(cfg)
        model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        tok = torch.randint(0, 128000, (B_, 1), device=dev)

        def step():
            model(input_ids=tok, past_key_values=cache, use_cache=True)
            cache.crop(Cx)
        phase(f"{tag}_decode_b{B_}_c{Cx}", step, split, kind="llama_decode", model=name, batch=B_, context=Cx)
        del cache
    if profile_key:
        try:
            from torch.profiler import profile, ProfilerActivity
            ids = torch.randint(0, 128000, (1, 512), device=dev)
            cache = new_cache(cfg)
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
            tok = torch.randint(0, 128000, (1, 1), device=dev)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                model(input_ids=tok, past_key_values=cache, use_cache=True)
                torch.cuda.synchronize()
            results[profile_key] = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        except Exception as e:
            results["profile_error"] = str(e)
    del model
    torch.cuda.empty_cache()


def sdpa_phases(shapes):
    """PyTorch SDPA (flash) over (B, H, Sq, Skv, D, causal, split) shapes."""
    F = torch.nn.functional
    for (B_, H, Sq, Skv, D, causal, split) in shapes:
        q = torch.randn(B_, H, Sq, D, device=dev, dtype=bf16)
        k = torch.randn(B_, H, Skv, D, device=dev, dtype=bf16)
        v = torch.randn(B_, H, Skv, D, device=dev, dtype=bf16)
        phase(f"sdpa_b{B_}_h{H}_q{Sq}_kv{Skv}_d{D}{'_causal' if causal else ''}",
              lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), split,
              kind="attention", B=B_, H=H, Sq=Sq, Skv=Skv, D=D, causal=causal, dtype="bf16")
        del q, k, v
    torch.cuda.empty_cache()


def warm_up():
    """~5 s of large GEMMs so clocks and temperature are at their working state."""
    a = torch.randn(8192, 8192, device=dev, dtype=bf16)
    t_end = time.time() + 5
    while time.time() < t_end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
    del a


def blind2():
    """The second held-out set (chosen before its first measurement; never fitted)."""
    S = "blind"
    warm_up()
    for M, N, K in [(3072, 3072, 3072), (1, 8192, 8192), (2, 2048, 2048), (64, 14336, 4096),
                    (2048, 512, 2048), (12288, 4096, 1024), (4, 128256, 2048), (768, 768, 3072)]:
        A = torch.randn(M, K, device=dev, dtype=bf16)
        B = torch.randn(K, N, device=dev, dtype=bf16)
        C = torch.empty(M, N, device=dev, dtype=bf16)
        phase(f"gemm_bf16_{M}x{N}x{K}", lambda: torch.mm(A, B, out=C), S, kind="gemm", M=M, N=N, K=K, dtype="bf16")
        del A, B, C
    A = torch.randn(2048, 2048, device=dev)
    B = torch.randn(2048, 2048, device=dev)
    C = torch.empty(2048, 2048, device=dev)
    phase("gemm_fp32_2048x2048x2048", lambda: torch.mm(A, B, out=C), S, kind="gemm", M=2048, N=2048, K=2048,
          dtype="fp32")
    del A, B, C
    n = 64 * 1024 * 1024
    x = torch.randn(n, device=dev, dtype=bf16)
    y = torch.randn(n, device=dev, dtype=bf16)
    z = torch.empty(n, device=dev, dtype=bf16)
    phase("copy_bf16_64M", lambda: z.copy_(x), S, kind="copy", elements=n, dtype="bf16")
    phase("add_bf16_64M", lambda: torch.add(x, y, out=z), S, kind="add", elements=n, dtype="bf16")
    m = 1024 * 1024
    phase("relu_bf16_1M", lambda: torch.clamp_min(x[:m], 0, out=z[:m]), S, kind="relu", elements=m, dtype="bf16")
    x2 = x.view(16384, 4096)
    phase("softmax_bf16_16384x4096", lambda: torch.softmax(x2, -1), S, kind="softmax", rows=16384, cols=4096,
          dtype="bf16")
    x3 = x.view(8192, 8192)
    lw = torch.ones(8192, device=dev, dtype=bf16)
    lb = torch.zeros(8192, device=dev, dtype=bf16)
    phase("layernorm_bf16_8192x8192", lambda: torch.nn.functional.layer_norm(x3, (8192,), lw, lb), S,
          kind="layernorm", rows=8192, cols=8192, dtype="bf16")
    del x, y, z, x2, x3
    sdpa_phases([(8, 16, 1024, 1024, 64, True, S), (1, 32, 1, 8192, 128, False, S),
                 (16, 32, 1, 2048, 64, False, S), (2, 24, 4096, 4096, 128, True, S)])
    try:
        import transformers
        results["transformers"] = transformers.__version__
        llama_phases("llama-3.2-1b", "llama1b", [(1, 2048), (8, 256)], [(1, 2048), (8, 512)], S)
        llama_phases("llama-3.2-3b", "llama3b", [(1, 512)], [(1, 512)], S)
        from transformers import BertConfig, BertModel
        with torch.device(dev):
            bert = BertModel(BertConfig()).to(bf16).eval()
        for B_, L in [(8, 128), (32, 384)]:
            ids = torch.randint(0, 30000, (B_, L), device=dev)
            phase(f"bert_base_b{B_}_s{L}", lambda: bert(input_ids=ids), S, kind="bert", model="bert_base",
                  batch=B_, seq=L)
        del bert
        torch.cuda.empty_cache()
    except Exception as e:
        results["llama_error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    try:
        import torchvision
        results["torchvision"] = torchvision.__version__
        for mname, batches in [("resnet18", (1, 32)), ("mobilenet_v2", (32,)), ("efficientnet_b0", (32,)),
                               ("resnet50", (16,)), ("vit_b_16", (8,))]:
            with torch.device(dev):
                net = getattr(torchvision.models, mname)().to(bf16).eval()
            cl = mname != "vit_b_16"
            if cl:
                net = net.to(memory_format=torch.channels_last)
            for B_ in batches:
                xin = torch.randn(B_, 3, 224, 224, device=dev, dtype=bf16)
                if cl:
                    xin = xin.to(memory_format=torch.channels_last)
                phase(f"{mname}_b{B_}", lambda: net(xin), S, kind="vision", model=mname, batch=B_)
            del net
            torch.cuda.empty_cache()
    except Exception as e:
        results["vision_error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()


if SET == "blind2":
    with torch.inference_mode():
        blind2()
    results["finished_unix_s"] = time.time()
    save()
    sys.exit(0)

with torch.inference_mode():
    warm_up()

    # ---- GEMM C[M,N] = A[M,K] B[K,N], bf16 (cuBLAS) ----
    gemms = [  # (M, N, K, split)
        (512, 512, 512, "train"), (2048, 2048, 2048, "train"), (8192, 8192, 8192, "train"),
        (1, 4096, 4096, "train"), (32, 8192, 8192, "train"), (16384, 1024, 1024, "train"),
        (256, 256, 256, "test"), (1024, 1024, 1024, "test"), (4096, 4096, 4096, "test"),
        (8, 4096, 4096, "test"), (1, 14336, 4096, "test"), (16, 2048, 8192, "test"),
        (4096, 14336, 4096, "test"), (8192, 2048, 8192, "test"), (128, 4096, 4096, "test"),
    ]
    for M, N, K, split in gemms:
        A = torch.randn(M, K, device=dev, dtype=bf16)
        B = torch.randn(K, N, device=dev, dtype=bf16)
        C = torch.empty(M, N, device=dev, dtype=bf16)
        phase(f"gemm_bf16_{M}x{N}x{K}", lambda: torch.mm(A, B, out=C), split,
              kind="gemm", M=M, N=N, K=K, dtype="bf16")
        del A, B, C
    A = torch.randn(4096, 4096, device=dev)
    B = torch.randn(4096, 4096, device=dev)
    C = torch.empty(4096, 4096, device=dev)
    phase("gemm_fp32_4096x4096x4096", lambda: torch.mm(A, B, out=C), "train",
          kind="gemm", M=4096, N=4096, K=4096, dtype="fp32")
    del A, B, C

    # ---- memory-bound ops, bf16 ----
    n = 256 * 1024 * 1024
    x = torch.randn(n, device=dev, dtype=bf16)
    y = torch.randn(n, device=dev, dtype=bf16)
    z = torch.empty(n, device=dev, dtype=bf16)
    phase("copy_bf16_256M", lambda: z.copy_(x), "train", kind="copy", elements=n, dtype="bf16")
    phase("add_bf16_256M", lambda: torch.add(x, y, out=z), "train", kind="add", elements=n, dtype="bf16")
    phase("relu_bf16_256M", lambda: torch.clamp_min(x, 0, out=z), "test",
          kind="relu", elements=n, dtype="bf16")
    s = torch.empty((), device=dev, dtype=torch.float32)
    phase("sum_bf16_256M", lambda: torch.sum(x, dtype=torch.float32, out=s), "test",
          kind="reduce_sum", elements=n, dtype="bf16")
    x2 = x.view(65536, 4096)
    z2 = z.view(65536, 4096)
    phase("softmax_bf16_65536x4096", lambda: torch.softmax(x2, -1),
          "test", kind="softmax", rows=65536, cols=4096, dtype="bf16")
    lw = torch.ones(4096, device=dev, dtype=bf16)
    lb = torch.zeros(4096, device=dev, dtype=bf16)
    phase("layernorm_bf16_65536x4096", lambda: torch.nn.functional.layer_norm(x2, (4096,), lw, lb), "test",
          kind="layernorm", rows=65536, cols=4096, dtype="bf16")
    m = 4 * 1024 * 1024
    xs, zs = x[:m], z[:m]
    phase("copy_bf16_4M", lambda: zs.copy_(xs), "test", kind="copy", elements=m, dtype="bf16")
    t1 = torch.ones(1024, device=dev, dtype=bf16)
    t2 = torch.empty(1024, device=dev, dtype=bf16)
    phase("tiny_add_bf16_1K", lambda: torch.add(t1, t1, out=t2), "train", kind="add", elements=1024, dtype="bf16")
    del x, y, z, x2, z2, xs, zs

    # ---- attention (SDPA, bf16) ----
    sdpa_phases([(4, 32, 2048, 2048, 128, True, "train"), (1, 32, 8192, 8192, 128, True, "test"),
                 (32, 32, 1, 4096, 128, False, "test")])

    # ---- Llama-3.2-1B architecture (random weights), HF transformers eager + SDPA ----
    try:
        import transformers
        results["transformers"] = transformers.__version__
        llama_phases("llama-3.2-1b", "llama1b", [(1, 512), (4, 1024)], [(1, 512), (4, 1024)], "test",
                     profile_key="llama1b_decode_kernels_per_step")
    except Exception as e:
        results["llama_error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()

    # ---- ResNet-50 and ViT-B/16 (torchvision, random weights), bf16, eager ----
    try:
        import torchvision
        results["torchvision"] = torchvision.__version__
        for mname, ctor in [("resnet50", torchvision.models.resnet50), ("vit_b_16", torchvision.models.vit_b_16)]:
            with torch.device(dev):
                net = ctor().to(bf16).eval()
            if mname == "resnet50":
                net = net.to(memory_format=torch.channels_last)
            for B_ in (1, 64):
                xin = torch.randn(B_, 3, 224, 224, device=dev, dtype=bf16)
                if mname == "resnet50":
                    xin = xin.to(memory_format=torch.channels_last)
                phase(f"{mname}_b{B_}", lambda: net(xin), "test", kind="vision", model=mname, batch=B_)
            del net
            torch.cuda.empty_cache()
    except Exception as e:
        results["vision_error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()

results["finished_unix_s"] = time.time()
save()

# ---- ONNX exports (structure only: initializer data stripped) for the importer's tests ----
if ONNX_DIR:
    try:
        import onnx
        import torchvision
        os.makedirs(ONNX_DIR, exist_ok=True)
        for mname, ctor in [("resnet50", torchvision.models.resnet50), ("mobilenet_v2", torchvision.models.mobilenet_v2),
                            ("vit_b_16", torchvision.models.vit_b_16)]:
            try:
                net = ctor().eval()
                path = os.path.join(ONNX_DIR, mname + ".full.onnx")
                x = torch.randn(1, 3, 224, 224)
                try:
                    torch.onnx.export(net, (x,), path, dynamo=False, opset_version=17)
                except Exception as e1:
                    print(f"onnx {mname}: TorchScript exporter failed ({e1}); trying dynamo", flush=True)
                    torch.onnx.export(net, (x,), path, dynamo=True, opset_version=18, external_data=False)
                mp = onnx.load(path)
                mp = onnx.shape_inference.infer_shapes(mp)
                for init in mp.graph.initializer:  # keep dims and dtype, drop the numbers
                    for fld in ("raw_data", "float_data", "int64_data", "int32_data", "double_data"):
                        if init.HasField(fld) if fld == "raw_data" else len(getattr(init, fld)):
                            init.ClearField(fld)
                onnx.save(mp, os.path.join(ONNX_DIR, mname + ".onnx"))
                os.remove(path)
                print(f"onnx {mname}: {len(mp.graph.node)} nodes", flush=True)
            except Exception as e:
                print(f"onnx {mname} failed: {e}", flush=True)
                traceback.print_exc()
    except Exception as e:
        print(f"onnx export unavailable: {e}", flush=True)
