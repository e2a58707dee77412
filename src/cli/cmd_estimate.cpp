// `jouleprof estimate --model NAME|FILE.onnx --hw NAME[,NAME...] [options]`
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/core/files.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/calibrate.hpp"
#include "jouleprof/estimate/estimate.hpp"
#include "jouleprof/estimate/hardware.hpp"
#include "jouleprof/estimate/onnx.hpp"
#include "jouleprof/estimate/report.hpp"

namespace jouleprof::cli {
namespace {

namespace est = jouleprof::estimate;

struct EstimateFlags {
  std::string model;
  std::vector<std::string> hw{"h100-sxm"};
  int64_t batch = 1, prompt = 512, context = 1024, seq = 128, image = 224;
  std::string precision = "bf16", phase = "prefill";
  double clock_mhz = 0;
  bool kv_concat = false, all_logits = false, unfused = false, eager = false, cold = false, no_power_cap = false;
  std::vector<std::string> hw_dirs;
  std::string data_dir, calibration;
  bool no_calibration = false;
  std::string json, csv;
  std::size_t top = 8;
  bool list_hw = false, list_models = false;
  std::vector<std::string> onnx_dims;
  std::string onnx_fallback = "refuse";
  std::string calibrate, write_calibration, validate;
};

Result<est::Graph> load_graph(const EstimateFlags& f, const est::ModelOptions& mo) {
  const bool onnx = f.model.size() > 5 && f.model.substr(f.model.size() - 5) == ".onnx";
  if (!onnx) return est::build_model(f.model, mo);
  est::OnnxOptions oo;
  oo.dtype = mo.dtype;
  oo.batch = mo.batch;
  oo.fallback = f.onnx_fallback == "elementwise";
  for (const auto& d : f.onnx_dims) {
    const auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) return make_error(Errc::invalid_argument, "--dim needs NAME=VALUE, got '" + d + "'");
    auto v = parse_checked_int("--dim " + d.substr(0, eq), d.substr(eq + 1), {.min = 1, .max = int64_t{1} << 40});
    if (!v) return v.error();
    oo.dims[d.substr(0, eq)] = *v;
  }
  return est::import_onnx_file(f.model, oo);
}

int run(const EstimateFlags& f) {
  const std::string data = f.data_dir.empty() ? est::default_data_dir() : f.data_dir;
  std::vector<std::string> dirs{data + "/hw"};
  dirs.insert(dirs.end(), f.hw_dirs.begin(), f.hw_dirs.end());
  auto cat = est::load_catalog(dirs);
  if (!cat) return report(cat.error());
  // The lists in JSON too (docs/cli.md): {"schema_version", "hardware": [...]} / {"models": [...]}.
  if (f.list_hw) {
    if (!f.json.empty()) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& h : cat->hw) {
        a.push_back({{"id", h.id}, {"name", h.name}, {"vendor", h.vendor}, {"aliases", h.aliases}, {"file", h.file},
                     {"tdp_w", h.tdp_w.value}});
      }
      if (auto w = write_output(f.json, nlohmann::json{{"schema_version", 1}, {"hardware", a}}.dump(2) + "\n"); !w) return report(w.error());
      if (is_stdout(f.json)) return 0;
    }
    std::cout << est::render_hw_list(*cat);
    return 0;
  }
  if (f.list_models) {
    if (!f.json.empty()) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& m : est::model_catalog()) a.push_back({{"name", m.name}, {"description", m.description}, {"llm", m.llm}});
      if (auto w = write_output(f.json, nlohmann::json{{"schema_version", 1}, {"models", a}}.dump(2) + "\n"); !w) return report(w.error());
      if (is_stdout(f.json)) return 0;
    }
    std::cout << est::render_model_list() << "or FILE.onnx (static shapes, or --dim NAME=VALUE for dynamic ones)\n";
    return 0;
  }
  std::vector<const est::HardwareSpec*> targets;
  for (const auto& h : f.hw) {
    std::stringstream ss(h);
    for (std::string one; std::getline(ss, one, ',');) {
      if (one.empty()) continue;
      auto hw = cat->find(one);
      if (!hw) return report(hw.error());
      targets.push_back(*hw);
    }
  }
  if (targets.empty()) return report(make_error(Errc::invalid_argument, "--hw names no hardware"));
  auto calibration_for = [&](const est::HardwareSpec& hw) -> Result<std::optional<est::Calibration>> {
    if (f.no_calibration) return std::optional<est::Calibration>{};
    std::string path = f.calibration;
    if (path.empty()) {
      path = data + "/calibration/" + hw.id + ".json";
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) return std::optional<est::Calibration>{};
    }
    auto c = est::load_calibration(path);
    if (!c) return c.error();
    if (c->hw_id != hw.id && targets.size() > 1) return std::optional<est::Calibration>{};  // applies to its own target only
    return std::optional<est::Calibration>{std::move(*c)};
  };

  if (!f.calibrate.empty() || !f.validate.empty()) {
    auto m = est::load_measurements(f.calibrate.empty() ? f.validate : f.calibrate);
    if (!m) return report(m.error());
    auto hwp = cat->find(m->hw_id);
    if (!hwp) return report(hwp.error());
    std::optional<est::Calibration> cal;
    if (!f.calibrate.empty()) {
      auto fitted = est::fit_calibration(*m, **hwp);
      if (!fitted) return report(fitted.error());
      cal = std::move(*fitted);
      if (!f.write_calibration.empty()) {
        cal->file = f.write_calibration;
        if (auto w = est::save_calibration(*cal, f.write_calibration); !w) return report(w.error());
        std::cerr << "jouleprof: wrote " << f.write_calibration << "\n";
      }
    } else {
      auto c = calibration_for(**hwp);
      if (!c) return report(c.error());
      cal = std::move(*c);
    }
    auto before = est::predict_items(*m, **hwp, nullptr);
    if (!before) return report(before.error());
    auto after = est::predict_items(*m, **hwp, cal ? &*cal : nullptr);
    if (!after) return report(after.error());
    std::cout << est::render_validation(*before, *after);
    return 0;
  }

  if (f.model.empty()) return report(make_error(Errc::invalid_argument, "--model is required (see --list-models)"));
  est::ModelOptions mo;
  const auto prec = est::parse_dtype(f.precision);
  if (!prec) return report(make_error(Errc::invalid_argument, "--precision '" + f.precision + "' (fp32, tf32, fp16, bf16, fp8, int8)"));
  mo.dtype = *prec;
  mo.batch = f.batch;
  mo.phase = f.phase;
  mo.prompt = f.prompt;
  mo.context = f.context;
  mo.seq = f.seq;
  mo.image = f.image;
  mo.kv_concat = f.kv_concat;
  mo.all_logits = f.all_logits;
  auto g = load_graph(f, mo);
  if (!g) return report(g.error());

  std::vector<est::Estimate> results;
  for (const est::HardwareSpec* hw : targets) {
    auto cal = calibration_for(*hw);
    if (!cal) return report(cal.error());
    est::EstimateOptions eo;
    eo.precision = mo.dtype;
    if (f.clock_mhz > 0) eo.clock_mhz = f.clock_mhz;
    eo.fuse = !f.unfused;
    eo.eager = f.eager;
    eo.warm = !f.cold;
    eo.power_cap = !f.no_power_cap;
    auto e = est::estimate(*g, *hw, eo, *cal ? &**cal : nullptr);
    if (!e) return report(e.error());
    // LLMs: tok/s and J/token (a decode step makes one token per sequence).
    if (est::llama_config(f.model)) e->tokens = static_cast<double>(f.phase == "decode" ? f.batch : f.batch * f.prompt);
    results.push_back(std::move(*e));
  }
  if (!f.json.empty()) {
    if (auto w = write_output(f.json, est::to_json(results) + "\n"); !w) return report(w.error());
  }
  if (!f.csv.empty()) {
    if (auto w = write_output(f.csv, est::to_csv(results)); !w) return report(w.error());
  }
  if (f.json != "-" && f.csv != "-") {
    if (results.size() == 1) {
      est::TreeOptions to;
      to.top = f.top;
      std::cout << est::render_tree(results.front(), to);
    } else {
      std::cout << est::render_comparison(results);
    }
  }
  return 0;
}

Runner add_estimate(CLI::App& app) {
  auto f = std::make_shared<EstimateFlags>();
  CLI::App* c = app.add_subcommand("estimate", "Estimate the latency and energy of a DNN on CPU/GPU/TPU/KPU models");
  c->footer(
      "Examples:\n"
      "  jouleprof estimate --model resnet50 --hw h100-sxm --batch 64\n"
      "  jouleprof estimate --model llama-3.2-1b --phase decode --context 2048 --batch 8 --hw h100-sxm,a100,tpu-v5e\n"
      "  jouleprof estimate --model net.onnx --dim batch=8 --hw xeon-8490h --json out.json\n"
      "  jouleprof estimate --model gemm:4096x4096x4096 --hw h100 --clock 1410\n"
      "  jouleprof estimate --list-hw | --list-models\n"
      "  jouleprof estimate --validate data/calibration/h100-sxm.measurements.json\n"
      "See docs/estimate.md for the model, the hardware file format and calibration.");
  c->add_option("--model", f->model, "built-in model (--list-models), micro-graph (gemm:MxNxK ...) or FILE.onnx");
  c->add_option("--hw", f->hw, "hardware target(s), comma separated or repeated; several give a comparison table")
      ->delimiter(',')->capture_default_str();
checked(c->add_option("--batch", f->batch, "batch size"), IntRange{.min = 1, .max = int64_t{1} << 24})->capture_default_str();
  c->add_option("--precision", f->precision, "fp32, tf32, fp16, bf16, fp8 or int8")->capture_default_str();
  c->add_option("--phase", f->phase, "LLMs: prefill or decode")->check(CLI::IsMember({"prefill", "decode"}))->capture_default_str();
  checked(c->add_option("--prompt", f->prompt, "LLM prefill: prompt tokens"), IntRange{.min = 1, .max = int64_t{1} << 24})->capture_default_str();
  checked(c->add_option("--context", f->context, "LLM decode: tokens in the KV cache"), IntRange{.min = 0, .max = int64_t{1} << 24})->capture_default_str();
  checked(c->add_option("--seq", f->seq, "BERT/LSTM sequence length"), IntRange{.min = 1, .max = int64_t{1} << 24})->capture_default_str();
  checked(c->add_option("--image", f->image, "CNN/ViT input resolution"), IntRange{.min = 1, .max = 65536})->capture_default_str();
  checked(c->add_option("--clock", f->clock_mhz, "core clock in MHz (default: the maximum); energy per op scales with V(f)^2"),
          DoubleRange{.min = 0, .max = 10000, .min_exclusive = true});
  c->add_flag("--kv-concat", f->kv_concat, "LLM decode: KV cache appended by concatenation (HF DynamicCache)");
  c->add_flag("--all-logits", f->all_logits, "LLM prefill: logits for every prompt token");
  c->add_flag("--unfused", f->unfused, "one kernel per op (no fusion)");
  c->add_flag("--eager", f->eager, "add eager-framework host dispatch per op (calibrated); implies nothing about fusion");
  c->add_flag("--cold", f->cold, "one cold run (default: steady state of repeated runs, caches warm)");
  c->add_flag("--no-power-cap", f->no_power_cap, "do not throttle where power would exceed TDP");
  c->add_option("--hw-dir", f->hw_dirs, "extra directory of hardware files (yours override shipped ids)");
  c->add_option("--data-dir", f->data_dir, "data directory with hw/ and calibration/ (default: $JOULEPROF_DATA_DIR or the shipped one)");
  c->add_option("--calibration", f->calibration, "calibration file (default: DATA/calibration/<hw-id>.json when present)");
  c->add_flag("--no-calibration", f->no_calibration, "use datasheet numbers and default efficiencies only");
  add_json_option(c, f->json, "write JSON here: {schema_version, estimates: [...]} (or the --list-* lists)");
  c->add_option("--csv", f->csv, "write CSV here ('-': stdout)");
  checked(c->add_option("--top", f->top, "subgraphs shown in the tree"), IntRange{.min = 0, .max = 100000})->capture_default_str();
  c->add_option("--dim", f->onnx_dims, "ONNX: value of a dynamic dimension, NAME=VALUE (repeatable)");
  c->add_option("--onnx-unsupported", f->onnx_fallback, "ONNX ops outside the supported list: refuse, or elementwise (estimate as a pointwise op)")
      ->check(CLI::IsMember({"refuse", "elementwise"}))->capture_default_str();
  c->add_flag("--list-hw", f->list_hw, "list the hardware catalog");
  c->add_flag("--list-models", f->list_models, "list the built-in models");
  c->add_option("--calibrate", f->calibrate, "fit the target's parameters on a measurement set's train items");
  c->add_option("--write-calibration", f->write_calibration, "with --calibrate: write the fitted parameters here");
  c->add_option("--validate", f->validate, "measured vs estimated on a measurement set (MAPE per split)");
  return [f] { return run(*f); };
}

const bool registered = register_command(add_estimate);

}  // namespace
}  // namespace jouleprof::cli
