// build_trace_profile on synthetic runs (a Measurement and a placed TraceData built here): the
// stages (registry, the split given the regression's result), physically possible rows (no row
// above the power limit minus idle, rows below the sensor's resolution summed; a rapidcheck
// property over random runs), intervals, and replay-informed attribution with its bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <memory>
#include <random>

#include "jouleprof/analysis/attribution.hpp"
#include "jouleprof/analysis/attribution_replay.hpp"
#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/replay/graph_replay.hpp"
#include "jouleprof/sampler/sampler.hpp"

#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#endif

using namespace jouleprof;

namespace {

constexpr double kIdle = 70, kLimit = 700;

struct Kernel {
  double t0, t1;
  std::string name, path;
  double power_w;  ///< true power while it runs
};

// A run of `seconds` whose true power is idle plus each kernel's power while it runs (1 ms
// steps), sampled every 20 ms as the mean over the 20 ms before (the default sensor model), plus
// an optional extra power everywhere the kernels leave gaps (the awake GPU).
struct SynthRun {
  Measurement m;
  TraceData t;
};

SynthRun make_run(const std::vector<Kernel>& ks, double seconds, double awake_w = 0, double noise_w = 0, unsigned seed = 1,
                  double dt = 0.0005) {
  const auto steps = static_cast<std::size_t>(seconds / dt);
  std::vector<double> truth(steps, kIdle);
  for (const Kernel& k : ks) {
    for (auto i = static_cast<std::size_t>(k.t0 / dt); i < static_cast<std::size_t>(k.t1 / dt) && i < steps; ++i) truth[i] = k.power_w;
  }
  if (awake_w > 0 && !ks.empty()) {
    for (auto i = static_cast<std::size_t>(ks.front().t0 / dt); i < static_cast<std::size_t>(ks.back().t1 / dt) && i < steps; ++i) {
      truth[i] = std::max(truth[i], kIdle + awake_w);
    }
  }
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, noise_w > 0 ? noise_w : 1);
  SynthRun r;
  GpuInfo gi;
  gi.name = "NVIDIA H100 80GB HBM3";
  gi.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  gi.driver_version = "570.00";
  gi.power_limit_w = kLimit;
  r.m.gpus.push_back(gi);
  GpuRunState st;
  st.idle_power_w = kIdle;
  st.power_limit_w = kLimit;
  r.m.gpu_state.push_back(st);
  auto tl = std::make_shared<GpuTimeline>(std::size_t{1} << 20);
  std::vector<Sample> samples;
  for (double t = 0.02; t <= seconds + 0.2; t += 0.02) {
    double e = 0;
    int n = 0;
    for (double u = t - 0.02; u < t - 1e-9; u += dt, ++n) {
      const auto i = static_cast<long>(std::floor(u / dt + 1e-9));
      e += i >= 0 && static_cast<std::size_t>(i) < steps ? truth[static_cast<std::size_t>(i)] : kIdle;
    }
    samples.push_back({t, e / n + (noise_w > 0 ? noise(rng) : 0)});
  }
  for (const Sample& s : samples) tl->series[static_cast<std::size_t>(Metric::power_sample_w)].append(s.t_s, s.value);
  r.m.timelines.push_back(tl);
  WindowResult run;
  run.kind = "run";
  run.name = "run";
  run.t0_s = 0;
  run.t1_s = seconds;
  GpuEnergy ge;
  ge.method = "timeline";
  ge.energy_j = detail::energy_between(samples, 0, seconds);
  run.gpus.push_back(ge);
  run.gpu_energy_j = ge.energy_j;
  r.m.windows.push_back(run);
  ProcessTrace pr;
  pr.pid = 1;
  pr.ended = true;
  r.t.processes.push_back(pr);
  for (const Kernel& k : ks) {
    Activity a;
    a.kind = Activity::Kind::kernel;
    a.t0_s = k.t0;
    a.t1_s = k.t1;
    a.name = k.name;
    a.path = k.path;
    a.grid[0] = 128;
    a.block[0] = 256;
    r.t.activities.push_back(a);
  }
  return r;
}

const KernelClassifier& classifier() {
  static const KernelClassifier c = *KernelClassifier::load(default_kernel_classes_path());
  return c;
}

// Two classes in bursts of `burst_s`: a GEMM at `gemm_w` and an elementwise kernel at `ew_w`,
// alternating, over 24 layers' paths; returns the true energy above idle per class.
std::vector<Kernel> two_classes(double burst_s, double seconds, double gemm_w, double ew_w, double* gemm_j, double* ew_j) {
  std::vector<Kernel> ks;
  *gemm_j = *ew_j = 0;
  int i = 0;
  for (double t = 0.2; t + burst_s < seconds - 0.3; t += burst_s * 1.05, ++i) {
    const bool g = i % 2 == 0;
    const std::string layer = "model.layers." + std::to_string((i / 2) % 24);
    ks.push_back({t, t + burst_s, g ? "gemm_bf16_kernel" : "vectorized_elementwise_kernel", layer + (g ? "/mlp/up_proj" : "/self_attn/act"),
                  g ? gemm_w : ew_w});
    (g ? *gemm_j : *ew_j) += ((g ? gemm_w : ew_w) - kIdle) * burst_s;
  }
  return ks;
}

const GroupRow* row(const std::vector<GroupRow>& rows, const std::string& key) {
  for (const GroupRow& r : rows) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

// Every row of every table: mean power within the limit, the estimate inside its interval.
void expect_physical(const GpuProfile& g) {
  const double cap = kLimit - kIdle;
  auto check = [&](const std::vector<GroupRow>& rows, const char* what) {
    for (const GroupRow& r : rows) {
      EXPECT_LE(r.mean_power_w, cap * (1 + 1e-9)) << what << " " << r.key;
      EXPECT_LE(r.low_j, r.energy_j + 1e-9) << what << " " << r.key;
      EXPECT_GE(r.high_j, r.energy_j - 1e-9) << what << " " << r.key;
    }
  };
  check(g.by_kernel, "kernel");
  check(g.by_path, "path");
  check(g.by_layer, "layer");
  check(g.by_component, "component");
  check(g.by_phase, "phase");
  for (const MethodBooks& b : g.methods) {
    check(b.by_class, b.method.c_str());
    EXPECT_NEAR(b.attributed_j + b.idle_j + b.unattributed_j, b.measured_j, 1e-9 * std::max(1.0, b.measured_j)) << b.method;
  }
}

}  // namespace

// Module paths → layer and component, and paths of 100 000+ characters (issue 35: module paths
// now on RE2, linear time, like the kernel-class rules; these two patterns did not overflow
// std::regex's stack, but it took 2.2 s for a 10 MB segment where RE2 takes milliseconds).
TEST(TraceProfile, ModulePathsToLayerAndComponentAtAnyLength) {
  EXPECT_EQ(layer_of_path("model.layers.12/self_attn/q_proj"), "layers.12");
  EXPECT_EQ(layer_of_path("transformer.h.3.mlp"), "layers.3");
  EXPECT_EQ(layer_of_path("blocks.0"), "layers.0");
  EXPECT_EQ(layer_of_path("mylayers.4/mlp"), "");
  EXPECT_EQ(component_of_path("model.layers.12/self_attn/q_proj"), "attention");
  EXPECT_EQ(component_of_path("model.layers.1/Feed_Forward/w1"), "mlp");
  EXPECT_EQ(component_of_path("model/mlp/Attention"), "attention");  // the innermost decides
  EXPECT_EQ(component_of_path("model/conv"), "other");
  EXPECT_EQ(component_of_path(""), "");

  const std::string one_word(100000, 'x');
  const std::string long_path = "model." + one_word + ".layers.7." + one_word + "/self_attn";
  EXPECT_EQ(layer_of_path(long_path), "layers.7");
  EXPECT_EQ(component_of_path(long_path), "attention");
  std::string many_segments;
  for (int i = 0; i < 25000; ++i) many_segments += "abc/";
  many_segments += "ln_f";
  EXPECT_EQ(component_of_path(many_segments), "norm");
  EXPECT_EQ(component_of_path(std::string(100000, 'a') + "ttn"), "attention");
}

// The registry feeds every name, each method declares its granularity, and the split starts from
// the regression result it is given (not a second fit of its own).
TEST(TraceProfile, RegistryAndTheSplitTakesTheRegressionsResult) {
  const auto names = attribution_method_names();
  EXPECT_EQ(names, (std::vector<std::string>{"interval", "split", "regression", "replay"}));
  EXPECT_EQ(attribution_method_names(true), (std::vector<std::string>{"interval", "split", "regression"}));
  EXPECT_EQ(attribution_method_choices(), "interval, split, regression or replay");
  EXPECT_EQ(make_attribution_method("interval")->granularity(), Granularity::kernel_class);
  EXPECT_EQ(make_attribution_method("split")->granularity(), Granularity::activity);
  EXPECT_EQ(make_attribution_method("split")->uses(), std::vector<std::string>{"regression"});
  double gj = 0, ej = 0;
  SynthRun r = make_run(two_classes(0.010, 10, 650, 300, &gj, &ej), 10);
  AttributionInput in;
  in.power = r.m.timelines[0]->series[static_cast<std::size_t>(Metric::power_sample_w)].all();
  in.t1_s = 10;
  in.idle_w = kIdle;
  in.measured_j = r.m.windows[0].gpus[0].energy_j;
  in.groups = 2;
  for (const Activity& a : r.t.activities) in.busy.push_back({a.t0_s, a.t1_s, in.items++, a.name == "gemm_bf16_kernel" ? 0u : 1u});
  auto split = make_split_method();
  const Attribution own = split->attribute(in);
  PriorAttributions prior;
  prior["regression"] = make_regression_method()->attribute(in);
  EXPECT_EQ(split->attribute_with(in, prior).item_j, own.item_j);  // the same regression: the same split
  for (GroupFit& f : prior["regression"].groups) f.active_power_w = f.active_power_w > 400 ? 100 : 900;  // swapped class powers
  const Attribution given = split->attribute_with(in, prior);
  EXPECT_NE(given.item_j, own.item_j);
  EXPECT_NEAR(given.attributed_j + given.idle_j + given.unattributed_j, in.measured_j, 1e-9 * in.measured_j);
}

// The tables of the stages give what the methods give: the split's class figures recover the two
// classes, every method's books balance, intervals hold the estimate.
TEST(TraceProfile, TwoClassRunThroughTheStages) {
  double gj = 0, ej = 0;
  SynthRun r = make_run(two_classes(0.020, 12, 650, 300, &gj, &ej), 12);
  auto p = build_trace_profile(r.m, r.t, classifier());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->gpus.size(), 1u);
  const GpuProfile& g = p->gpus[0];
  EXPECT_EQ(g.table_method, "split");
  ASSERT_EQ(g.methods.size(), 3u);  // no replay data: the replay method does not apply
  EXPECT_NEAR(row(g.by_class, "gemm")->energy_j, gj, 0.03 * gj);
  EXPECT_NEAR(row(g.by_class, "elementwise")->energy_j, ej, 0.05 * ej);
  EXPECT_GT(g.resolved_share, 0.99);
  // split and regression give every class a figure; interval none (every 20 ms stretch is
  // shorter than its 100 ms): no figure from it, not 0 J.
  for (const GroupRow& c : g.by_class) {
    EXPECT_EQ(c.by_method.count("split") + c.by_method.count("regression"), 2u) << c.key;
    EXPECT_EQ(c.by_method.count("interval"), 0u) << c.key;
  }
  expect_physical(g);
}

// A 0.5 ms kernel in every sample window while the GPU stays 450 W above idle between them:
// the split gives the kernels the windows' whole excess (~9 kW above idle per busy second). They
// keep at most the power limit's worth, the rest is unattributed, and the books still balance.
TEST(TraceProfile, NoRowAboveThePowerLimit) {
  std::vector<Kernel> ks;
  for (int i = 0; i < 300; ++i) {
    const double t = 0.2 + 0.01 * i;
    ks.push_back({t, t + 0.0005, "gemm_bf16_kernel", "model.layers." + std::to_string(i % 2) + "/mlp", kLimit});
  }
  SynthRun r = make_run(ks, 3.5, /*awake_w=*/450);
  auto p = build_trace_profile(r.m, r.t, classifier());
  ASSERT_TRUE(p) << p.error().message;
  const GpuProfile& g = p->gpus[0];
  expect_physical(g);
  bool noted = false;
  for (const MethodBooks& b : g.methods) {
    for (const std::string& n : b.notes) noted |= n.find("above the board's power limit") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// 60 distinct short kernels of one class, each busy far less than 5 sensor periods: one row
// "gemm (60 kernels below resolution)", not 60 rows of guessed watts; layers likewise.
TEST(TraceProfile, RowsBelowResolutionAreSummedIntoTheirClassAndLayer) {
  std::vector<Kernel> ks;
  for (int i = 0; i < 60; ++i) {
    const double t = 0.2 + 0.05 * i;
    ks.push_back({t, t + 0.004, "gemm_kernel_" + std::to_string(i), "model.layers." + std::to_string(i) + "/mlp", 400});
  }
  ks.push_back({3.5, 4.5, "long_gemm_kernel", "model.layers.99/mlp", 500});
  SynthRun r = make_run(ks, 5);
  auto p = build_trace_profile(r.m, r.t, classifier());
  ASSERT_TRUE(p) << p.error().message;
  const GpuProfile& g = p->gpus[0];
  ASSERT_EQ(g.by_kernel.size(), 2u);
  const GroupRow* merged = row(g.by_kernel, "gemm (60 kernels below resolution)");
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->merged, 60u);
  EXPECT_EQ(merged->count, 60u);
  // Each summed row keeps its own point estimate, and they add up to the sum's.
  ASSERT_EQ(merged->members.size(), 60u);
  double members_j = 0;
  for (const auto& [key, e] : merged->members) members_j += e;
  EXPECT_NEAR(members_j, merged->energy_j, 1e-9 * std::max(1.0, merged->energy_j));
  EXPECT_EQ(merged->members.front().first, "gemm_kernel_0");
  EXPECT_TRUE(row(g.by_layer, "(60 layers below resolution)"));
  EXPECT_TRUE(row(g.by_layer, "layers.99"));
  EXPECT_LT(g.resolved_share, 0.9);
  EXPECT_GT(g.resolved_share, 0.3);
  expect_physical(g);
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
TEST(TraceProfile, EveryRowIsPhysicallyPossibleOnRandomRuns) {
  const bool ok = rc::check("rows within the power limit, books balanced, estimate in its interval", [] {
    const int n = *rc::gen::inRange(1, 80);
    std::vector<Kernel> ks;
    double t = 0.05;
    for (int i = 0; i < n; ++i) {
      t += *rc::gen::inRange(0, 100000) / 1e6;
      const double d = *rc::gen::inRange(1, 80000) / 1e6;
      const int c = *rc::gen::inRange(0, 4);
      const char* names[] = {"gemm_bf16_kernel", "vectorized_elementwise_kernel", "flash_fwd_kernel", "rms_norm_kernel"};
      ks.push_back({t, t + d, std::string(names[c]) + (*rc::gen::inRange(0, 2) ? "_b" : ""),
                    "model.layers." + std::to_string(*rc::gen::inRange(0, 6)) + (c == 2 ? "/self_attn" : "/mlp"),
                    kIdle + *rc::gen::inRange(0, 700)});
      t += d;
    }
    const double seconds = t + 0.3;
    SynthRun r = make_run(ks, seconds, *rc::gen::inRange(0, 400), *rc::gen::inRange(0, 30), *rc::gen::inRange(1, 1000));
    auto p = build_trace_profile(r.m, r.t, classifier());
    RC_ASSERT(static_cast<bool>(p));
    const double cap = kLimit - kIdle;
    for (const GpuProfile& g : p->gpus) {
      for (const auto* rows : {&g.by_kernel, &g.by_path, &g.by_layer, &g.by_component, &g.by_phase}) {
        for (const GroupRow& x : *rows) {
          RC_ASSERT(x.mean_power_w <= cap * (1 + 1e-9));
          RC_ASSERT(x.low_j <= x.energy_j + 1e-9 && x.energy_j <= x.high_j + 1e-9);
        }
      }
      for (const MethodBooks& b : g.methods) {
        for (const GroupRow& x : b.by_class) RC_ASSERT(x.mean_power_w <= cap * (1 + 1e-9));
        RC_ASSERT(std::fabs(b.attributed_j + b.idle_j + b.unattributed_j - b.measured_j) <= 1e-9 * std::max(1.0, std::fabs(b.measured_j)));
      }
    }
  });
  EXPECT_TRUE(ok);
}
#endif

namespace {

// The replay's rows for the two-class run: each kernel's true energy per call (total, with the
// replay's idle) times `factor` (another clock or temperature).
ReplayReference replay_for(double burst_s, double gemm_w, double ew_w, double factor, const std::string& gpu = "NVIDIA H100 80GB HBM3") {
  ReplayReference r;
  r.source = "replay.json";
  r.gpu = gpu;
  r.idle_w = 60;
  for (const auto& [name, w] : {std::pair<std::string, double>{"gemm_bf16_kernel", gemm_w}, {"vectorized_elementwise_kernel", ew_w}}) {
    ReplayKernel k;
    k.name = name;
    k.status = "replayed";
    k.time_per_call_s = burst_s;
    k.energy_per_call_j = (60 + factor * (w - kIdle)) * burst_s;
    k.half_width_j = 0.02 * factor * (w - kIdle) * burst_s;
    k.count = 1;
    r.kernels.push_back(k);
  }
  return r;
}

}  // namespace

// 5 ms bursts inside 20 ms sensor windows: the in-situ methods cannot tell the classes apart
// well; the replay's per-call energies can, scaled to the run's energy above idle (the books
// balance exactly), and the scale factor undoes the replay's 20% lower power.
TEST(TraceProfile, ReplayInformedAttributionRecoversTheClassesAndBalances) {
  double gj = 0, ej = 0;
  SynthRun r = make_run(two_classes(0.005, 10, 650, 250, &gj, &ej), 10);
  const ReplayReference rep = replay_for(0.005, 650, 250, 0.8);
  TraceProfileOptions o;
  o.replay = &rep;
  auto p = build_trace_profile(r.m, r.t, classifier(), o);
  ASSERT_TRUE(p) << p.error().message;
  const GpuProfile& g = p->gpus[0];
  EXPECT_EQ(g.table_method, "replay");
  ASSERT_EQ(g.methods.size(), 4u);
  ASSERT_TRUE(g.replay_scale);
  EXPECT_NEAR(*g.replay_scale, 1 / 0.8, 0.03);
  EXPECT_EQ(g.replay_unmatched_share, 0);
  EXPECT_NEAR(row(g.by_class, "gemm")->energy_j, gj, 0.02 * gj);
  EXPECT_NEAR(row(g.by_class, "elementwise")->energy_j, ej, 0.02 * ej);
  const MethodBooks& b = g.methods[3];
  EXPECT_EQ(b.method, "replay");
  EXPECT_DOUBLE_EQ(b.attributed_j + b.idle_j + b.unattributed_j, b.measured_j);
  for (const GroupRow& c : g.by_class) {
    EXPECT_EQ(c.by_method.count("split") + c.by_method.count("regression") + c.by_method.count("replay"), 3u) << c.key;
    EXPECT_LT(c.low_j, c.energy_j);  // the replay's CI at least
  }
  expect_physical(g);
  for (const UniqueKernel& k : p->kernels) EXPECT_EQ(k.method, "replay");
}

// Another GPU or none of the run's kernels: refused with the reason; a replay missing a kernel:
// its share said, the split's figures kept for it; another driver: marked.
TEST(TraceProfile, ReplayOfAnotherGpuOrModelIsRefusedAndMissingKernelsAreSaid) {
  double gj = 0, ej = 0;
  SynthRun r = make_run(two_classes(0.005, 6, 650, 250, &gj, &ej), 6);
  TraceProfileOptions o;
  const ReplayReference other_gpu = replay_for(0.005, 650, 250, 1, "NVIDIA A100-SXM4-80GB");
  o.replay = &other_gpu;
  auto a = build_trace_profile(r.m, r.t, classifier(), o);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("ran on NVIDIA A100-SXM4-80GB, the run on NVIDIA H100 80GB HBM3"), std::string::npos) << a.error().message;
  ReplayReference other_model = replay_for(0.005, 650, 250, 1);
  for (ReplayKernel& k : other_model.kernels) k.name += "_of_another_model";
  o.replay = &other_model;
  auto b = build_trace_profile(r.m, r.t, classifier(), o);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("no measured row for any kernel of this run"), std::string::npos) << b.error().message;
  ReplayReference partial = replay_for(0.005, 650, 250, 1);
  partial.kernels.pop_back();
  partial.driver = "550.54";
  partial.gpu_uuid = "GPU-11111111-2222-3333-4444-555555555555";  // another board of the run's model
  o.replay = &partial;
  auto c = build_trace_profile(r.m, r.t, classifier(), o);
  ASSERT_TRUE(c) << c.error().message;
  const GpuProfile& g = c->gpus[0];
  EXPECT_NEAR(g.replay_unmatched_share, 0.5, 0.01);
  ASSERT_EQ(g.replay_marks.size(), 2u);
  EXPECT_EQ(g.replay_marks[0].rfind("the replay ran on another board of this model (GPU-11111111-2222-3333-4444-555555555555, the run on "
                                     "GPU-00000000-0000-0000-0000-000000000000)", 0), 0u) << g.replay_marks[0];
  EXPECT_NE(g.replay_marks[1].find("driver 550.54"), std::string::npos);
  const GroupRow* ew = row(g.by_class, "elementwise");
  ASSERT_NE(ew, nullptr);
  EXPECT_DOUBLE_EQ(ew->energy_j, ew->by_method.at("split"));
  const MethodBooks& books = g.methods[3];
  EXPECT_NEAR(books.attributed_j + books.idle_j + books.unattributed_j, books.measured_j, 1e-9 * books.measured_j);
}

TEST(TraceProfile, ReplayFileIsReadAndMatchedByNameAndLaunchConfiguration) {
  const std::string text = R"({"command": ["jouleprof", "replay"], "replay": {"schema": "jouleprof.replay", "replay_gpu": "G", "idle_power_w": 50,
    "kernels": [
      {"name": "k", "status": "replayed", "count": 3, "energy_per_call_j": 0.6, "replayed_energy_per_call_j": 0.5, "replayed_mean_s": 0.001,
       "energy_per_call_half_width_j": 0.01, "grid": [128, 1, 1], "block": [256, 1, 1]},
      {"name": "k", "status": "replayed", "count": 1, "replayed_energy_per_call_j": 0.9, "replayed_mean_s": 0.001, "grid": [64, 1, 1], "block": [256, 1, 1]},
      {"name": "m", "status": "extrapolated", "count": 1, "energy_per_call_j": 0.2, "replayed_mean_s": 0.001}]}})";
  auto r = parse_replay_reference(text, "x.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->gpu, "G");
  const int g128[3] = {128, 1, 1}, g64[3] = {64, 1, 1}, g32[3] = {32, 1, 1}, b[3] = {256, 1, 1};
  EXPECT_NEAR(match_replay(*r, "k", g128, b)->above_idle_j, 0.5 - 0.05, 1e-12);
  EXPECT_NEAR(match_replay(*r, "k", g64, b)->above_idle_j, 0.9 - 0.05, 1e-12);
  EXPECT_FALSE(match_replay(*r, "k", g32, b));  // another configuration, no loose row
  EXPECT_FALSE(match_replay(*r, "m", g32, b));  // not measured
  EXPECT_FALSE(parse_replay_reference("{\"schema\": \"jouleprof.result\"}", "r.json"));
  EXPECT_FALSE(parse_replay_reference("not json", "r.json"));
  auto bad = parse_replay_reference(R"({"schema": "jouleprof.replay", "kernels": [{"name": "k", "status": "replayed"}]})", "b.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("without its energy and time per call"), std::string::npos);
}

TEST(TraceProfile, ExactReplayFileIsReadAsItsMeasuredKernelRows) {
  // jouleprof.torch.replay_step's JSON: measured kernel rows count ("exact"), timed rows and
  // copies do not; the GPU and idle power carry over.
  const std::string text = R"({"schema": "jouleprof.exact_replay", "schema_version": 1, "gpu": "NVIDIA H100 80GB HBM3",
    "gpu_uuid": "GPU-11111111-2222-3333-4444-555555555555", "idle_power_w": 100,
    "rows": [
      {"kind": "kernel", "name": "gemm", "status": "measured", "count": 16, "time_s": 0.0001, "energy_per_call_j": 0.05,
       "energy_per_call_half_width_j": 0.001, "grid": [2, 66, 1], "block": [384, 1, 1]},
      {"kind": "kernel", "name": "relu", "status": "timed", "count": 16, "time_s": 0.00001, "energy_per_call_j": 0.003,
       "grid": [64, 1, 1], "block": [128, 1, 1]},
      {"kind": "memcpy", "name": "memcpy DtoD", "status": "measured", "count": 1, "time_s": 0.0001, "energy_per_call_j": 0.01}]})";
  auto r = parse_replay_reference(text, "exact.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r->gpu_uuid, "GPU-11111111-2222-3333-4444-555555555555");
  ASSERT_EQ(r->kernels.size(), 2u);
  const int g[3] = {2, 66, 1}, b[3] = {384, 1, 1}, gr[3] = {64, 1, 1}, br[3] = {128, 1, 1};
  EXPECT_NEAR(match_replay(*r, "gemm", g, b)->above_idle_j, 0.05 - 100 * 0.0001, 1e-12);
  EXPECT_FALSE(match_replay(*r, "relu", gr, br));  // timed: its power is not its own
}

// The device's two-class check (scripts/device-trace.sh twoclass) on the simulated sensor: the
// twoclass program's calls (GEMM 0.25 ms at 650 W, copy 0.2 ms at 380 W) back to back in
// alternating bursts, 5-30 ms or 0.2-2 ms long, with 0.1 ms awake gaps between bursts; the classes'
// exact replay written by the graph replay's own JSON writer at 10% below the run's power above
// idle, read back by `trace --replay`'s reader. The replay-informed per-class energy is within 5%
// of each class's true energy in both regimes (the issue's target).
namespace {

struct TwoClassCase {
  std::vector<Kernel> kernels;
  double gemm_j = 0, copy_j = 0;
};

TwoClassCase twoclass_run(double min_s, double max_s, double seconds, unsigned seed) {
  constexpr double kGemmCall = 0.00025, kCopyCall = 0.0002, kGap = 0.0001;
  TwoClassCase c;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> burst(min_s, max_s);
  bool gemm = true;
  for (double t = 0.1; t < seconds - 0.1 - max_s;) {
    const double call = gemm ? kGemmCall : kCopyCall, w = gemm ? 650 : 380;
    const long n = std::max(1L, std::lround(burst(rng) / call));
    for (long i = 0; i < n; ++i, t += call) c.kernels.push_back({t, t + call, gemm ? "gemm_bf16_kernel" : "stream_copy_kernel", "", w});
    (gemm ? c.gemm_j : c.copy_j) += (w - kIdle) * call * static_cast<double>(n);
    t += kGap;
    gemm = !gemm;
  }
  return c;
}

std::string twoclass_exact_replay_json() {
  GraphReplay r;
  r.gpu = "NVIDIA H100 80GB HBM3";
  r.idle_w = 60;
  for (const auto& [name, call, w] : {std::tuple<std::string, double, double>{"gemm_bf16_kernel", 0.00025, 650}, {"stream_copy_kernel", 0.0002, 380}}) {
    ExactRow x;
    x.group.kind = "kernel";
    x.group.name = name;
    x.group.grid = {128, 1, 1};
    x.group.block = {256, 1, 1};
    x.group.count = 1;
    x.status = "measured";
    x.time_ns = call * 1e9;
    x.energy_j = (r.idle_w + 0.9 * (w - kIdle)) * call;
    x.energy_half_width_j = 0.01 * x.energy_j;
    x.power_w = x.energy_j / call;
    r.rows.push_back(x);
  }
  return graph_replay_json(r);
}

}  // namespace

TEST(TraceProfile, TwoClassReplayInformedWithinFivePercentInBothRegimes) {
  auto rep = parse_replay_reference(twoclass_exact_replay_json(), "tc_exact.json");
  ASSERT_TRUE(rep) << rep.error().message;
  ASSERT_EQ(rep->kernels.size(), 2u);
  for (const auto& [name, min_s, max_s] : {std::tuple<const char*, double, double>{"bursts 5-30 ms", 0.005, 0.030}, {"kernels 0.2-2 ms", 0.0002, 0.002}}) {
    SCOPED_TRACE(name);
    const TwoClassCase c = twoclass_run(min_s, max_s, 6, 7);
    SynthRun r = make_run(c.kernels, 6, 40, 0, 1, 0.00005);
    for (Activity& a : r.t.activities) a.grid[1] = a.grid[2] = a.block[1] = a.block[2] = 1;  // as CUPTI gives them
    TraceProfileOptions o;
    o.replay = &*rep;
    auto p = build_trace_profile(r.m, r.t, classifier(), o);
    ASSERT_TRUE(p) << p.error().message;
    const GpuProfile& g = p->gpus[0];
    ASSERT_EQ(g.table_method, "replay");
    EXPECT_EQ(g.replay_unmatched_share, 0);
    const GroupRow* gemm = row(g.by_class, "gemm");
    const GroupRow* copy = row(g.by_class, "copy");
    ASSERT_NE(gemm, nullptr);
    ASSERT_NE(copy, nullptr);
    EXPECT_NEAR(gemm->energy_j, c.gemm_j, 0.05 * c.gemm_j);
    EXPECT_NEAR(copy->energy_j, c.copy_j, 0.05 * c.copy_j);
    expect_physical(g);
  }
}

// Sampled mode (`trace --sample`): a decode-like run of four layers (attention, MLP and norm
// kernels at different powers, the MLP's length drifting over the run) traced in full and with
// kernels kept only when launched in the first 10% of every second. The sampled per-layer shares
// match full tracing within 3 percentage points, the per-component ones within 4 (see below) and
// inside their intervals; its books are the whole run's; its intervals are wider.
namespace {

std::vector<Kernel> decode_like(double seconds) {
  std::vector<Kernel> ks;
  double t = 0.1;
  for (int step = 0; t < seconds - 0.2; ++step) {
    for (int l = 0; l < 4; ++l) {
      const std::string layer = "model.layers." + std::to_string(l);
      const double mlp = 0.0025 * (1 + 0.3 * std::sin(step / 7.0 + l));
      for (const auto& [name, path, len, w] : {std::tuple<std::string, std::string, double, double>{"rms_norm_kernel", layer + "/input_layernorm", 0.0005, 250},
                                               {"flash_attn_fwd_kernel", layer + "/self_attn/core", 0.0015, 450},
                                               {"gemm_bf16_kernel", layer + "/mlp/up_proj", mlp, 600}}) {
        ks.push_back({t, t + len, name, path, w});
        t += len + 0.0001;
      }
    }
  }
  return ks;
}

double share_of(const std::vector<GroupRow>& rows, const std::string& key) {
  const GroupRow* r = row(rows, key);
  return r != nullptr ? r->share : 0;
}

// The run of `ks` as `trace --sample 10% --sample-period 1` records it: kernels only in the first
// 0.1 s of every second.
SynthRun sampled_run(const std::vector<Kernel>& ks, double seconds) {
  SynthRun r = make_run(ks, seconds, 30, 5, 3);
  r.t.sampling.on_s = 0.1;
  r.t.sampling.period_s = 1;
  for (int k = 0; k < static_cast<int>(seconds); ++k) r.t.sampling.windows_s.emplace_back(k, k + 0.1);
  std::erase_if(r.t.activities, [](const Activity& a) { return a.t0_s - std::floor(a.t0_s) >= 0.1; });
  return r;
}

}  // namespace

TEST(TraceProfile, SampledSharesMatchFullTracing) {
  const double seconds = 30;
  const auto ks = decode_like(seconds);
  SynthRun full = make_run(ks, seconds, 30, 5, 3);
  auto pf = analyze_placed_trace(full.m, full.t, classifier());
  ASSERT_TRUE(pf) << pf.error().message;
  SynthRun sampled = sampled_run(ks, seconds);
  auto ps = analyze_placed_trace(sampled.m, sampled.t, classifier());
  ASSERT_TRUE(ps) << ps.error().message;
  ASSERT_TRUE(ps->sampling);
  EXPECT_NEAR(ps->sampling->fraction(), 0.1, 0.005);
  EXPECT_FALSE(pf->sampling);
  const GpuProfile& f = pf->gpus[0];
  const GpuProfile& s = ps->gpus[0];
  ASSERT_TRUE(s.sampling_scale);
  ASSERT_EQ(f.by_component.size(), s.by_component.size());
  for (const GroupRow& r : f.by_component) {
    // Not within 3 points here (norm 10.2% sampled against 6.6% in full, attention 26.4% against
    // 27.6%): the regression's class powers, where the split starts, are less determined from a
    // tenth of the samples (static 95 W fitted, 71 W in full) and the norm's power is pulled up
    // to the classes' common one. The full figure stays inside the sampled interval.
    const GroupRow* x = row(s.by_component, r.key);
    ASSERT_NE(x, nullptr);
    EXPECT_GE(r.energy_j, x->low_j) << r.key;
    EXPECT_LE(r.energy_j, x->high_j) << r.key;
    EXPECT_NEAR(x->share, r.share, 0.04) << r.key;
    EXPECT_GT((x->high_j - x->low_j) / x->energy_j, (r.high_j - r.low_j) / r.energy_j) << r.key << ": the sampled interval is wider";
  }
  ASSERT_EQ(f.by_layer.size(), 4u);
  for (const GroupRow& r : f.by_layer) EXPECT_NEAR(share_of(s.by_layer, r.key), r.share, 0.03) << r.key;
  // The books are the whole run's, and the sampled figures are near the full ones.
  for (std::size_t m = 0; m < s.methods.size(); ++m) {
    EXPECT_NEAR(s.methods[m].measured_j, full.m.windows[0].gpus[0].energy_j, 1e-9 * s.methods[m].measured_j);
    if (s.methods[m].method == "split") {
      EXPECT_NEAR(s.methods[m].attributed_j, f.methods[m].attributed_j, 0.05 * f.methods[m].attributed_j);
    }
  }
  expect_physical(s);
  EXPECT_NE(sampled.m.sections.at("trace").find("\"traced_fraction\""), std::string::npos);
  EXPECT_NE(trace_profile_text(*ps).find("sampled: kernels traced 10% of every 1 s; 30 windows"), std::string::npos) << trace_profile_text(*ps);
}

// A short sampled run resolves no layer: they are summed into one row, which keeps each layer's
// own estimate scaled to the whole run as the row is (the members add up to it), and those
// estimates give the full trace's layer shares.
TEST(TraceProfile, SampledRowsBelowResolutionKeepTheirMembersScaled) {
  const double seconds = 3;  // 0.3 s traced: each layer busy < 5 sensor periods in the windows
  const auto ks = decode_like(seconds);
  SynthRun full = make_run(ks, seconds, 30, 5, 3);
  auto pf = analyze_placed_trace(full.m, full.t, classifier());
  ASSERT_TRUE(pf) << pf.error().message;
  SynthRun sampled = sampled_run(ks, seconds);
  auto ps = analyze_placed_trace(sampled.m, sampled.t, classifier());
  ASSERT_TRUE(ps) << ps.error().message;
  const GpuProfile& s = ps->gpus[0];
  const GroupRow* merged = nullptr;
  for (const GroupRow& r : s.by_layer) {
    if (!r.members.empty()) merged = &r;
  }
  ASSERT_NE(merged, nullptr) << "no layer row summed below resolution";
  double sum = 0, total = 0;
  for (const auto& [key, e] : merged->members) sum += e;
  EXPECT_NEAR(sum, merged->energy_j, 1e-9 * merged->energy_j);
  for (const GroupRow& r : s.by_layer) total += r.energy_j;
  for (const auto& [key, e] : merged->members) {
    const GroupRow* f = row(pf->gpus[0].by_layer, key);
    ASSERT_NE(f, nullptr) << key;
    // Three 0.1 s windows of MLPs whose length varies with the step: within 5 points here (3.4
    // at most); SampledSharesMatchFullTracing holds 3 on a 30 s run.
    EXPECT_NEAR(e / total, f->share, 0.05) << key;
  }
}

TEST(TraceProfile, SampledRunShorterThanOnePeriodIsSaidInOneLine) {
  double gj = 0, ej = 0;
  SynthRun r = make_run(two_classes(0.010, 0.8, 650, 300, &gj, &ej), 0.8);
  r.t.sampling.on_s = 0.1;
  r.t.sampling.period_s = 1;
  r.t.sampling.windows_s = {{0.2, 0.3}};
  std::erase_if(r.t.activities, [](const Activity& a) { return a.t0_s < 0.2 || a.t0_s >= 0.3; });
  auto p = analyze_placed_trace(r.m, r.t, classifier());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_FALSE(p->warnings.empty());
  EXPECT_EQ(p->warnings.front().rfind("sampled mode: the run lasted 0.8 s, less than one sampling period (1 s)", 0), 0u) << p->warnings.front();
  EXPECT_EQ(p->warnings.front().find('\n'), std::string::npos);
}

// Paused by the program (jouleprof_trace_pause) for the first 5 s of a 30 s run: the analysis works
// over the 25 recorded seconds as over sampled windows, the books are the whole run's, the layer
// shares match full tracing, and the summary says how long the program paused.
TEST(TraceProfile, PausedTimeIsLeftOutAndSaid) {
  const double seconds = 30;
  const auto ks = decode_like(seconds);
  SynthRun full = make_run(ks, seconds, 30, 5, 3);
  auto pf = analyze_placed_trace(full.m, full.t, classifier());
  ASSERT_TRUE(pf) << pf.error().message;
  SynthRun paused = make_run(ks, seconds, 30, 5, 3);
  paused.t.sampling.windows_s = {{5, seconds}};
  paused.t.sampling.pauses_s = {{0, 5}};
  std::erase_if(paused.t.activities, [](const Activity& a) { return a.t0_s < 5; });
  auto pp = analyze_placed_trace(paused.m, paused.t, classifier());
  ASSERT_TRUE(pp) << pp.error().message;
  ASSERT_TRUE(pp->sampling);
  EXPECT_NEAR(pp->sampling->paused_s, 5, 1e-9);
  EXPECT_NEAR(pp->sampling->fraction(), 25 / seconds, 0.005);
  const GpuProfile& f = pf->gpus[0];
  const GpuProfile& p = pp->gpus[0];
  ASSERT_TRUE(p.sampling_scale);
  EXPECT_GT(*p.sampling_scale, 1.1);  // 25 s of kernels stand for 30 s of energy
  ASSERT_EQ(f.by_layer.size(), 4u);
  for (const GroupRow& r : f.by_layer) EXPECT_NEAR(share_of(p.by_layer, r.key), r.share, 0.02) << r.key;
  for (const MethodBooks& b : p.methods) EXPECT_NEAR(b.measured_j, full.m.windows[0].gpus[0].energy_j, 1e-9 * b.measured_j);
  expect_physical(p);
  const std::string text = trace_profile_text(*pp);
  EXPECT_NE(text.find("paused 5 s by the program (1 pauses"), std::string::npos) << text;
  EXPECT_EQ(text.find("sampled: kernels traced"), std::string::npos) << text;
  EXPECT_NE(paused.m.sections.at("trace").find("\"paused_s\""), std::string::npos);
}

// Graph-level records (`--cuda-graph-trace graph`, the default): each launch of a CUDA graph is one
// kernel activity named "CUDA graph N"; the run's energy goes to them as to kernels, and one line
// says how many launches of how many graphs were recorded whole.
TEST(TraceProfile, GraphLevelRecordsAreAttributedAndSaidInOneLine) {
  double gj = 0, ej = 0;
  SynthRun r = make_run(two_classes(0.010, 4, 650, 300, &gj, &ej), 4);
  int n = 0;
  for (Activity& a : r.t.activities) {
    if (a.kind != Activity::Kind::kernel || n++ % 2 != 0) continue;
    a.graph_id = n % 4 == 1 ? 3 : 5;
    a.name = std::string("CUDA graph ") + std::to_string(a.graph_id);
  }
  auto p = analyze_placed_trace(r.m, r.t, classifier());
  ASSERT_TRUE(p) << p.error().message;
  const std::string line = "launches of 2 CUDA graphs recorded whole, one record each";
  const auto w = std::find_if(p->warnings.begin(), p->warnings.end(), [&](const std::string& s) { return s.find(line) != std::string::npos; });
  ASSERT_NE(w, p->warnings.end()) << ::testing::PrintToString(p->warnings);
  EXPECT_EQ(w->rfind(std::to_string((n + 1) / 2) + " launches", 0), 0u) << *w;
  bool graph_row = false;
  for (const auto& k : p->kernels) graph_row |= k.name.rfind("CUDA graph ", 0) == 0;
  EXPECT_TRUE(graph_row);
  EXPECT_EQ(w->find("the replay's rows cannot split them"), std::string::npos) << *w;
  expect_physical(p->gpus[0]);
  // With a replay: its rows name kernels, not graphs; the line says they cannot split the graphs.
  const ReplayReference rep = replay_for(0.010, 650, 300, 1.0);
  TraceProfileOptions o;
  o.replay = &rep;
  auto pr = build_trace_profile(r.m, r.t, classifier(), o);
  ASSERT_TRUE(pr) << pr.error().message;
  EXPECT_GT(pr->gpus[0].replay_unmatched_share, 0.2);
  const auto wr = std::find_if(pr->warnings.begin(), pr->warnings.end(), [&](const std::string& x) { return x.find(line) != std::string::npos; });
  ASSERT_NE(wr, pr->warnings.end());
  EXPECT_NE(wr->find(", and the replay's rows cannot split them"), std::string::npos) << *wr;
}
