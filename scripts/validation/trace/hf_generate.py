"""HF Llama-3.2-1B architecture (random weights, bf16) generate() for `jouleprof trace` validation.

    python hf_generate.py [--annotate] [--small] [--compile [hf|forward]] [--reps N] [--seconds S]
                          [--prompt P] [--gen G] [--ab] [--json OUT]

Times each generate() after a warm-up (CUDA-synchronised wall clock) and prints one JSON line,
`hf_generate {...}`; a failure prints `hf_generate_error {"stage": ..., "error": ...}` and exits 3.
With --annotate, jouleprof.torch adds NVTX ranges per module (depth 4) and prefill/decode phases.
With --kineto-cuda, the timed calls run inside torch.profiler recording CUDA activities only (the
peer tracer, Kineto on CUPTI: kernels, copies and the CUDA runtime calls); its trace is not saved.
--small: 4 layers of width 1024 and a 32k vocabulary (same layer structure, a short start-up).
--compile: CUDA graphs on the decoder (warm-up and compile time excluded from the timed calls):
  hf (default): a static cache, and generate() compiles its decoding step itself (transformers'
     documented path: its CompileConfig, reduce-overhead, marking each step). Compiling
     model.forward by hand and calling generate() on it failed with "accessing tensor output of
     CUDAGraphs that has been overwritten" (HF's own compile of the same step is then skipped or
     doubled); so that form, `forward`, marks each step and clones the logits the next replay
     would overwrite.
--ab: the tracing overhead inside one process (same model, same compiled graphs): after the
  warm-up, generate() calls alternate between the trace paused and recording (jouleprof.trace), in
  pairs whose order is drawn with a fixed seed; the result line adds "ab": each state's median and
  IQR and the ratio recording/paused of the medians with a bootstrap 95% interval. The pause and
  resume switches happen between calls, outside the timed ones. Not under `jouleprof trace` both
  states are the same (ab.pause_effective false): the A/B's own noise floor.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))


SMALL = dict(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4, num_attention_heads=16,
             num_key_value_heads=4)


def build(small=False):
    from transformers import LlamaConfig, LlamaForCausalLM
    size = SMALL if small else dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                    num_attention_heads=32, num_key_value_heads=8)
    cfg = LlamaConfig(**size, head_dim=64, rms_norm_eps=1e-5,
                      rope_theta=500000.0, max_position_embeddings=131072, tie_word_embeddings=True,
                      rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    return model


def compile_model(model, how, kw):
    """Sets up the compiled decoder; generate()'s keyword arguments in kw."""
    kw["cache_implementation"] = "static"
    if how == "forward":
        compiled = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)

        def forward(*args, **kwargs):
            torch.compiler.cudagraph_mark_step_begin()  # a new step: the last replay's outputs may be reused
            out = compiled(*args, **kwargs)
            out.logits = out.logits.clone()  # generate() keeps them past the next replay
            return out

        model.forward = forward
        if hasattr(model.generation_config, "disable_compile"):
            model.generation_config.disable_compile = True  # not HF's compile of the same step on top


def compiled_graphs():
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except Exception:  # a torch without these counters: unknown
        return None


def fail(stage, e):
    print("hf_generate_error " + json.dumps({"stage": stage, "error": f"{type(e).__name__}: {e}"[:2000]}), flush=True)
    sys.exit(3)


def host_reference(n=1500):
    """A fixed CPU-only load: PyTorch's dispatcher on a small CPU tensor, no CUDA call, so a tracer
    does not touch it. Timed before each call (--host-reference), it gives the host's own speed at
    that moment: this host has slow spells of seconds that slow every process, traced or not."""
    t0 = time.perf_counter()
    x = torch.ones(16)
    for _ in range(n):
        x = x * 1.0001 + 0.0001
    return time.perf_counter() - t0


def steal_s():
    """The host's stolen CPU time so far, all CPUs (/proc/stat's steal field; 0 where there is none):
    on a virtual machine, time its vCPUs waited for the hypervisor."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK") if fields[0] == "cpu" and len(fields) > 8 else 0.0
    except OSError:
        return 0.0


def timed_calls(a, model, ids, kw, spans=None, host=None):
    """generate() timed call by call; `spans` gets each call's [start, end] in CLOCK_REALTIME ns, the
    clock of the sampled mode's switch log (which calls overlapped a recording window); `host` (a
    dict of lists) the host reference's time just before each call, and each call's CPU time on
    this thread (a tracer's work here counts; a vCPU's stolen time does not) and the host's steal."""
    times = []
    start = time.perf_counter()
    while (len(times) < a.reps) if a.seconds <= 0 else (time.perf_counter() - start < a.seconds or len(times) < 3):
        if host is not None:
            host["host_reference_s"].append(host_reference())
            c0, st0 = time.thread_time(), steal_s()
        r0, t0 = time.time_ns(), time.perf_counter()
        model.generate(ids, **kw)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if spans is not None:
            spans.append([r0, time.time_ns()])
        if host is not None:
            host["call_thread_cpu_s"].append(time.thread_time() - c0)
            host["call_steal_s"].append(steal_s() - st0)
    return times


def timed_ab_calls(a, model, ids, kw):
    """Alternating paused/recording calls (random order within each pair, seed 0)."""
    import random

    from jouleprof import trace
    rng = random.Random(0)
    times = {"paused": [], "recording": []}
    effective = True
    start = time.perf_counter()
    while (time.perf_counter() - start < a.seconds) if a.seconds > 0 else len(times["paused"]) < a.reps:
        pair = ["paused", "recording"]
        rng.shuffle(pair)
        for state in pair:
            if state == "paused":
                trace.pause()
                effective = effective and not trace.recording()
            else:
                trace.resume()
                effective = effective and trace.recording()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            model.generate(ids, **kw)
            torch.cuda.synchronize()
            times[state].append(time.perf_counter() - t0)
    trace.resume()
    return times, effective


def quantile(v, q):
    v = sorted(v)
    x = q * (len(v) - 1)
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def ab_summary(times, effective, boot=2000):
    """Medians, IQRs and recording/paused with a percentile bootstrap 95% interval (seed 1)."""
    import random
    import statistics
    rng = random.Random(1)
    p, r = times["paused"], times["recording"]
    ratio = statistics.median(r) / statistics.median(p)
    ratios = sorted(statistics.median(rng.choices(r, k=len(r))) / statistics.median(rng.choices(p, k=len(p))) for _ in range(boot))
    out = {"pause_effective": effective, "order": "pairs in random order, seed 0", "ratio": ratio,
           "ci95": [quantile(ratios, 0.025), quantile(ratios, 0.975)], "bootstrap": boot}
    for name, v in times.items():
        out[name] = {"n": len(v), "median_s": statistics.median(v), "iqr_s": quantile(v, 0.75) - quantile(v, 0.25)}
    return out


def ab_line(ab):
    """The A/B in one line: each state's median (IQR), the ratio and its interval."""
    p, r = ab["paused"], ab["recording"]
    return (f"recording {1e3 * r['median_s']:.2f} ms (IQR {1e3 * r['iqr_s']:.2f}, n {r['n']}) vs paused "
            f"{1e3 * p['median_s']:.2f} ms (IQR {1e3 * p['iqr_s']:.2f}, n {p['n']}): ratio {ab['ratio']:.4f}, "
            f"95% CI [{ab['ci95'][0]:.4f}, {ab['ci95'][1]:.4f}]" + ("" if ab["pause_effective"] else " (NOT paused: not under jouleprof trace)"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--annotate", action="store_true")
    ap.add_argument("--small", action="store_true", help="4 layers of width 1024, 32k vocabulary")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0, help="repeat generate() until this long has passed (overrides --reps)")
    ap.add_argument("--kineto-cuda", action="store_true")
    ap.add_argument("--compile", nargs="?", const="hf", choices=["hf", "forward"],
                    help="CUDA graphs on the decoder: hf (generate's own compile of a static cache) or forward")
    ap.add_argument("--ab", action="store_true", help="alternate calls with the trace paused and recording (jouleprof.trace)")
    ap.add_argument("--host-reference", action="store_true",
                    help="time a fixed CPU-only load before each call, and each call's thread CPU time and the host's "
                         "steal (host_reference_s, call_thread_cpu_s, call_steal_s, in call order)")
    ap.add_argument("--json")
    a = ap.parse_args()
    stage = "build"
    try:
        model = build(a.small)
        ids = torch.randint(0, model.config.vocab_size, (a.batch, a.prompt), device="cuda")
        kw = dict(max_new_tokens=a.gen, min_new_tokens=a.gen, do_sample=False, pad_token_id=0)
        if a.compile:
            stage = "compile"
            compile_model(model, a.compile, kw)
        with torch.no_grad():
            stage = "warm-up"
            t0 = time.perf_counter()
            for _ in range(3 if a.compile else 1):  # warm-up (compiling and capturing the graphs) before the hooks
                model.generate(ids, **kw)
            torch.cuda.synchronize()
            warmup_s = time.perf_counter() - t0
            graphs = compiled_graphs() if a.compile else None
            if a.compile and graphs == 0:  # said, not fatal: torch's counter may have another name
                print("hf_generate warning: torch.compile counted no graph: the decoder may have run eagerly", file=sys.stderr, flush=True)
            handle = None
            if a.annotate:
                stage = "annotate"
                import jouleprof.torch as jt
                handle = jt.annotate(model, depth=4)
            profiler = None
            if a.kineto_cuda:
                from torch.profiler import ProfilerActivity, profile
                profiler = profile(activities=[ProfilerActivity.CUDA])
                profiler.__enter__()
            stage = "timed calls"
            ab = None
            spans = []
            # (the A/B's two states share the host's spells: no reference there)
            host = {"host_reference_s": [], "call_thread_cpu_s": [], "call_steal_s": []} if a.host_reference and not a.ab else None
            if a.ab:
                split, effective = timed_ab_calls(a, model, ids, kw)
                ab = ab_summary(split, effective)
                times = split["paused"] + split["recording"]
            else:
                times = timed_calls(a, model, ids, kw, spans, host)
            if profiler is not None:
                profiler.__exit__(None, None, None)
            if handle is not None:
                handle.finish()
    except Exception as e:  # one line that says where, for the step's summary; the other variants go on
        fail(stage, e)
    reps = len(times)
    times.sort()
    res = {"annotate": a.annotate, "compile": a.compile or False, "small": a.small, "traced": "CUDA_INJECTION64_PATH" in os.environ,
           "kineto_cuda": a.kineto_cuda, "reps": reps, "prompt": a.prompt, "gen": a.gen, "batch": a.batch,
           "warmup_s": warmup_s, "compiled_graphs": graphs, "generate_s": times,
           "median_s": times[len(times) // 2], "tokens": reps * a.batch * (a.prompt + a.gen)}
    if ab is not None:
        res["ab"] = ab
    if spans:
        res["call_spans_ns"] = spans
    if host:
        res.update(host)
    print("hf_generate " + json.dumps(res), flush=True)
    if ab is not None:
        print("hf_generate_ab " + ab_line(ab), flush=True)
    if a.json:
        json.dump(res, open(a.json, "w"))


if __name__ == "__main__":
    main()
