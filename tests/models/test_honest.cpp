// Issue 34 (the physics form, nested validation, decisions under uncertainty) and the model/optimize
// findings of issue 35 (bad inputs, scaling). Simulated sweeps with known laws (sim_sweep.hpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

#include "jouleprof/models/model.hpp"
#include "jouleprof/models/optimize.hpp"
#include "jouleprof/models/report.hpp"
#include "jouleprof/models/validate.hpp"
#include "run_cli.hpp"
#include "sim_sweep.hpp"

namespace md = jouleprof::models;
using md::test::run_cli;
using md::test::SimApp;

namespace {

const double kFmax = 1400;
// The physics law: T = T0 (alpha fmax/f + 1 - alpha) with alpha linear in fp; P = 30 + k g(f),
// g = f V^2 / (fmax Vmax^2), V = 0.7 + 0.3 f/fmax (the chip's), k from the activity.
double alpha_of(const SimApp& a) { return 0.15 + 0.7 * a.fp; }
double volt(double f) { return 0.7 + 0.3 * f / kFmax; }
double g_of(double f) { return f * volt(f) * volt(f) / kFmax; }
double law_power(const SimApp& a, double f) { return 30 + (60 + 150 * a.fp + 40 * a.dram) * g_of(f); }
double law_time(const SimApp& a, double f) { return (5 + 10 * a.dram) * (alpha_of(a) * kFmax / f + 1 - alpha_of(a)); }

md::Dataset sim(const std::function<double(const SimApp&, double)>& p, const std::function<double(const SimApp&, double)>& t,
                const std::vector<SimApp>& apps = md::test::sim_apps()) {
  auto d = md::parse_csv(md::test::sim_csv(apps, md::test::clock_grid(500, kFmax, 20), p, t), {}, "sim.csv");
  EXPECT_TRUE(d) << (d ? "" : d.error().message);
  return *d;
}

md::FitOptions physics_options() {
  md::FitOptions o;
  o.form = md::Form::physics;
  o.physics_ridge = 1e-9;
  o.outliers.enabled = false;
  return o;
}


std::string tmp(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST(ModelsPhysics, RecoversTheLawAndTheVoltageCurveHeldOut) {
  const auto d = sim(law_power, law_time);
  md::ProbeOptions po;
  auto curves = md::cross_validate(d, physics_options(), po, md::Split::leave_one_application_out);
  ASSERT_TRUE(curves) << curves.error().message;
  const auto ev = md::evaluate(*curves);
  EXPECT_LT(ev.overall.time_mape_pct, 0.5);
  EXPECT_LT(ev.overall.power_mape_pct, 0.5);
  const auto ch = md::optimize(*curves, md::Objective{});
  EXPECT_LT(md::summarize(ch).mean_energy_excess_pct, 0.5);
  // The voltage curve in the model file is the chip's V(f) / V(fmax).
  auto m = md::fit(d, physics_options());
  ASSERT_TRUE(m) << m.error().message;
  const auto j = nlohmann::json::parse(m->to_json());
  const auto clocks = j["params"]["g_clocks_mhz"].get<std::vector<double>>();
  const auto v = j["params"]["voltage_relative"].get<std::vector<double>>();
  for (std::size_t i = 0; i < clocks.size(); i += 10) EXPECT_NEAR(v[i], volt(clocks[i]) / volt(kFmax), 0.01) << clocks[i];
  EXPECT_NEAR(j["params"]["static_w"].get<double>(), 30, 2.0);  // weakly identified: ALS stops at 10 mW steps
  // Parameters and their uncertainty are in the file, and it loads back to the same predictions.
  ASSERT_TRUE(j.contains("uncertainty"));
  auto back = md::Model::from_json(m->to_json(), "m.json");
  ASSERT_TRUE(back) << back.error().message;
}

TEST(ModelsPhysics, MoreProbesFitTheWorkloadsOwnScaling) {
  // alpha NOT predictable from the activity: one probe must guess, two measure it.
  auto alpha = [](const SimApp& a) { return a.name < "e" ? 0.9 : 0.1; };
  auto t = [&](const SimApp& a, double f) { return 10 * (alpha(a) * kFmax / f + 1 - alpha(a)); };
  const auto d = sim(law_power, t);
  double prev = HUGE_VAL;
  for (int probes : {1, 2, 3}) {
    md::ProbeOptions po;
    po.probes = probes;
    auto o = physics_options();
    o.probes = probes;
    auto curves = md::cross_validate(d, o, po, md::Split::leave_one_application_out);
    ASSERT_TRUE(curves) << curves.error().message;
    const double mape = md::evaluate(*curves).overall.time_mape_pct;
    EXPECT_LE(mape, prev + 1e-6) << probes << " probes";
    if (probes > 1) {
      EXPECT_LT(mape, 1.0) << probes;
    }
    prev = mape;
  }
}

TEST(ModelsNested, AutoChoosesInsideAndSaysWhatItTried) {
  auto o = physics_options();
  o.form = md::Form::automatic;
  auto m = md::fit(sim(law_power, law_time), o);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->info().designs.size(), md::auto_designs(o).size());
  EXPECT_FALSE(m->info().chosen_design.empty());
  const auto j = nlohmann::json::parse(m->to_json());
  EXPECT_EQ(j["selection"]["designs_tried"].get<std::size_t>(), md::auto_designs(o).size());
}

TEST(ModelsNested, TooFewApplicationsToNestIsSaidWithTheMinimum) {
  auto apps = md::test::sim_apps();
  apps.resize(4);
  auto o = physics_options();
  o.form = md::Form::automatic;
  auto cv = md::cross_validate(sim(law_power, law_time, apps), o, md::ProbeOptions{}, md::Split::leave_one_application_out);
  ASSERT_FALSE(cv);
  EXPECT_NE(cv.error().message.find(">= 5 applications, the data has 4"), std::string::npos) << cv.error().message;
}

TEST(ModelsNested, LockedSetIsDrawnOnceBySeed) {
  const auto d = sim(law_power, law_time);
  const auto a = md::locked_split(d, 3, 34), b = md::locked_split(d, 3, 34);
  EXPECT_EQ(a.locked, b.locked);
  EXPECT_EQ(a.locked.size(), 3u);
  EXPECT_EQ(a.development.size(), md::test::sim_apps().size() - 3);
  for (const auto& l : a.locked) EXPECT_EQ(std::count(a.development.begin(), a.development.end(), l), 0);
}

TEST(ModelsUncertainty, NeverChoosesAClockWhoseEnergyUpperBoundExceedsTheHighestClocks) {
  md::Curve c;
  c.application = "x";
  for (double f : {1000.0, 1400.0}) {
    md::CurvePoint p;
    p.clock_mhz = f;
    p.pred_power_w = f == 1400 ? 100 : 95;
    p.pred_time_s = 1;
    c.points.push_back(p);
  }
  // Without a spread the 5% cheaper clock is chosen, and its saving has no interval.
  auto ch = md::optimize({c}, md::Objective{});
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].chosen_clock_mhz, 1000);
  EXPECT_FALSE(ch[0].predicted_savings_interval);
  // With a spread of 10% its upper bound (95 e^{1.645 x 0.1} = 112) exceeds the highest clock's 100.
  c.points[0].sigma_log_energy = 0.1;
  ch = md::optimize({c}, md::Objective{});
  EXPECT_EQ(ch[0].chosen_clock_mhz, 1400);
  // A small spread keeps the choice and gives the saving an interval around it.
  c.points[0].sigma_log_energy = 0.01;
  ch = md::optimize({c}, md::Objective{});
  EXPECT_EQ(ch[0].chosen_clock_mhz, 1000);
  ASSERT_TRUE(ch[0].predicted_savings_interval);
  EXPECT_LT(ch[0].predicted_savings_interval->low, 5.0);
  EXPECT_GT(ch[0].predicted_savings_interval->high, 5.0);
}

TEST(ModelsUncertainty, ProbeOutsideTheTrainingRangeIsNamed) {
  auto m = md::fit(sim(law_power, law_time), physics_options());
  ASSERT_TRUE(m);
  md::Probe in{1400, {0.5, 0.5}, law_power({"in", 0.5, 0.5}, 1400), 1};
  EXPECT_EQ(md::outside_training(m->info(), in), "");
  md::Probe out{1400, {0.5, 3.0}, law_power({"out", 0.5, 0.5}, 1400), 1};
  EXPECT_NE(md::outside_training(m->info(), out).find("dram_active 3"), std::string::npos) << md::outside_training(m->info(), out);
}

// Issue 35: a model file whose outlier window is <= 0 crashed (median of no neighbours).
TEST(ModelsBadInput, OutlierWindowZeroIsRefusedNotACrash) {
  auto d = sim(law_power, law_time);
  md::OutlierRule r;
  r.window = 0;
  EXPECT_EQ(md::flag_outliers(d, r), 0u);
  auto m = md::fit(d, physics_options());
  ASSERT_TRUE(m);
  auto j = nlohmann::json::parse(m->to_json());
  j["training"]["outlier_rule"]["window"] = 0;
  write(tmp("w0.model.json"), j.dump());
  write(tmp("w0.csv"), md::test::sim_csv(md::test::sim_apps(), md::test::clock_grid(500, kFmax, 20), law_power, law_time));
  int rc = 0;
  const auto out = run_cli("model eval " + tmp("w0.model.json") + " --data " + tmp("w0.csv"), rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("jouleprof: error: " + tmp("w0.model.json") + ": training.outlier_rule.window must be 1-1000"), std::string::npos) << out;
}

TEST(ModelsBadInput, ModelFileFiguresAreRangeChecked) {
  auto m = md::fit(sim(law_power, law_time), physics_options());
  ASSERT_TRUE(m);
  const auto good = nlohmann::json::parse(m->to_json());
  auto bad = [&](auto edit, const std::string& what) {
    auto j = good;
    edit(j);
    auto r = md::Model::from_json(j.dump(), "m.json");
    ASSERT_FALSE(r) << what;
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
  };
  bad([](auto& j) { j["max_clock_mhz"] = -5; }, "max_clock_mhz must be in");
  bad([](auto& j) { j["clocks_mhz"] = {1e9}; }, "clocks_mhz");
  bad([](auto& j) { j["uncertainty"]["sigma_log_energy"][0] = -1; }, "uncertainty");
  bad([](auto& j) { j["params"]["g"][0] = 7; }, "physics model: g");
  bad([](auto& j) { j["params"]["static_w"] = -3; }, "out of range");
  bad([](auto& j) { j["activity"] = {"fp_active", ""}; }, "empty column name");
}

// Issue 35: a Latin-1 application name broke every JSON output (type_error.316).
TEST(ModelsBadInput, Latin1ApplicationNameGivesValidJson) {
  std::string csv = md::test::sim_csv(md::test::sim_apps(), md::test::clock_grid(500, kFmax, 20), law_power, law_time);
  for (std::size_t at = csv.find("\na,"); at != std::string::npos; at = csv.find("\na,", at + 1)) csv.replace(at + 1, 1, "caf\xe9");
  auto d = md::parse_csv(csv, {}, "latin1.csv");
  ASSERT_TRUE(d);
  auto curves = md::measured_curves(*d, md::OutlierRule{});
  ASSERT_TRUE(curves);
  const auto ch = md::optimize(*curves, md::Objective{});
  md::EvalContext ctx;
  const std::string js = md::optimize_json(ctx, *curves, ch, false);
  const auto j = nlohmann::json::parse(js);
  EXPECT_EQ(j["applications"][0]["application"].get<std::string>(), "caf\xef\xbf\xbd");
  EXPECT_NO_THROW(nlohmann::json::parse(md::eval_json(ctx, *curves, md::evaluate(*curves), {ch})));
}

// Issue 35: empty names gave "internal error: map::at".
TEST(ModelsBadInput, EmptyColumnNamesAreErrors) {
  const std::string csv = md::test::sim_csv(md::test::sim_apps(), {1000, 1400}, law_power, law_time);
  md::ColumnMap m;
  m.application = "";
  auto d = md::parse_csv(csv, m);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("--app-col must name a column"), std::string::npos) << d.error().message;
  m = {};
  m.activity = {""};
  d = md::parse_csv(csv, m);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("--activity names an empty column"), std::string::npos);
  m = {};
  m.pred_power = "power_usage";
  d = md::parse_csv(csv, m);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("both --pred-power-col and --pred-time-col"), std::string::npos);
}

// Issue 35: a model from another GPU is refused unless forced; eval on the training data says so.
TEST(ModelsCli, OtherGpuRefusedUnlessForcedAndInSampleSaid) {
  write(tmp("g.csv"), md::test::sim_csv(md::test::sim_apps(), md::test::clock_grid(500, kFmax, 50), law_power, law_time));
  int rc = 0;
  auto out = run_cli("model fit --data " + tmp("g.csv") + " --form physics --gpu V100 -o " + tmp("g.model.json"), rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("jouleprof: wrote " + tmp("g.model.json")), std::string::npos) << out;
  out = run_cli("model eval " + tmp("g.model.json") + " --data " + tmp("g.csv") + " --gpu H100", rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("the model was trained on V100, the data is from H100"), std::string::npos) << out;
  out = run_cli("model eval " + tmp("g.model.json") + " --data " + tmp("g.csv") + " --gpu H100 --force", rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("IN-SAMPLE: 8 of these applications"), std::string::npos) << out;
  EXPECT_NE(out.find("held out: each in-sample application"), std::string::npos) << out;
  // -q silences messages, not the result table on stdout.
  out = run_cli("model eval " + tmp("g.model.json") + " --data " + tmp("g.csv") + " -q", rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("all rows"), std::string::npos) << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
}

// Issue 35: `model fit` grew quadratically with the applications (21: 0.2 s, 168: 12 s, 5000: 121 s).
TEST(ModelsScaling, PolyFitIsNearLinearInTheApplications) {
  auto apps_n = [](int n) {
    std::vector<SimApp> a;
    for (int i = 0; i < n; ++i) a.push_back({"app" + std::to_string(i), 0.05 + 0.9 * ((i * 37) % 100) / 100.0, 0.05 + 0.9 * ((i * 53) % 100) / 100.0});
    return a;
  };
  auto seconds = [&](int n) {
    auto d = md::parse_csv(md::test::sim_csv(apps_n(n), md::test::clock_grid(500, kFmax, 100), law_power, law_time), {}, "s.csv");
    md::FitOptions o;
    o.form = md::Form::poly;
    o.uncertainty = false;
    const auto t0 = std::chrono::steady_clock::now();
    auto m = md::fit(*d, o);
    EXPECT_TRUE(m);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double small = seconds(100), large = seconds(800);
  // 8x the applications: linear ~8x, the old quadratic ridge selection ~64x.
  EXPECT_LT(large, 24 * small + 0.05) << small << " s vs " << large << " s";
}

// The default fit (auto: 8 designs, each scored by an inner pass, and the spread) stays linear:
// beyond 40 applications the inner pass is 10 folds, not one fit per application.
TEST(ModelsScaling, DefaultAutoFitIsNearLinearInTheApplications) {
  auto seconds = [&](int n) {
    std::vector<SimApp> a;
    for (int i = 0; i < n; ++i) a.push_back({"app" + std::to_string(i), 0.05 + 0.9 * ((i * 37) % 100) / 100.0, 0.05 + 0.9 * ((i * 53) % 100) / 100.0});
    auto d = md::parse_csv(md::test::sim_csv(a, md::test::clock_grid(500, kFmax, 50), law_power, law_time), {}, "s.csv");
    md::FitOptions o;
    o.form = md::Form::automatic;
    const auto t0 = std::chrono::steady_clock::now();
    auto m = md::fit(*d, o);
    EXPECT_TRUE(m) << (m ? "" : m.error().message);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double small = seconds(60), large = seconds(240);
  // 4x the applications: linear ~4x; one inner fit per application would be ~16x.
  EXPECT_LT(large, 10 * small + 0.05) << small << " s vs " << large << " s";
}

// Issue 35: 21 applications were coloured without a legend; the measured-optimum diamond was unexplained.
TEST(ModelsFigures, EveryColourNamedAndTheDiamondExplained) {
  std::vector<SimApp> apps;
  for (int i = 0; i < 21; ++i) apps.push_back({"app" + std::to_string(i), 0.04 * i + 0.05, 0.5});
  const auto d = sim(law_power, law_time, apps);
  auto curves = md::measured_curves(d, md::OutlierRule{});
  ASSERT_TRUE(curves);
  const auto j = nlohmann::json::parse(md::predicted_vs_measured_chart_option(*curves, "energy", false));
  ASSERT_TRUE(j.contains("legend"));
  EXPECT_EQ(j["legend"]["type"], "scroll");
  const auto ch = md::optimize(*curves, md::Objective{});
  const auto u = nlohmann::json::parse(md::ucurve_chart_option(curves->front(), ch.front(), false));
  bool named = false;
  for (const auto& s : u["series"]) named = named || s["name"].get<std::string>().find("measured optimum") != std::string::npos;
  EXPECT_TRUE(named);
}

// Issue 35: a corrupt xgboost booster exited 1 with a 1.5 KB native stack in its line.
TEST(ModelsBadInput, CorruptXgboostBoosterIsOneLineExit2) {
  write(tmp("x.csv"), md::test::sim_csv(md::test::sim_apps(), md::test::clock_grid(500, kFmax, 50), law_power, law_time));
  int rc = 0;
  auto out = run_cli("model fit --data " + tmp("x.csv") + " --form xgboost --xgb-rounds 5 -q -o " + tmp("x.model.json"), rc);
  if (rc != 0 && out.find("libxgboost") != std::string::npos) GTEST_SKIP() << "no libxgboost: " << out;
  ASSERT_EQ(rc, 0) << out;
  std::ifstream in(tmp("x.model.json"));
  auto j = nlohmann::json::parse(in);
  j["params"]["power_booster"] = {{"learner", {{"gradient_booster", "garbage"}}}, {"version", {1, 6, 0}}};
  write(tmp("x.model.json"), j.dump());
  out = run_cli("model eval " + tmp("x.model.json") + " --data " + tmp("x.csv"), rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.rfind("jouleprof: error: ", 0), 0u) << out;
  EXPECT_NE(out.find("xgboost model: a booster libxgboost cannot load"), std::string::npos) << out;
}
