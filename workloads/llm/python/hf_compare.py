#!/usr/bin/env python3
"""Hugging Face transformers side of the bench-llm validation (runs on the GPU machine).

  logits  --llm BIN --work DIR --out DIR   logits of jouleprof-llm (CUDA and CPU reference) against
                                           transformers on the same weights, both directions:
                                           our random weights exported -> HF, and HF-written
                                           safetensors -> our loader. Writes a golden fixture.
  speed   --model llama-3.2-1b ...          transformers decode/prefill speed (eager, static cache,
                                           optionally torch.compile), same shapes as jouleprof-llm;
                                           --generate: also through generate() (eager, and static cache
                                           + compiled forward with --compile).
  Markers: with $JOULEPROF_MARKERS set (under `jouleprof measure`), `speed` writes begin/end/count
  lines so the measurement gets prefill and decode phases.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import torch

CONFIGS = {
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=64, tie_word_embeddings=True, rope_factor=32.0),
    "llama-3.2-3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
                         num_key_value_heads=8, head_dim=128, tie_word_embeddings=True, rope_factor=32.0),
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=128, tie_word_embeddings=False, rope_factor=8.0),
}


def marker(line):
    path = os.environ.get("JOULEPROF_MARKERS")
    if path:
        with open(path, "w") as f:
            f.write(line + "\n")


def llama3_inv_freq(theta, dim, factor, low, high, old):
    out = []
    for i in range(dim // 2):
        f = 1.0 / theta ** (2 * i / dim)
        wl = 2 * math.pi / f
        v = f / factor if wl > old / low else f
        if not wl < old / high and not wl > old / low:
            s = (old / wl - low) / (high - low)
            v = (1 - s) * v / factor + s * v
        out.append(v)
    return out


def rel(a, b):
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    return float((a - b).norm() / b.norm())


def hf_teacher_forced(model, prompt, generated, device):
    """Logits HF gives at the positions where an engine chose each generated token."""
    seq = list(prompt) + list(generated[:-1])
    with torch.no_grad():
        out = model(torch.tensor([seq], device=device)).logits[0].float().cpu()
    n = len(prompt)
    return out[n - 1: n - 1 + len(generated)]


def load(path, dtype):
    from transformers import LlamaForCausalLM
    m = LlamaForCausalLM.from_pretrained(path, dtype=dtype)
    if next(m.parameters()).dtype != dtype:
        m = LlamaForCausalLM.from_pretrained(path, torch_dtype=dtype)
    return m.eval()


def make_static_cache(config, batch, length):
    from transformers import StaticCache
    tries = [dict(config=config, max_batch_size=batch, max_cache_len=length, device="cuda", dtype=torch.bfloat16),
             dict(config=config, max_cache_len=length),
             dict(config=config, max_batch_size=batch, max_cache_len=length)]
    err = None
    for kw in tries:
        try:
            return StaticCache(**kw)
        except TypeError as e:
            err = e
    raise err


def run_llm(bin_, args):
    r = subprocess.run([bin_] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join([bin_] + args)} failed ({r.returncode}): {r.stderr.strip()}")


def compare_engine(model, prompts, result_path, device):
    res = json.load(open(result_path))
    worst, agree, total = 0.0, 0, 0
    for seq, p in zip(res["sequences"], prompts):
        assert seq["prompt"] == p
        ref = hf_teacher_forced(model, p, seq["generated"], device)
        ours = torch.tensor(seq["logits"])
        worst = max(worst, rel(ours, ref))
        agree += int((ref.argmax(-1) == torch.tensor(seq["generated"])).sum())
        total += len(seq["generated"])
    return worst, agree, total


def cmd_logits(a):
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    prompts = [[(37 * i + 11 * s) % 1000 for i in range(n)] for s, n in enumerate([7, 23, 64])]
    tok_file = os.path.join(a.work, "prompts.txt")
    with open(tok_file, "w") as f:
        for p in prompts:
            f.write(" ".join(map(str, p)) + "\n")
    report = {}
    # 1. Our seeded random weights, exported as a HF checkpoint, read by transformers.
    ours_dir = os.path.join(a.work, "ours")
    run_llm(a.llm, ["export", "--model", "tiny", "--out", ours_dir, "--dtype", "bf16"])
    m = load(ours_dir, torch.float32)  # CPU, exact fp32
    cfg = json.load(open(os.path.join(ours_dir, "config.json")))
    rs = cfg["rope_scaling"]
    want = llama3_inv_freq(cfg["rope_theta"], cfg["head_dim"], rs["factor"], rs["low_freq_factor"],
                           rs["high_freq_factor"], rs["original_max_position_embeddings"])
    got = m.model.rotary_emb.inv_freq.double().tolist()
    report["hf_inv_freq_rel_err"] = max(abs(g - w) / w for g, w in zip(got, want))
    for engine in ["cuda", "cpu"]:
        path = os.path.join(a.work, f"ours_{engine}.json")
        run_llm(a.llm, ["logits", "--model", "tiny", "--tokens", tok_file, "--gen", "8", "--engine", engine,
                        "--out", path])
        worst, agree, total = compare_engine(m, prompts, path, "cpu")
        report[f"random_weights_{engine}_vs_hf_fp32"] = {"rel_l2": worst, "argmax_agree": agree, "tokens": total}
    # HF's own bf16 forward against its fp32 one: the scale of bf16 error.
    mb = load(ours_dir, torch.bfloat16).to("cuda")
    errs = []
    for p in prompts:
        with torch.no_grad():
            lb = mb(torch.tensor([p], device="cuda")).logits[0].float().cpu()
            lf = m(torch.tensor([p])).logits[0]
        errs.append(rel(lb, lf))
    report["hf_bf16_vs_hf_fp32_rel_l2"] = max(errs)
    # Golden fixture for CI: HF fp32 logits of the exported tiny model on the first prompt.
    p = prompts[1]
    with torch.no_grad():
        lf = m(torch.tensor([p])).logits[0]
    golden = {"model": "tiny", "seed": 1234, "dtype": "bf16", "prompt": p,
              "source": "transformers " + __import__("transformers").__version__ + " LlamaForCausalLM fp32 on CPU",
              "positions": [0, 5, len(p) - 1],
              "logits_head": [lf[i, :64].tolist() for i in [0, 5, len(p) - 1]],
              "argmax": [int(lf[i].argmax()) for i in [0, 5, len(p) - 1]]}
    if a.golden:
        json.dump(golden, open(os.path.join(a.out, "golden_tiny_hf.json"), "w"))
    # 2. HF-written safetensors (HF's own config.json, re-randomised weights) read by our loader.
    torch.manual_seed(0)
    with torch.no_grad():
        for name, prm in m.named_parameters():
            if prm.dim() == 1:
                prm.uniform_(0.9, 1.1)
            else:
                prm.normal_(0.0, 0.08)
    hf_dir = os.path.join(a.work, "hf")
    m.to(torch.bfloat16).save_pretrained(hf_dir, safe_serialization=True)
    m = load(hf_dir, torch.float32)
    report["hf_written_config"] = json.load(open(os.path.join(hf_dir, "config.json")))
    for engine in ["cuda", "cpu"]:
        path = os.path.join(a.work, f"hf_{engine}.json")
        run_llm(a.llm, ["logits", "--weights", hf_dir, "--tokens", tok_file, "--gen", "8", "--engine", engine,
                        "--out", path])
        worst, agree, total = compare_engine(m, prompts, path, "cpu")
        report[f"hf_weights_{engine}_vs_hf_fp32"] = {"rel_l2": worst, "argmax_agree": agree, "tokens": total}
    json.dump(report, open(os.path.join(a.out, "hf_logits.json"), "w"), indent=1)
    for k, v in report.items():
        if k != "hf_written_config":
            print(f"hf-logits {k}: {v}")


def build_model(name):
    from transformers import LlamaConfig, LlamaForCausalLM
    c = dict(CONFIGS[name])
    factor = c.pop("rope_factor")
    cfg = LlamaConfig(vocab_size=128256, rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=131072,
                      rope_scaling={"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, **c)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    return model


def record_decode(a, res, v, per_step, note=""):
    """The median of per-step decode times, into the result and as one printed line."""
    per_step.sort()
    med = per_step[len(per_step) // 2]
    res["runs"].append({"variant": v, "batch": a.batch, "prompt": a.prompt, "gen": a.gen, "ms_per_step": med * 1e3,
                        "tokens_per_s": a.batch / med, "reps": len(per_step)})
    print(f"hf-speed {a.model} {v:15s} b{a.batch} decode {a.batch / med:8.1f} tok/s  {med * 1e3:7.3f} ms/step "
          f"({len(per_step)} reps{note})", flush=True)


def record_failure(a, res, v, e):
    print(f"hf-speed {a.model} {v}: failed: {type(e).__name__}: {e}"[:400], flush=True)
    res["runs"].append({"variant": v, "error": str(e)[:400]})


def generate_speed(a, model, prompt, res):
    """Decode speed through transformers' own generate(): eager, and (with --compile) with its static
    cache, for which generate() compiles the forward pass itself. Per-token time is
    (time for gen tokens - time for 1 token) / (gen - 1), so the prefill cancels out."""
    modes = ["generate-eager"] + (["generate-static-compile"] if a.compile else [])
    for v in modes:
        try:
            kw = dict(do_sample=False, pad_token_id=0)
            # With a static cache, generate() compiles the forward pass itself (its CompileConfig:
            # reduce-overhead CUDA graphs, marking each step); compiling model.forward by hand
            # instead fails in CUDA-graph output reuse (run 30).
            model.generation_config.cache_implementation = "static" if v == "generate-static-compile" else None

            def gen(n):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                with torch.no_grad():
                    out = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, **kw)
                torch.cuda.synchronize()
                assert out.shape[1] == prompt.shape[1] + n, out.shape
                return time.perf_counter() - t0

            t = time.perf_counter()
            for _ in range(3):  # compiles (static+compile) and warms up
                gen(a.gen), gen(1)
            print(f"hf-speed {a.model} {v} warm-up took {time.perf_counter() - t:.1f} s", flush=True)
            per = []
            t_end = time.perf_counter() + a.seconds
            marker(f"begin decode-{v}")
            n = 0
            while time.perf_counter() < t_end or len(per) < 3:
                full, one = gen(a.gen), gen(1)
                per.append(max(full - one, 1e-9) / (a.gen - 1))
                n += a.gen * a.batch
            marker(f"end decode-{v}")
            marker(f"count tokens {n} decode-{v}")
            record_decode(a, res, v, per, f", each a generate() of {a.gen} and one of 1 token")
        except Exception as e:  # a transformers API that moved: report, go on
            record_failure(a, res, v, e)


def cmd_speed(a):
    from transformers import DynamicCache
    res = {"model": a.model, "torch": torch.__version__, "transformers": __import__("transformers").__version__,
           "device": torch.cuda.get_device_name(), "runs": []}
    model = build_model(a.model)
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, 128256, (a.batch, a.prompt), generator=g).to("cuda")

    def decode_loop(static, steps, compiled=None):
        fwd = compiled if compiled is not None else model  # (a compiled module has no truth value)
        if static:
            cache = make_static_cache(model.config, a.batch, a.prompt + steps + 1)
        else:
            cache = DynamicCache()
        with torch.no_grad():
            pos = torch.arange(a.prompt, device="cuda")
            out = model(prompt, past_key_values=cache, use_cache=True, cache_position=pos)
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(steps):
                cp = torch.tensor([a.prompt + i], device="cuda")
                out = fwd(tok, past_key_values=cache, use_cache=True, cache_position=cp)
                tok = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            return time.perf_counter() - t0

    # With --generate, --compile applies to generate() (our own loop re-records its graphs: run 8).
    variants = ["eager"] + (["static"] if a.static else []) + (["static+compile"] if a.compile and not a.generate else [])
    for v in variants:
      try:
        compiled = None
        if v == "static+compile":
            t = time.perf_counter()
            compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
            decode_loop(True, 8, compiled)
            decode_loop(True, 8, compiled)
            print(f"hf-speed {a.model} compile took {time.perf_counter() - t:.1f} s", flush=True)
        decode_loop(v != "eager", 8, compiled)  # warm-up
        steps = a.gen - 1
        times = []
        t_end = time.perf_counter() + a.seconds
        marker(f"begin decode-{v}")
        n = 0
        while time.perf_counter() < t_end or len(times) < 2:
            times.append(decode_loop(v != "eager", steps, compiled) / steps)
            n += steps * a.batch
        marker(f"end decode-{v}")
        marker(f"count tokens {n} decode-{v}")
        record_decode(a, res, v, times)
      except Exception as e:  # a transformers API that moved: report, go on
        record_failure(a, res, v, e)
    if a.generate:
        generate_speed(a, model, prompt, res)
    # Prefill (eager).
    for L in a.prefill:
        x = torch.randint(0, 128256, (1, L), generator=g).to("cuda")
        with torch.no_grad():
            model(x)
            torch.cuda.synchronize()
            ts = []
            marker(f"begin prefill-{L}")
            for _ in range(3):
                t0 = time.perf_counter()
                model(x)
                torch.cuda.synchronize()
                ts.append(time.perf_counter() - t0)
            marker(f"end prefill-{L}")
            marker(f"count tokens {3 * L} prefill-{L}")
        ts.sort()
        res["runs"].append({"variant": "eager-prefill", "tokens": L, "ms": ts[1] * 1e3, "tokens_per_s": L / ts[1]})
        print(f"hf-speed {a.model} prefill {L:5d}: {ts[1] * 1e3:8.2f} ms  {L / ts[1]:9.0f} tok/s", flush=True)
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("logits")
    lg.add_argument("--llm", required=True)
    lg.add_argument("--work", required=True)
    lg.add_argument("--out", required=True)
    lg.add_argument("--golden", action="store_true", help="also write the CI fixture golden_tiny_hf.json")
    sp = sub.add_parser("speed")
    sp.add_argument("--model", default="llama-3.2-1b", choices=sorted(CONFIGS))
    sp.add_argument("--batch", type=int, default=1)
    sp.add_argument("--prompt", type=int, default=128)
    sp.add_argument("--gen", type=int, default=128)
    sp.add_argument("--seconds", type=float, default=2.0)
    sp.add_argument("--static", action="store_true")
    sp.add_argument("--compile", action="store_true")
    sp.add_argument("--generate", action="store_true", help="also time transformers' generate() (eager; static cache + "
                    "torch.compile with --compile)")
    sp.add_argument("--prefill", type=lambda s: [int(x) for x in s.split(",") if x], default=[])
    sp.add_argument("--json")
    a = ap.parse_args()
    {"logits": cmd_logits, "speed": cmd_speed}[a.cmd](a)


if __name__ == "__main__":
    main()
