#include "jouleprof/workloads/bench_llm.hpp"

#include "jouleprof/result/sections.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "jouleprof/core/progress.hpp"
#include "jouleprof/core/checked.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/measure/process.hpp"
#include "jouleprof/sampler/monitor.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "host/sim_engine.hpp"
#include "host/weights.hpp"

namespace jouleprof::llm {

namespace {
std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}
std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void add_bench_options(CLI::App* c, BenchOptions& o) {
  c->add_option("--model", o.models, "built-in model(s): tiny, llama-3.2-1b, llama-3.2-3b, llama-3.1-8b (comma separated)")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--weights", o.weights, "Hugging Face checkpoint directory (config.json + *.safetensors) instead of random weights");
  c->add_option("--batch", o.batches, "batch sizes to sweep (comma separated)")->delimiter(',')->capture_default_str();
  c->add_option("--prompt", o.prompts, "prompt lengths in tokens to sweep (comma separated)")->delimiter(',')->capture_default_str();
  c->add_option("--gen", o.gens, "tokens generated per sequence (the first by prefill); comma separated to sweep")
      ->delimiter(',')->check(CLI::Range(2, 1 << 20))->capture_default_str();
  c->add_option("--dtype", o.dtypes, "bf16 or fp16 (comma separated to sweep)")
      ->delimiter(',')->check(CLI::IsMember({"bf16", "fp16"}))->capture_default_str();
  c->add_option("--device", o.device, "auto, nvml (a real GPU through jouleprof-llm) or sim (simulated GPU and engine)")
      ->check(CLI::IsMember(gpu_backend_names()))
      ->capture_default_str();
  c->add_option("--gpu", o.gpu, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  c->add_option("--min-seconds", o.min_seconds, "shortest prefill / decode energy window (repeats until reached)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  c->add_option("--iso-seconds", o.iso_seconds, "shortest isolation window per component / layer")
      ->check(CLI::PositiveNumber)->capture_default_str();
  c->add_flag("--no-components", o.no_components, "skip the per-component isolation runs");
  c->add_flag("--per-layer", o.per_layer, "also isolate every layer (one window each)");
  c->add_option("--idle", o.idle_s, "seconds of idle baseline after loading the first model (0: none)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  c->add_option("--json", o.json, "write the result JSON here");
  c->add_flag("--json-timelines", o.json_timelines, "embed every sample in the JSON (a \"timelines\" array, as runs export writes)");
  c->add_option("--tokens", o.tokens_file, "prompt token ids: one sequence per line (sets batch and prompt lengths)");
  c->add_option("--seed", o.seed, "seed of the random weights and prompts")->capture_default_str();
  c->add_option("--tag", o.tags, "KEY=VALUE recorded with the result (repeatable)");
  c->add_flag("--no-graphs", o.no_graphs, "launch decode kernels one by one instead of CUDA graphs");
  c->add_option("--variant", o.variant,
                "decode plan and its options joined by '+' (docs/bench-llm.md): auto (default), separate[+gemv|+cublas], "
                "cluster[+ctasN], dataflow[+slotsN+chunkN+l2waitN+spanN+release]; any plan: nopdl");
  c->add_option("--top-k", o.top_k, "sample each token from the k most likely (0: greedy)")
      ->check(CLI::Range(0, kMaxTopK))->capture_default_str();
  c->add_option("--temperature", o.temperature, "softmax temperature of top-k sampling")
      ->check(CLI::Range(0.001f, 1000.0f))->capture_default_str();
  c->add_option("--chunk-tokens", o.chunk_tokens, "most prompt tokens per prefill pass")->check(CLI::Range(16, 1 << 20))->capture_default_str();
  c->add_option("--nvml-lib", o.nvml_lib, "NVML library to load (default: libnvidia-ml.so.1, or $JOULEPROF_NVML_LIB)");
  c->add_flag("-q,--quiet", o.quiet, "no progress lines");
  c->add_flag("--progress", o.progress, "configuration i/N, elapsed, ETA and the last J/token on stderr (default: when a terminal)");
}

std::vector<std::string> bench_args(const BenchOptions& o) {
  std::vector<std::string> a;
  auto add = [&](const std::string& k, const std::string& v) {
    a.push_back(k);
    a.push_back(v);
  };
  std::string models;
  for (const auto& m : o.models) models += (models.empty() ? "" : ",") + m;
  add("--model", models);
  if (!o.weights.empty()) add("--weights", o.weights);
  add("--batch", join_ints(o.batches));
  add("--prompt", join_ints(o.prompts));
  add("--gen", join_ints(o.gens));
  std::string dtypes;
  for (const auto& d : o.dtypes) dtypes += (dtypes.empty() ? "" : ",") + d;
  add("--dtype", dtypes);
  add("--device", o.device);
  add("--gpu", std::to_string(o.gpu));
  add("--min-seconds", fmt_double(o.min_seconds));
  add("--iso-seconds", fmt_double(o.iso_seconds));
  if (o.no_components) a.emplace_back("--no-components");
  if (o.per_layer) a.emplace_back("--per-layer");
  add("--idle", fmt_double(o.idle_s));
  if (!o.json.empty()) add("--json", o.json);
  if (o.json_timelines) a.emplace_back("--json-timelines");
  if (!o.tokens_file.empty()) add("--tokens", o.tokens_file);
  add("--seed", std::to_string(o.seed));
  for (const auto& t : o.tags) add("--tag", t);
  if (o.quiet) a.emplace_back("--quiet");
  if (o.no_graphs) a.emplace_back("--no-graphs");
  if (!o.variant.empty()) add("--variant", o.variant);
  if (o.top_k > 0) add("--top-k", std::to_string(o.top_k));
  if (o.temperature != 1.0f) add("--temperature", fmt_double(static_cast<double>(o.temperature)));
  add("--chunk-tokens", std::to_string(o.chunk_tokens));
  if (!o.nvml_lib.empty()) add("--nvml-lib", o.nvml_lib);
  return a;
}

EngineFactory sim_engine_factory() {
  return [](const EngineOptions& eo, Monitor& m) -> Result<std::unique_ptr<LlmEngine>> {
    Result<LlmConfig> cfg = eo.weights_dir.empty() ? builtin_config(eo.model) : load_checkpoint_config(eo.weights_dir);
    if (!cfg) return cfg.error();
    auto models = m.gpus().sim_models;
    if (models.empty()) return make_error(Errc::unavailable, "the simulated engine needs the simulated GPU (--device sim)");
    SimSpeeds s;
    s.idle_w = models.front()->config().idle_w;
    s.tdp_w = models.front()->config().tdp_w;
    TimeBase* tb = &m.timebase();
    auto set_power = [models, tb](double w) {
      const double t = tb->now_s();
      for (const auto& sm : models) sm->schedule().set_constant(t, w);
    };
    return create_sim_engine(eo, *cfg, s, set_power);
  };
}

namespace {

struct CompWin {
  Component c;
  int window = -1;
  double calls = 0, per_step = 0;
};
struct LayerWin {
  int layer = 0, window = -1;
  double reps = 0;
};
struct Point {
  nlohmann::json meta;
  std::string skipped;
  std::string incomplete;  ///< why the point stopped early (interrupted, engine error)
  int index = 0;           ///< run index of its windows
  int run_w = -1, prefill_w = -1, decode_w = -1, step_w = -1;
  double passes = 0, prefill_tokens = 0, prefill_flops = 0;
  double steps = 0, decode_tokens = 0, decode_bytes_per_step = 0, decode_flops_per_step = 0;
  double step_reps = 0;
  int batch = 1, layers = 1;
  std::vector<CompWin> comps;
  std::vector<LayerWin> layer_wins;
};

std::optional<double> opt_div(std::optional<double> a, double b) {
  if (!a || b <= 0) return std::nullopt;
  return *a / b;
}
nlohmann::json num_or_null(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json window_json(const WindowResult& w, std::optional<double> idle_w) {
  nlohmann::json j;
  j["duration_s"] = w.duration_s();
  j["energy_j"] = w.gpu_energy_j;
  j["above_idle_j"] = num_or_null(w.gpu_above_idle_j);
  j["mean_power_w"] = w.duration_s() > 0 ? w.gpu_energy_j / w.duration_s() : 0.0;
  if (!w.gpus.empty()) {
    j["energy_method"] = w.gpus.front().method;
    double u = 0;
    for (const auto& g : w.gpus) u += g.uncertainty_j;
    j["uncertainty_j"] = u;
  }
  j["idle_share"] = idle_w && w.gpu_energy_j > 0 ? nlohmann::json(*idle_w * w.duration_s() / w.gpu_energy_j) : nlohmann::json(nullptr);
  j["complete"] = w.complete;
  return j;
}

/// The engine settings as the result's one label: the --variant words, then "+nograph" for
/// --no-graphs and "+topkN" for --top-k (the label of earlier results; not parsed back).
std::string variant_words(const BenchOptions& o) {
  std::string v = o.variant.empty() ? "auto" : o.variant;
  if (o.no_graphs) v += "+nograph";
  if (o.top_k > 1) v += "+topk" + std::to_string(o.top_k);
  return v;
}

std::string signal_reason(int sig) { return "interrupted by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")"; }


/// Step 1 of a sweep: the options checked before anything is opened.
struct ValidSweep {
  std::vector<DType> dtypes;
  std::vector<std::string> models;  ///< built-in names, or the one checkpoint directory
};
Result<ValidSweep> validate_sweep(const BenchOptions& o) {
  if (o.dtypes.empty() || o.gens.empty() || o.batches.empty() || o.prompts.empty() || (o.models.empty() && o.weights.empty())) {
    return make_error(Errc::invalid_argument, "--model, --dtype, --batch, --prompt and --gen need at least one value");
  }
  ValidSweep valid;
  for (const auto& d : o.dtypes) {
    auto dt = dtype_from_string(d);
    if (!dt) return dt.error();
    valid.dtypes.push_back(*dt);
  }
  for (int g : o.gens) {
    if (g < 2) return make_error(Errc::invalid_argument, "--gen must be at least 2 (one prefill token and one decode step)");
  }
  for (int b : o.batches) {
    if (b < 1) return make_error(Errc::invalid_argument, "--batch values must be at least 1");
  }
  for (int p : o.prompts) {
    if (p < 1) return make_error(Errc::invalid_argument, "--prompt values must be at least 1");
  }
  valid.models = o.models;
  if (!o.weights.empty()) valid.models = {o.weights};
  for (const auto& t : o.tags) {
    if (t.find('=') == std::string::npos || t.front() == '=') return make_error(Errc::invalid_argument, "--tag needs KEY=VALUE, got '" + t + "'");
  }
  {
    EngineOptions check;
    if (auto v = apply_variant(o.variant, check); !v) return v.error();
    check.sampling.top_k = std::max(check.sampling.top_k, o.top_k);
    check.sampling.temperature = o.temperature;
    if (auto v = validate_sampling(check.sampling); !v) return v.error();
  }
  return valid;
}

/// The Monitor of a sweep: the one GPU asked for (within CUDA_VISIBLE_DEVICES), no CPU sensors;
/// window edges synchronize with `*current`, the engine running.
Result<std::unique_ptr<Monitor>> open_monitor(const BenchOptions& o, LlmEngine* const& current) {
  MonitorOptions mo;
  mo.gpus.backend = o.device;
  apply_gpu_environment(mo.gpus, o.nvml_lib);  // CUDA_VISIBLE_DEVICES, --nvml-lib or $JOULEPROF_NVML_LIB
  if (o.device != "sim") {
    if (mo.gpus.cuda_visible_devices && !mo.gpus.cuda_visible_devices->empty()) {
      const auto ids = split_gpu_list(*mo.gpus.cuda_visible_devices);
      if (o.gpu >= static_cast<int>(ids.size())) return make_error(Errc::unavailable, "no GPU " + std::to_string(o.gpu) + " in CUDA_VISIBLE_DEVICES");
      mo.gpus.ids = {ids[static_cast<std::size_t>(o.gpu)]};
    } else {
      mo.gpus.ids = {std::to_string(o.gpu)};
    }
  }
  mo.sampler.read_cpu = false;
  mo.synchronize = [&current] {
    if (current != nullptr) current->synchronize();
  };
  return Monitor::create(mo);
}

/// One configuration of a sweep (its engine shape).
struct Shape {
  int batch, prompt, gen;
};
/// Step 2: the configurations of one model, the generation length varying fastest, then the
/// prompt, then the batch; with --tokens, the file's sequences at each generation length.
std::vector<Shape> plan_sweep(const BenchOptions& o, const std::vector<std::vector<int>>& file_tokens) {
  std::vector<Shape> grid;
  if (file_tokens.empty()) {
    for (int b : o.batches) {
      for (int p : o.prompts) {
        for (int G : o.gens) grid.push_back({b, p, G});
      }
    }
  } else {
    for (int G : o.gens) grid.push_back({static_cast<int>(file_tokens.size()), 0, G});
  }
  return grid;
}

/// A sweep while it runs: its Monitor, progress lines, and why it stopped (an engine error, a signal).
struct Sweep {
  const BenchOptions& o;
  Monitor& mon;
  std::function<void(const std::string&)> say;
  std::optional<Error> failure;
  int signal = 0;

  bool stopped() {
    if (signal == 0) signal = interrupting_signal();
    return signal != 0 || failure.has_value();
  }
  std::string stop_reason() const { return failure ? failure->message : signal_reason(signal); }
  /// Sleeps in small steps; false when stopped.
  bool sleep_s(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (stopped()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !stopped();
  }
  /// Step 3: the windows of one configuration inside its run window `base` (pt.run_w): prefill
  /// and decode repeated for --min-seconds, then each isolation window for --iso-seconds. Fills
  /// pt; a shape the engine cannot prepare leaves pt.skipped.
  void measure_point(LlmEngine* eng, const LlmConfig& cfg, const EngineOptions& eo, const RunShape& s,
                     const std::string& base, Point& pt);
};

void Sweep::measure_point(LlmEngine* eng, const LlmConfig& cfg, const EngineOptions& eo, const RunShape& s,
                          const std::string& base, Point& pt) {
  const int B = s.batch, G = s.gen;
  say(base + ": preparing");
  if (auto r = eng->prepare(s); !r) {
    pt.skipped = r.error().message;
    say(base + ": skipped: " + pt.skipped);
    return;
  }
  pt.meta["engine"] = eng->describe();
  // Warm-up (graphs, cuBLAS heuristics, clocks), then one timed pass of each phase.
  eng->prefill();
  eng->decode(G - 1);
  eng->synchronize();
  double t0 = now_s();
  eng->prefill();
  eng->synchronize();
  const double t_p = std::max(1e-6, now_s() - t0);
  t0 = now_s();
  eng->rewind();
  eng->decode(G - 1);
  eng->synchronize();
  const double t_d = std::max(1e-6, now_s() - t0);
  if (auto st = eng->status(); !st) {
    failure = st.error();
    return;
  }
  if (auto toks = eng->generated(); toks) {
    nlohmann::json sample = nlohmann::json::array();
    for (const auto& seq : *toks) {
      std::vector<int> head(seq.begin(), seq.begin() + std::min<long>(16, static_cast<long>(seq.size())));
      sample.push_back(head);
      if (sample.size() >= 4) break;
    }
    pt.meta["generated_sample"] = sample;
  }
  double sum_len = 0;
  for (int len : s.prompt_lens) {
    sum_len += len;
    pt.prefill_flops += WorkModel::prefill_flops(cfg, len);
    pt.decode_bytes_per_step += WorkModel::decode_kv_bytes(cfg, eo.dtype, len + (G - 2) / 2);
    pt.decode_flops_per_step += WorkModel::decode_flops(cfg, len + (G - 2) / 2);
  }
  pt.decode_bytes_per_step += WorkModel::decode_weight_bytes(cfg, eo.dtype, B);

  // Repeats `fn` until the window has lasted min_seconds (estimates from the timed pass,
  // then tops up if the GPU was faster than that pass), or until stopped.
  auto repeat_for = [&](double seconds, double per, const std::function<void()>& fn) {
    int n = 0;
    const double start = now_s();
    double left = seconds;
    while (left > 0 && !stopped()) {
      const int k = static_cast<int>(std::clamp(std::ceil(left / per), 1.0, 1e6));
      for (int i = 0; i < k; ++i) fn();
      n += k;
      eng->synchronize();
      const double el = now_s() - start;
      left = seconds - el;
      per = std::max(1e-7, el / n);
    }
    return n;
  };
  if (stopped()) return;
  say(base + ": prefill (" + fmt_double(1e3 * t_p) + " ms a pass)");
  auto w = mon.begin_at(base + "/prefill", std::nullopt, "phase", pt.index);
  eng->range_push(base + "/prefill");
  const int rp = repeat_for(o.min_seconds, t_p, [&] { eng->prefill(); });
  eng->range_pop();
  mon.end_at(w, std::nullopt, !stopped());
  pt.prefill_w = static_cast<int>(w);
  pt.passes = rp;
  pt.prefill_tokens = rp * sum_len;
  mon.count(w, "tokens", pt.prefill_tokens);
  if (stopped()) return;

  say(base + ": decode (" + fmt_double(1e3 * t_d) + " ms for " + std::to_string(G - 1) + " steps)");
  w = mon.begin_at(base + "/decode", std::nullopt, "phase", pt.index);
  eng->range_push(base + "/decode");
  const int rd = repeat_for(o.min_seconds, t_d, [&] {
    eng->rewind();
    eng->decode(G - 1);
  });
  eng->range_pop();
  mon.end_at(w, std::nullopt, !stopped());
  pt.decode_w = static_cast<int>(w);
  pt.steps = static_cast<double>(rd) * (G - 1);
  pt.decode_tokens = pt.steps * B;
  mon.count(w, "tokens", pt.decode_tokens);
  if (stopped() || (o.no_components && !o.per_layer)) return;

  // Isolation at the middle of the generation: each piece replayed on its own for
  // iso_seconds (CUDA graphs), so the sensor sees a steady load it can resolve.
  eng->rewind();
  eng->decode((G - 1) / 2);
  eng->synchronize();
  pt.meta["isolation_context"] = s.prompt_lens.front() + (G - 1) / 2;
  auto isolate = [&](const std::string& name, const std::function<int(int)>& run) -> std::pair<int, double> {
    (void)run(2);
    eng->synchronize();
    const double a = now_s();
    const int n = run(4);
    eng->synchronize();
    const double per = std::max(1e-7, (now_s() - a) / std::max(1, n));
    auto id = mon.begin(base + "/" + name);
    eng->range_push(base + "/" + name);
    int done = 0;
    const double start = now_s();
    double left = o.iso_seconds, per_rep = per;
    while (left > 0 && !stopped()) {
      done += run(static_cast<int>(std::clamp(std::ceil(left / per_rep), 1.0, 1e8)));
      eng->synchronize();
      const double el = now_s() - start;
      left = o.iso_seconds - el;
      per_rep = std::max(1e-7, el / std::max(1, done));
    }
    eng->range_pop();
    mon.end_at(id, std::nullopt, !stopped());
    return {static_cast<int>(id), static_cast<double>(done)};
  };
  if (!o.no_components) {
    say(base + ": isolating components (" + fmt_double(o.iso_seconds) + " s each)");
    for (int ci = 0; ci < kComponentCount && !stopped(); ++ci) {
      const auto c = static_cast<Component>(ci);
      auto [id, done] = isolate(std::string("component/") + component_name(c),
                                [&](int reps) { return eng->component(c, -1, reps); });
      const double per_rep = component_per_layer(c) ? cfg.layers : 1;
      mon.count(static_cast<Monitor::WindowId>(id), "calls", done * per_rep);
      pt.comps.push_back({c, id, done * per_rep, per_rep});
    }
    if (stopped()) return;
    auto [id, done] = isolate("step", [&](int reps) { return eng->step(reps); });
    mon.count(static_cast<Monitor::WindowId>(id), "steps", done);
    pt.step_w = id;
    pt.step_reps = done;
  }
  if (o.per_layer) {
    say(base + ": isolating " + std::to_string(cfg.layers) + " layers");
    for (int l = 0; l < cfg.layers && !stopped(); ++l) {
      auto [id, done] = isolate("layer/" + std::to_string(l), [&](int reps) { return eng->layer_block(l, reps); });
      mon.count(static_cast<Monitor::WindowId>(id), "calls", done);
      pt.layer_wins.push_back({l, id, done});
    }
  }
  if (auto st = eng->status(); !st) failure = st.error();
}

/// A sweep's windows by id, and the GPUs' idle power that the window figures compare against.
struct SweepWindows {
  const Measurement& m;
  std::optional<double> idle_w;
  const WindowResult* win(int id) const {
    return id >= 0 && static_cast<std::size_t>(id) < m.windows.size() ? &m.windows[static_cast<std::size_t>(id)] : nullptr;
  }
};

/// The GPUs' idle power summed; nullopt unless every GPU has one.
std::optional<double> total_idle_w(const Measurement& m) {
  if (m.gpu_state.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& g : m.gpu_state) {
    if (!g.idle_power_w) return std::nullopt;
    sum += *g.idle_power_w;
  }
  return sum;
}

/// The sweep's command, tags and status.
void label_sweep(const BenchOptions& o, Measurement& m, const std::optional<Error>& failure, int signal) {
  m.command = {"jouleprof", "bench", "llm"};
  for (const auto& a : bench_args(o)) m.command.push_back(a);
  m.builtin_workload = true;
  m.tags["workload"] = "bench-llm";
  std::string dtype_tag;
  for (const auto& d : o.dtypes) dtype_tag += (dtype_tag.empty() ? "" : ",") + d;
  m.tags["dtype"] = dtype_tag;
  for (const auto& t : o.tags) {
    const auto eq = t.find('=');
    m.tags[t.substr(0, eq)] = t.substr(eq + 1);
  }
  // No runs[] and no statistics over the configurations: they differ on purpose. Each is a run
  // of its own once split (bench_record.hpp); here its run window and point carry the status.
  if (failure) {
    m.complete = false;
    m.incomplete_reason = failure->message;
    m.exit_code = exit_code_for(*failure);
  } else if (signal != 0) {
    m.complete = false;
    m.incomplete_reason = signal_reason(signal);
    m.exit_code = 128 + signal;
  }
}

// A phase window's figures and its per-token ones (prefill_json, decode_json add their own).
nlohmann::json phase_json(const WindowResult& w, std::optional<double> idle_w, int window, double tokens) {
  nlohmann::json j = window_json(w, idle_w);
  j["window"] = window;
  j["tokens"] = tokens;
  j["tokens_per_s"] = tokens / std::max(1e-9, w.duration_s());
  j["j_per_token"] = w.gpu_energy_j / tokens;
  j["above_idle_j_per_token"] = num_or_null(opt_div(w.gpu_above_idle_j, tokens));
  return j;
}

std::optional<nlohmann::json> prefill_json(const Point& pt, const SweepWindows& ws) {
  const auto* w = ws.win(pt.prefill_w);
  if (w == nullptr || pt.passes <= 0) return std::nullopt;
  nlohmann::json p = phase_json(*w, ws.idle_w, pt.prefill_w, pt.prefill_tokens);
  p["passes"] = pt.passes;
  p["tflops"] = pt.prefill_flops * pt.passes / std::max(1e-9, w->duration_s()) / 1e12;
  p["ms_per_pass"] = 1e3 * w->duration_s() / pt.passes;
  return p;
}

std::optional<nlohmann::json> decode_json(const Point& pt, const SweepWindows& ws) {
  const auto* w = ws.win(pt.decode_w);
  if (w == nullptr || pt.steps <= 0) return std::nullopt;
  nlohmann::json d = phase_json(*w, ws.idle_w, pt.decode_w, pt.decode_tokens);
  d["steps"] = pt.steps;
  d["ms_per_step"] = 1e3 * w->duration_s() / pt.steps;
  d["j_per_step"] = w->gpu_energy_j / pt.steps;
  d["bytes_per_step"] = pt.decode_bytes_per_step;
  d["bandwidth_bytes_per_s"] = pt.decode_bytes_per_step * pt.steps / std::max(1e-9, w->duration_s());
  d["tflops"] = pt.decode_flops_per_step * pt.steps / std::max(1e-9, w->duration_s()) / 1e12;
  return d;
}

/// The isolated components of a point, their groups, and how their sum compares with the
/// isolated step and the decode window (decode_j_step, decode_ms_step: 0 without decode).
void add_components(nlohmann::json& j, const Point& pt, const SweepWindows& ws, double decode_j_step, double decode_ms_step) {
  nlohmann::json comps = nlohmann::json::array();
  double sum_j = 0, sum_ms = 0;
  std::map<std::string, double> groups;
  for (const CompWin& cw : pt.comps) {
    const auto* w = ws.win(cw.window);
    if (w == nullptr || cw.calls <= 0) continue;
    const double jpc = w->gpu_energy_j / cw.calls;
    nlohmann::json c = window_json(*w, ws.idle_w);
    c["name"] = component_name(cw.c);
    c["description"] = component_description(cw.c);
    c["group"] = component_group(cw.c);
    c["window"] = cw.window;
    c["calls"] = cw.calls;
    c["calls_per_step"] = cw.per_step;
    c["us_per_call"] = 1e6 * w->duration_s() / cw.calls;
    c["j_per_call"] = jpc;
    c["above_idle_j_per_call"] = num_or_null(opt_div(w->gpu_above_idle_j, cw.calls));
    c["j_per_step"] = jpc * cw.per_step;
    c["j_per_token"] = jpc * cw.per_step / pt.batch;
    sum_j += jpc * cw.per_step;
    sum_ms += 1e3 * w->duration_s() / cw.calls * cw.per_step;
    groups[component_group(cw.c)] += jpc * cw.per_step / pt.batch;
    comps.push_back(c);
  }
  for (auto& c : comps) c["share"] = sum_j > 0 ? c["j_per_step"].get<double>() / sum_j : 0.0;
  j["components"] = comps;
  j["groups_j_per_token"] = groups;
  nlohmann::json k;
  k["sum_components_j_per_step"] = sum_j;
  k["sum_components_ms_per_step"] = sum_ms;
  if (const auto* w = ws.win(pt.step_w); w != nullptr && pt.step_reps > 0) {
    k["isolated_step_j_per_step"] = w->gpu_energy_j / pt.step_reps;
    k["isolated_step_ms_per_step"] = 1e3 * w->duration_s() / pt.step_reps;
    k["step_window"] = pt.step_w;
  }
  k["decode_j_per_step"] = decode_j_step;
  k["decode_ms_per_step"] = decode_ms_step;
  if (decode_j_step > 0) k["sum_over_decode"] = sum_j / decode_j_step;
  if (decode_j_step > 0 && k.contains("isolated_step_j_per_step")) {
    k["isolated_step_over_decode"] = k["isolated_step_j_per_step"].get<double>() / decode_j_step;
  }
  j["consistency"] = k;
}

nlohmann::json layers_json(const Point& pt, const SweepWindows& ws) {
  nlohmann::json ls = nlohmann::json::array();
  for (const LayerWin& lw : pt.layer_wins) {
    const auto* w = ws.win(lw.window);
    if (w == nullptr || lw.reps <= 0) continue;
    nlohmann::json l = window_json(*w, ws.idle_w);
    l["layer"] = lw.layer;
    l["window"] = lw.window;
    l["calls"] = lw.reps;
    l["j_per_call"] = w->gpu_energy_j / lw.reps;
    l["above_idle_j_per_call"] = num_or_null(opt_div(w->gpu_above_idle_j, lw.reps));
    l["us_per_call"] = 1e6 * w->duration_s() / lw.reps;
    ls.push_back(l);
  }
  return ls;
}

/// One point of the "llm" section: its status and the figures of each of its windows.
nlohmann::json point_json(const Point& pt, const SweepWindows& ws) {
  nlohmann::json j = pt.meta;
  j["status"] = !pt.skipped.empty() ? "skipped" : pt.incomplete.empty() ? "complete" : "incomplete";
  if (!pt.incomplete.empty()) j["incomplete_reason"] = pt.incomplete;
  if (!pt.skipped.empty()) {
    j["skipped"] = pt.skipped;
    return j;
  }
  if (auto p = prefill_json(pt, ws)) j["prefill"] = *p;
  double decode_j_step = 0, decode_ms_step = 0;
  if (auto d = decode_json(pt, ws)) {
    decode_ms_step = (*d)["ms_per_step"].get<double>();
    decode_j_step = (*d)["j_per_step"].get<double>();
    j["decode"] = *d;
  }
  if (!pt.comps.empty()) add_components(j, pt, ws, decode_j_step, decode_ms_step);
  if (!pt.layer_wins.empty()) j["layers"] = layers_json(pt, ws);
  return j;
}

/// Step 4: the sweep's Measurement (windows, provenance, tags, status) and its "llm" section
/// (the derived figures of every point), from the finished Monitor.
BenchResult assemble_sweep(const BenchOptions& o, Measurement measurement, const std::vector<Point>& points, bool simulated,
                           const std::string& device_name, const std::optional<Error>& failure, int signal) {
  BenchResult res;
  res.simulated = simulated;
  res.measurement = std::move(measurement);
  Measurement& m = res.measurement;
  fill_provenance(m);
  label_sweep(o, m, failure, signal);
  if (failure) res.error = failure;
  const SweepWindows ws{m, total_idle_w(m)};
  nlohmann::json out;
  out["schema"] = kBenchSchema;
  out["simulated"] = simulated;
  out["device"] = device_name;
  out["idle_power_w"] = num_or_null(ws.idle_w);
  out["method"] =
      "prefill and decode: whole phases repeated until each window lasts --min-seconds, energy from the "
      "GPU energy counter (windows >= 1 s) or the 20-ms power-sample timeline; components, layers and the isolated "
      "step: each replayed alone (CUDA graphs) for --iso-seconds at the middle of the generation, energy per call = "
      "window energy / calls";
  nlohmann::json pts = nlohmann::json::array();
  for (const Point& pt : points) pts.push_back(point_json(pt, ws));
  out["points"] = pts;
  out["configurations"] = pts.size();
  res.llm = out;
  m.sections["llm"] = out.dump();
  return res;
}

/// The engine of one model and dtype, as the sweep's options set it.
EngineOptions engine_options(const BenchOptions& o, const std::string& model, DType dtype) {
  EngineOptions eo;
  if (o.weights.empty()) {
    eo.model = model;
  } else {
    eo.weights_dir = model;
  }
  eo.dtype = dtype;
  eo.seed = o.seed;
  eo.device = o.gpu;
  eo.chunk_tokens = o.chunk_tokens;
  eo.graphs = !o.no_graphs;
  (void)apply_variant(o.variant, eo);  // checked by validate_sweep
  if (o.top_k > 0) eo.sampling.top_k = o.top_k;
  eo.sampling.temperature = o.temperature;
  eo.sampling.seed = o.seed;
  return eo;
}

/// Sizes checked in 64 bits before anything is allocated or simulated: the context against
/// the model's positions, the KV cache and weights against the simulated H100's 80 GB.
Result<void> check_grid(const std::vector<Shape>& grid, const std::vector<std::vector<int>>& file_tokens,
                        const LlmConfig& cfg, const EngineOptions& eo, bool simulated) {
  for (const Shape& shape : grid) {
    int64_t longest = shape.prompt;
    for (const auto& t : file_tokens) longest = std::max<int64_t>(longest, static_cast<int64_t>(t.size()));
    const int64_t context = longest + shape.gen - 1;
    if (context > cfg.max_position) {
      return make_error(Errc::invalid_argument,
                        "prompt " + std::to_string(longest) + " + gen " + std::to_string(shape.gen) + " needs a context of " +
                            std::to_string(context) + " positions; " + cfg.name + " has " + std::to_string(cfg.max_position));
    }
    if (simulated) {
      const double need = static_cast<double>(shape.batch) * WorkModel::decode_kv_bytes(cfg, eo.dtype, static_cast<int>(context)) +
                          WorkModel::decode_weight_bytes(cfg, eo.dtype, shape.batch);
      constexpr double kSimMemoryBytes = 80e9;
      if (auto fits = check_fits("batch " + std::to_string(shape.batch) + " at context " + std::to_string(context) +
                                     " (weights and KV cache)",
                                 need, kSimMemoryBytes, "the simulated H100");
          !fits) {
        return fits.error();
      }
    }
  }
  return {};
}

/// The sweep across models and dtypes while it runs: the points so far, the idle window, the
/// engine running (`current`, which the Monitor's window edges synchronize with).
struct BenchRun {
  const BenchOptions& o;
  Monitor& mon;
  Sweep& sw;
  LlmEngine*& current;
  Progress& configs;
  const std::string variant;
  std::vector<Point> points;
  int idle_window = -1;
  std::string device_name;
  bool simulated = false;

  /// Every configuration of one model and dtype, with its own engine.
  void run_engine(const std::string& model, const std::string& dtype_name, DType dtype, const EngineFactory& factory) {
    const EngineOptions eo = engine_options(o, model, dtype);
    sw.say("loading " + model + " (" + dtype_name + (o.weights.empty() ? ", random weights" : "") + ")");
    auto eng_r = factory(eo, mon);
    if (!eng_r) {
      sw.failure = eng_r.error();
      return;
    }
    std::unique_ptr<LlmEngine> eng = std::move(*eng_r);
    current = eng.get();
    simulated = eng->simulated();
    device_name = eng->device_name();
    const LlmConfig& cfg = eng->config();
    if (idle_window < 0 && o.idle_s > 0) take_idle_window(*eng);
    std::vector<std::vector<int>> file_tokens;
    if (!o.tokens_file.empty()) {
      auto ft = read_token_file(o.tokens_file, cfg.vocab);
      if (!ft) {
        sw.failure = ft.error();
        current = nullptr;
        return;
      }
      file_tokens = std::move(*ft);
    }
    const std::vector<Shape> grid = plan_sweep(o, file_tokens);
    if (auto fits = check_grid(grid, file_tokens, cfg, eo, simulated); !fits) sw.failure = fits.error();
    for (const Shape& shape : grid) {
      if (sw.stopped()) break;
      run_shape(eng.get(), cfg, eo, dtype_name, file_tokens, shape);
    }
    current = nullptr;
  }

  /// The idle baseline's window, after the first engine is loaded and idle (set at the end, as
  /// `measure` does).
  void take_idle_window(LlmEngine& eng) {
    eng.synchronize();
    if (!sw.sleep_s(0.5)) return;
    sw.say("measuring the idle baseline for " + fmt_double(o.idle_s) + " s");
    const auto id = mon.begin_at("idle", std::nullopt, "idle", -1);
    const bool full = sw.sleep_s(o.idle_s);
    mon.end_at(id, std::nullopt, full);
    idle_window = static_cast<int>(id);
  }

  /// One configuration: its run window, its measured windows, its progress line.
  void run_shape(LlmEngine* eng, const LlmConfig& cfg, const EngineOptions& eo, const std::string& dtype_name,
                 const std::vector<std::vector<int>>& file_tokens, const Shape& shape) {
    const int B = shape.batch, P = shape.prompt, G = shape.gen;
    Point pt;
    pt.index = static_cast<int>(points.size());
    pt.batch = B;
    pt.layers = cfg.layers;
    RunShape s;
    s.batch = B;
    s.gen = G;
    s.seed = o.seed;
    if (file_tokens.empty()) {
      s.prompt_lens.assign(static_cast<std::size_t>(B), P);
    } else {
      for (const auto& t : file_tokens) s.prompt_lens.push_back(static_cast<int>(t.size()));
      s.prompt_tokens = file_tokens;
    }
    pt.meta = {{"index", pt.index},
               {"model", cfg.name},
               {"dtype", dtype_name},
               {"batch", B},
               {"prompt", file_tokens.empty() ? nlohmann::json(P) : nlohmann::json(s.prompt_lens)},
               {"gen", G},
               {"num_layers", cfg.layers},
               {"params", cfg.total_params()},
               {"weights", o.weights.empty() ? "random (seed " + std::to_string(o.seed) + ")" : o.weights},
               {"variant", variant},
               {"sampling", describe_sampling(eo.sampling)}};
    // Window names: MODEL[/DTYPE]/bBATCH/pPROMPT[/gGEN] (dtype and gen when swept).
    const std::string base = cfg.name + (o.dtypes.size() > 1 ? "/" + dtype_name : "") + "/b" + std::to_string(B) + "/p" +
                             (file_tokens.empty() ? std::to_string(P) : "file") +
                             (o.gens.size() > 1 ? "/g" + std::to_string(G) : "");
    // One window of kind "run" per configuration: everything it cost, from preparing the
    // engine to the last isolation window (the run store keeps each as a run).
    const auto run_w = mon.begin_at(base, std::nullopt, "run", pt.index);
    pt.run_w = static_cast<int>(run_w);
    pt.meta["run_window"] = pt.run_w;
    sw.measure_point(eng, cfg, eo, s, base, pt);
    if (pt.skipped.empty() && sw.stopped()) pt.incomplete = sw.stop_reason();
    mon.end_at(run_w, std::nullopt, pt.skipped.empty() && pt.incomplete.empty());
    std::string last = pt.skipped.empty() ? "" : "skipped";
    if (pt.decode_w >= 0 && pt.decode_tokens > 0) {
      if (auto e = mon.energy(static_cast<Monitor::WindowId>(pt.decode_w)); e) {
        last = base + " decode " + fmt_double(e->gpu_energy_j / pt.decode_tokens) + " J/token";
      }
    }
    points.push_back(std::move(pt));
    configs.step(last);
  }
};

}  // namespace

Result<BenchResult> run_bench(const BenchOptions& o, const EngineFactory& factory,
                              const std::function<void(const std::string&)>& progress) {
  auto valid = validate_sweep(o);
  if (!valid) return valid.error();
  LlmEngine* current = nullptr;
  // Ctrl-C and friends are collected between repetitions (the sampler thread, started by
  // Monitor::create, inherits the blocked mask): what was measured is kept.
  install_signal_forwarding();
  auto mon_r = open_monitor(o, current);
  if (!mon_r) return mon_r.error();
  Monitor& mon = **mon_r;
  Sweep sw{o, mon, [&](const std::string& line) {
             if (progress) progress(line);
           }, std::nullopt, 0};
  // "configuration 3/6 · elapsed · ETA · last: decode 0.512 J/token" (core/progress.hpp), one
  // line per configuration so it reads well between the step lines.
  const std::size_t shapes = o.tokens_file.empty() ? o.batches.size() * o.prompts.size() * o.gens.size() : o.gens.size();
  Progress configs("configuration", static_cast<int>(valid->models.size() * valid->dtypes.size() * shapes),
                   !o.quiet && Progress::wanted(o.progress), &Progress::steady_clock, Progress::line_sink());
  BenchRun run{o, mon, sw, current, configs, variant_words(o), {}, -1, "", false};
  for (const std::string& model : valid->models) {
    for (std::size_t di = 0; di < valid->dtypes.size() && !sw.stopped(); ++di) {
      run.run_engine(model, o.dtypes[di], valid->dtypes[di], factory);
    }
    if (sw.stopped()) break;
  }
  if (sw.failure && run.points.empty()) {
    (void)mon.finish();
    return *sw.failure;
  }
  // Idle baseline, as `measure` takes it; the window closed long before, its samples are in.
  std::vector<std::string> idle_warnings;
  if (run.idle_window >= 0) {
    set_idle_baseline(mon, static_cast<Monitor::WindowId>(run.idle_window), idle_warnings, "after loading the first model");
  }
  Measurement m = mon.finish();
  for (auto& w : idle_warnings) m.warnings.push_back(std::move(w));
  return assemble_sweep(o, std::move(m), run.points, run.simulated, run.device_name, sw.failure, sw.signal);
}


void print_bench(const BenchResult& r, std::ostream& out) {
  print_bench_section(r.llm, out);
  if (!r.measurement.complete) out << "\nINCOMPLETE: " << r.measurement.incomplete_reason << "\n";
}

// `runs show` prints a stored configuration's "llm" section through this renderer.
const bool kSectionRendererRegistered = register_section_renderer(
    {kBenchSchema, "bench llm", [](const std::string& text, std::ostream& out) {
       const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
       if (j.is_object()) print_bench_section(j, out);
     }});

void print_bench_section(const nlohmann::json& j, std::ostream& out) {
  char buf[512];
  if (j.value("simulated", false)) {
    out << "SIMULATED: simulated GPU and engine (time and power models); no number below is a measurement.\n";
  }
  out << "device: " << j.value("device", std::string("?"));
  if (j["idle_power_w"].is_number()) {
    std::snprintf(buf, sizeof buf, ", idle %.1f W", j["idle_power_w"].get<double>());
    out << buf;
  }
  out << "\n";
  auto get = [](const nlohmann::json& o, const char* k) { return o.contains(k) && o[k].is_number() ? o[k].get<double>() : std::nan(""); };
  for (const auto& p : j["points"]) {
    out << "\n" << p["model"].get<std::string>() << " " << p["dtype"].get<std::string>() << "  batch " << p["batch"].dump()
        << "  prompt " << p["prompt"].dump() << "  gen " << p["gen"].dump();
    if (p.contains("skipped")) {
      out << "  SKIPPED: " << p["skipped"].get<std::string>() << "\n";
      continue;
    }
    if (p.contains("incomplete_reason")) out << "  INCOMPLETE: " << p["incomplete_reason"].get<std::string>();
    out << "\n  engine: " << p.value("engine", std::string("?")) << "\n";
    // Without an idle baseline (--idle 0) the above-idle figures are unknown, not zero.
    auto idle_parts = [&](const nlohmann::json& f) {
      char a[48], sh[32];
      const double above = get(f, "above_idle_j_per_token"), share = get(f, "idle_share");
      if (std::isnan(above)) std::snprintf(a, sizeof a, "(above idle: n/a)");
      else std::snprintf(a, sizeof a, "(%.3f above idle)", 1e3 * above);
      if (std::isnan(share)) std::snprintf(sh, sizeof sh, "idle share n/a");
      else std::snprintf(sh, sizeof sh, "idle share %4.1f%%", 100 * share);
      return std::pair<std::string, std::string>(a, sh);
    };
    if (p.contains("prefill")) {
      const auto& f = p["prefill"];
      const auto [above, share] = idle_parts(f);
      std::snprintf(buf, sizeof buf, "  prefill %9.0f tok/s  %7.1f TFLOP/s  %8.3f mJ/token  %s  %6.1f W  %s  [%s]\n",
                    get(f, "tokens_per_s"), get(f, "tflops"), 1e3 * get(f, "j_per_token"), above.c_str(),
                    get(f, "mean_power_w"), share.c_str(), f.value("energy_method", std::string("?")).c_str());
      out << buf;
    }
    if (p.contains("decode")) {
      const auto& d = p["decode"];
      const auto [above, share] = idle_parts(d);
      std::snprintf(buf, sizeof buf, "  decode  %9.1f tok/s  %7.3f ms/step  %6.2f TB/s  %8.3f mJ/token  %s  %6.1f W  %s  [%s]\n",
                    get(d, "tokens_per_s"), get(d, "ms_per_step"), get(d, "bandwidth_bytes_per_s") / 1e12,
                    1e3 * get(d, "j_per_token"), above.c_str(), get(d, "mean_power_w"), share.c_str(),
                    d.value("energy_method", std::string("?")).c_str());
      out << buf;
    }
    if (p.contains("components")) {
      out << "  decode step by component (each isolated, replayed alone):\n";
      out << "    component     calls/step   us/call   mJ/call  mJ/token  share   power\n";
      for (const auto& c : p["components"]) {
        std::snprintf(buf, sizeof buf, "    %-12s %10.0f %9.2f %9.4f %9.4f %5.1f%% %6.1f W\n", c["name"].get<std::string>().c_str(),
                      get(c, "calls_per_step"), get(c, "us_per_call"), 1e3 * get(c, "j_per_call"),
                      1e3 * get(c, "j_per_token"), 100 * get(c, "share"), get(c, "mean_power_w"));
        out << buf;
      }
      const auto& k = p["consistency"];
      std::snprintf(buf, sizeof buf, "  per step: sum of components %.4f J / %.3f ms", get(k, "sum_components_j_per_step"),
                    get(k, "sum_components_ms_per_step"));
      out << buf;
      if (k.contains("isolated_step_j_per_step")) {  // absent when the sweep stopped before it
        std::snprintf(buf, sizeof buf, "; isolated step %.4f J / %.3f ms", get(k, "isolated_step_j_per_step"),
                      get(k, "isolated_step_ms_per_step"));
        out << buf;
      }
      std::snprintf(buf, sizeof buf, "; real decode %.4f J / %.3f ms (sum/real %.3f)\n", get(k, "decode_j_per_step"),
                    get(k, "decode_ms_per_step"), get(k, "sum_over_decode"));
      out << buf;
    }
    if (p.contains("layers")) {
      out << "  layers (each isolated): mJ/call";
      for (const auto& l : p["layers"]) {
        std::snprintf(buf, sizeof buf, " %.3f", 1e3 * get(l, "j_per_call"));
        out << buf;
      }
      out << "\n";
    }
  }
}

Result<void> write_bench_json(const BenchResult& r, const std::string& path, bool with_timelines) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(with_timelines ? result_to_json_with_timelines(r.measurement, -1) : result_to_json(r.measurement, -1));
  } catch (const std::exception& e) {
    return make_error(Errc::internal, std::string("result JSON: ") + e.what());
  }
  j["llm"] = r.llm;
  if (path == "-") {  // stdout (docs/cli.md)
    std::cout << j.dump(with_timelines ? -1 : 2) << "\n";
    std::cout.flush();
    if (!std::cout) return make_error(Errc::io, "cannot write to stdout");
    return {};
  }
  std::ofstream out(path);
  if (!out) return make_error(Errc::io, "cannot write " + path);
  out << j.dump(with_timelines ? -1 : 2) << "\n";
  if (!out) return make_error(Errc::io, "write failed: " + path);
  return {};
}

int bench_main(const BenchOptions& o, const EngineFactory& factory, const BenchAfter& after) {
  const auto report = [](const Error& e) { return report_error(e); };
  std::function<void(const std::string&)> progress;
  if (!o.quiet) progress = [](const std::string& s) { std::fprintf(stderr, "jouleprof: %s\n", s.c_str()); };
  auto r = run_bench(o, factory, progress);
  if (!r) return report(r.error());
  // With the JSON on stdout, stdout carries the JSON only: the table goes to stderr.
  print_bench(*r, o.json == "-" ? std::cerr : std::cout);
  std::cout.flush();
  // What was measured is printed and written before any error is reported.
  int rc = r->measurement.complete ? 0 : r->measurement.exit_code;
  if (!o.json.empty()) {
    if (auto w = write_bench_json(*r, o.json, o.json_timelines); !w) {
      const int e = report(w.error());
      if (rc == 0) rc = e;
    }
  }
  if (r->error) (void)report(*r->error);
  if (after) {
    const int a = after(*r);
    if (rc == 0) rc = a;
  }
  return rc;
}

}  // namespace jouleprof::llm
