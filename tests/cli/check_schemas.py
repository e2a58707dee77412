#!/usr/bin/env python3
"""Every --json document jouleprof writes, validated against its JSON Schema in schemas/
(docs/cli.md, "One JSON shape per command"), with Debian's python3-jsonschema (Draft 2020-12).
The documents come from the simulated GPU: measure, bench llm, runs list/show/export/compare,
estimate (one and several --hw, --list-hw, --list-models), sweep (outcome, --report, --discover),
restore (and --check), model fit/eval/validate/predict and optimize (on a generated sweep CSV),
trace (of a program that writes a trace file as the injection library would), kernels and replay
(--from engine output written here) on a real PyTorch profiler trace. Each schema
must also refuse a broken copy of its document (so a schema that accepts anything fails this test).
Usage: check_schemas.py JOULEPROF SCHEMAS_DIR FAKE_TRACED_PROGRAM"""
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_dvfs import write_sim_dvfs_csv  # noqa: E402

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    sys.exit("python3-jsonschema is not installed (scripts/debian-packages.txt)")

cli, schemas, fake_traced = os.path.abspath(sys.argv[1]), Path(sys.argv[2]), os.path.abspath(sys.argv[3])
store = {}
for f in schemas.glob("*.schema.json"):
    s = json.loads(f.read_text())
    Draft202012Validator.check_schema(s)
    store[s["$id"]] = s
    store[f.name] = s


def validator(name):
    s = store[name]
    resolver = jsonschema.RefResolver(base_uri=s["$id"], referrer=s, store=store)
    return Draft202012Validator(s, resolver=resolver)


def jp(*args, cwd, ok=(0,)):
    env = dict(os.environ, JOULEPROF_DB=str(Path(cwd) / "default.db"), JOULEPROF_CONTROL_DIR=str(Path(cwd) / "control"))
    r = subprocess.run([cli, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    if r.returncode not in ok:
        sys.exit(f"jouleprof {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout) if r.stdout.strip() else None


failures = 0


def check(schema, doc, what, breaks):
    """doc must validate; each break(copy) must not."""
    global failures
    errors = sorted(validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:5]:
        print(f"FAIL {what} vs {schema}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    failures += bool(errors)
    for name, brk in breaks:
        bad = copy.deepcopy(doc)
        brk(bad)
        if validator(schema).is_valid(bad):
            print(f"FAIL {schema} accepts {what} with {name}")
            failures += 1
    print(f"{what}: {'ok' if not errors else 'INVALID'} ({schema})")


with tempfile.TemporaryDirectory(prefix="jouleprof-schemas-") as d:
    db = str(Path(d) / "runs.db")
    work = ("echo begin decode > $JOULEPROF_MARKERS; sleep 0.3; echo end decode > $JOULEPROF_MARKERS; "
            "echo count tokens 128 decode > $JOULEPROF_MARKERS")
    m = jp("measure", "--device", "sim", "--idle", "0.3", "--runs", "2", "-q", "--db", db, "--tag", "batch=1",
           "--json", "-", "--", "sh", "-c", work, cwd=d)
    jp("measure", "--device", "sim", "--idle", "0", "--runs", "2", "-q", "--db", db, "--tag", "batch=8",
       "--json", str(Path(d) / "m2.json"), "--", "sh", "-c", work, cwd=d)
    check("result.schema.json", m, "measure --json", [
        ("no schema_version", lambda x: x.pop("schema_version")),
        ("a plural per-count key", lambda x: x["statistics"].__setitem__(
            "phase:decode:gpu_energy_per_tokens_j", x["statistics"]["phase:decode:gpu_energy_per_token_j"])),
        ("a key without its unit", lambda x: x["statistics"].__setitem__("gpu_energy", {"n": 1, "mean": 1})),
        ("a bad window status", lambda x: x["windows"][0].__setitem__("status", "done")),
    ])
    # measure --metrics: the activity section (simulated GPU: its utilization; fake NVML: GPM)
    act = jp("measure", "--device", "sim", "--idle", "0", "--metrics", "--metrics-period-ms", "100", "-q", "--no-store",
             "--json", "-", "--", "sleep", "0.4", cwd=d)
    check("result.schema.json", act, "measure --metrics --json", [
        ("an activity GPU without its source", lambda x: x["activity"]["gpus"][0].pop("source")),
        ("a negative activity", lambda x: x["activity"]["gpus"][0]["values"].append([-1.0, 0.0])),
    ])
    bench = jp("bench", "llm", "--device", "sim", "--model", "tiny", "--batch", "1,2", "--prompt", "8", "--gen", "4",
               "--min-seconds", "0.05", "--iso-seconds", "0.05", "--idle", "0", "-q", "--db", db, "--json", "-", cwd=d)
    check("result.schema.json", bench, "bench llm --json", [("no windows", lambda x: x.pop("windows"))])
    if "llm" not in bench:
        print("FAIL bench llm --json has no llm section")
        failures += 1
    for args, schema, what, breaks in [
        (["runs", "list", "--db", db, "--json"], "runs-list.schema.json", "runs list --json",
         [("a string id", lambda x: x[0].__setitem__("id", "1"))]),
        (["runs", "show", "1", "--db", db, "--json", "-"], "results.schema.json", "runs show ONE --json",
         [("a number in the array", lambda x: x.append(1))]),
        (["runs", "show", "1", "2", "--db", db, "--json"], "results.schema.json", "runs show TWO --json", []),
        (["runs", "export", "1", "--db", db, "--json", "-"], "results.schema.json", "runs export --json", []),
        (["runs", "compare", "1", "2", "--db", db, "--json"], "runs-compare.schema.json", "runs compare --json",
         [("one run", lambda x: x.pop())]),
        (["estimate", "--model", "resnet50", "--hw", "h100-sxm", "--json", "-"], "estimate.schema.json",
         "estimate ONE --json", [("no stack", lambda x: x["estimates"][0].pop("stack"))]),
        (["estimate", "--model", "llama-3.2-1b", "--phase", "decode", "--hw", "h100-sxm,a100,tpu-v5e", "--json"],
         "estimate.schema.json", "estimate LLM SEVERAL --json",
         [("tokens without J/token", lambda x: x["estimates"][0].pop("energy_per_token_j"))]),
        (["estimate", "--list-hw", "--json", "-"], "estimate-hardware.schema.json", "estimate --list-hw --json",
         [("no hardware", lambda x: x.pop("hardware"))]),
        (["estimate", "--list-models", "--json", "-"], "estimate-models.schema.json", "estimate --list-models --json",
         [("llm not a boolean", lambda x: x["models"][0].__setitem__("llm", "yes"))]),
    ]:
        check(schema, jp(*args, cwd=d), what, breaks)

    # sweep on the simulated GPU: the outcome, the report of the stored sweep, discovery
    sweep = jp("sweep", "--device", "sim", "--clocks", "990,1980", "--runs", "2", "--warmup", "0", "--idle", "0",
               "--sweep-id", "schemas", "--db", db, "--json", "-", "-q", "--", "sh", "-c", work, cwd=d)
    check("sweep.schema.json", sweep, "sweep --json", [
        ("an unknown outcome", lambda x: x["units"][0].__setitem__("outcome", "done")),
        ("no restored flag", lambda x: x.pop("restored"))])
    check("sweep-report.schema.json", jp("sweep", "--report", "schemas", "--db", db, "--json", "-", cwd=d),
          "sweep --report --json", [
              ("a metric without its CI", lambda x: x["rows"][0]["energy_j"].pop("ci95_half_width")),
              ("a phase without time", lambda x: next(iter(x["rows"][0]["phases"].values())).pop("duration_s"))])
    check("sweep-discover.schema.json", jp("sweep", "--device", "sim", "--discover", "--json", "-", cwd=d),
          "sweep --discover --json", [("a clock as text", lambda x: x["gpus"][0]["mem_clocks_mhz"].append("fast"))])
    for args, what in [(["restore", "--json", "-"], "restore --json"), (["restore", "--check", "--json", "-"], "restore --check --json")]:
        check("restore.schema.json", jp(*args, cwd=d), what, [
            ("an unknown outcome", lambda x: x["gpus"].append({"uuid": "GPU-1", "outcome": "reset", "ok": True, "message": ""})),
            ("no ok", lambda x: x.pop("ok"))])

    # model and optimize on a generated (simulated) DVFS sweep of six applications
    write_sim_dvfs_csv(Path(d, "sweep.csv"))
    jp("model", "fit", "--data", "sweep.csv", "--form", "poly", "-o", "m.json", "--gpu", "V100", "-q", cwd=d)
    check("model.schema.json", json.loads(Path(d, "m.json").read_text()), "model fit -o",
          [("another kind", lambda x: x.__setitem__("kind", "model"))])
    for args, what in [(["model", "eval", "m.json", "--data", "sweep.csv"], "model eval --json"),
                       (["model", "validate", "--data", "sweep.csv", "--form", "poly"], "model validate --json")]:
        check("model-eval.schema.json", jp(*args, "--json", "-", "-q", cwd=d), what, [
            ("a MAPE as text", lambda x: x["applications"][0].__setitem__("energy_mape_pct", "1%")),
            ("no overall", lambda x: x.pop("overall"))])
    check("model-predict.schema.json", jp("model", "predict", "m.json", "--data", "sweep.csv", "--json", "-", "-q", cwd=d),
          "model predict --json", [("a point without energy", lambda x: x["applications"][0]["points"][0].pop("energy_j"))])
    for args, what in [(["optimize", "--model", "m.json", "--data", "sweep.csv"], "optimize --model --json"),
                       (["optimize", "--data", "sweep.csv", "--pareto"], "optimize --pareto --json")]:
        check("optimize.schema.json", jp(*args, "--json", "-", "-q", cwd=d), what, [
            ("no chosen clock", lambda x: x["applications"][0].pop("chosen_clock_mhz")),
            ("no summary", lambda x: x.pop("summary"))])

    # optimize from a sweep in the run store (sweep --metrics: activity per point), per phase
    sdb = str(Path(d, "sweep-metrics.db"))
    jp("sweep", "--device", "sim", "--clocks", "1980,990", "--runs", "2", "--warmup", "0", "--idle", "0", "--metrics",
       "--sweep-id", "sm", "--db", sdb, "-q", cwd=d)
    check("optimize.schema.json", jp("optimize", "--sweep", "sm", "--db", sdb, "--phases", "--pareto", "--json", "-", "-q", cwd=d),
          "optimize --sweep --phases --json", [
              ("a power limit of 0 W", lambda x: x["applications"][0].__setitem__("chosen_power_limit_w", 0)),
              ("simulated as text", lambda x: x.__setitem__("simulated", "yes"))])
    stored = jp("runs", "show", "last", "--db", sdb, "--json", "-", cwd=d)
    stored = stored[0] if isinstance(stored, list) else stored
    check("result.schema.json", stored, "runs show (a sweep point with --metrics)", [
        ("an unknown activity source", lambda x: x["activity"]["gpus"][0].__setitem__("source", "nvidia-smi"))])

    # trace: the result document with its trace section
    Path(d, "fake_inject.so").write_bytes(b"\x7fELF: a stand-in, never loaded (the fake program writes the trace itself)")
    tr = jp("trace", "--device", "sim", "--idle", "0.3", "--db", db, "--inject-lib", str(Path(d, "fake_inject.so")),
            "--json", "-", "-q", "--", fake_traced, "0.6", cwd=d)
    check("result.schema.json", tr, "trace --json", [
        ("a negative dropped count", lambda x: x["trace"].__setitem__("dropped_records", -1)),
        ("an unknown method", lambda x: x["trace"]["gpus"][0]["methods"][0].__setitem__("method", "guess")),
        ("a kernel row without energy", lambda x: x["trace"]["gpus"][0]["by_kernel"][0].pop("energy_j"))])

    # kernels and replay (issue 18): a real PyTorch profiler trace; replay from engine output written here
    data = Path(schemas).parent / "tests" / "data" / "replay"
    kt = jp("kernels", str(data / "bloom_tiny_forward.json"), "--json", "-", "-q", cwd=d)
    check("kernels.schema.json", kt, "kernels --json", [
        ("a count as text", lambda x: x["kernels"][0].__setitem__("count", "6")),
        ("an unknown tier", lambda x: x["kernels"][0].__setitem__("tier", "magic")),
        ("no totals", lambda x: x.pop("totals"))])
    jp("replay", str(data / "bloom_tiny_forward.json"), "--plan", str(Path(d, "plan.json")), cwd=d)
    plan = json.loads(Path(d, "plan.json").read_text())
    items = [{"row": it["row"], "status": "ok", "time_ns": kt["kernels"][it["row"]]["mean_duration_s"] * 1e9, "time_ns_half_width": 1.0,
              "power_w": 300.0, "energy_j": 300.0 * kt["kernels"][it["row"]]["mean_duration_s"], "energy_j_half_width": 1e-9}
             for it in plan["items"]]
    Path(d, "engine.json").write_text(json.dumps({"schema": "jouleprof.replay_measurements", "gpu": "NVIDIA H100 80GB HBM3",
                                                  "idle_w": 70.0, "gap_w": 100.0, "items": items}))
    rp = jp("replay", str(data / "bloom_tiny_forward.json"), "--from", str(Path(d, "engine.json")), "--no-store", "--json", "-", "-q", cwd=d)
    check("replay.schema.json", rp, "replay --from --json", [
        ("a negative energy", lambda x: x["prediction"].__setitem__("predicted_energy_j", -1.0)),
        ("an unknown status", lambda x: x["kernels"][0].__setitem__("status", "guessed")),
        ("no tiers", lambda x: x.pop("tiers"))])

    # the cuDNN tiers: ResNet-50's stem (conv1, bn1 in eval mode, relu) and a training batch norm
    kb = jp("kernels", str(data / "resnet_stem_bn.json"), "--json", "-", "-q", cwd=d)
    check("kernels.schema.json", kb, "kernels --json (conv, batchnorm)", [
        ("a batchnorm row without its layout", lambda x: next(k for k in x["kernels"] if "batchnorm" in k)["batchnorm"].pop("channels_last")),
        ("a 6-D batchnorm input", lambda x: next(k for k in x["kernels"] if "batchnorm" in k)["batchnorm"].__setitem__("input", [1] * 6))])
    if sorted(k["tier"] for k in kb["kernels"]) != ["batchnorm", "conv", "other", "other"]:
        print(f"FAIL kernels of resnet_stem_bn.json: tiers {sorted(k['tier'] for k in kb['kernels'])}")
        failures += 1
    jp("replay", str(data / "resnet_stem_bn.json"), "--plan", str(Path(d, "plan_bn.json")), cwd=d)
    plan = json.loads(Path(d, "plan_bn.json").read_text())
    items = [{"row": it["row"], "tier": it["tier"], "status": "ok", "time_ns": kb["kernels"][it["row"]]["mean_duration_s"] * 1e9,
              "time_ns_half_width": 1.0, "power_w": 500.0, "energy_j": 500.0 * kb["kernels"][it["row"]]["mean_duration_s"],
              "energy_j_half_width": 1e-9} for it in plan["items"]]
    Path(d, "engine_bn.json").write_text(json.dumps({"schema": "jouleprof.replay_measurements", "gpu": "NVIDIA H200",
                                                     "idle_w": 70.0, "gap_w": 100.0, "items": items}))
    rb = jp("replay", str(data / "resnet_stem_bn.json"), "--from", str(Path(d, "engine_bn.json")), "--no-store", "--json", "-", "-q", cwd=d)
    check("replay.schema.json", rb, "replay --from --json (conv, batchnorm)", [
        ("an unknown tier", lambda x: x["tiers"][0].__setitem__("tier", "magic"))])

    sl = jp("estimate", "--model", "llama-3.2-1b", "--phase", "decode", "--hw", "h100-sxm", "--json", cwd=d)
    if "tokens_per_s" not in sl["estimates"][0]:
        print("FAIL estimate of an LLM has no tokens_per_s")
        failures += 1
print("all JSON documents valid" if not failures else f"{failures} schema failures")
sys.exit(1 if failures else 0)
