// The knn and ensemble forms, the inner cross-validation that picks their hyper-parameters, the
// fgcs form's probe anchor, power-limit sweeps, training from the run store, LaTeX and figures.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "jouleprof/models/model.hpp"
#include "jouleprof/models/optimize.hpp"
#include "jouleprof/models/report.hpp"
#include "jouleprof/models/validate.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/store/synthetic.hpp"
#include "sim_sweep.hpp"

namespace md = jouleprof::models;
using md::test::SimApp;

namespace {

const double kFmax = 1400;
// P = s + k f^3, T = c / f (as test_fit.cpp): each application's curve differs in shape.
double phys_power(const SimApp& a, double f) { return 40 + 20 * a.dram + (30 + 120 * a.fp) * std::pow(f / kFmax, 3); }
double phys_time(const SimApp& a, double f) { return (5 + 10 * a.dram) * kFmax / f; }

md::Dataset sim(int repeats = 1, double noise = 0) {
  auto d = md::parse_csv(md::test::sim_csv(md::test::sim_apps(), md::test::clock_grid(500, kFmax, 20), phys_power, phys_time, noise, repeats),
                         {}, "sim.csv");
  EXPECT_TRUE(d);
  return *d;
}

md::FitOptions opts(md::Form f) {
  md::FitOptions o;
  o.form = f;
  o.outliers.enabled = false;
  return o;
}

}  // namespace

TEST(ModelsForms, KnnTransfersNeighbourShapesAndChoosesKByInnerCrossValidation) {
  auto curves = md::cross_validate(sim(), opts(md::Form::knn), {}, md::Split::leave_one_application_out);
  ASSERT_TRUE(curves) << curves.error().message;
  const auto ev = md::evaluate(*curves);
  // Neighbours' curves are not the held-out law: a bound of a few %, not an exact fit.
  EXPECT_LT(ev.overall.power_mape_pct, 6.0);
  EXPECT_LT(ev.overall.time_mape_pct, 0.5);  // T = c/f: every neighbour has the same shape
  auto m = md::fit(sim(), opts(md::Form::knn));
  ASSERT_TRUE(m) << m.error().message;
  const auto j = nlohmann::json::parse(m->to_json());
  EXPECT_GE(j["params"]["k"].get<int>(), 1);
  EXPECT_EQ(j["params"]["curves"].size(), 8u);
  // Every candidate (k < 8 training applications, 4 distances, 4 x 4 smoothings) was scored by
  // the inner pass, and the model is the one with the least inner energy MAPE.
  const auto& sel = j["params"]["selection"];
  EXPECT_EQ(sel.size(), 5u * 4u * 16u);  // k in {1, 2, 3, 4, 6}
  nlohmann::json best;
  for (const auto& c : sel)
    if (best.is_null() || c["energy_mape_pct"].get<double>() < best["energy_mape_pct"].get<double>()) best = c;
  EXPECT_EQ(j["params"]["k"], best["k"]);
  EXPECT_EQ(j["params"]["power_smoothing"], best["power_smoothing"]);
  EXPECT_EQ(j["params"]["time_smoothing"], best["time_smoothing"]);
  // dram_active and fp_active give the memory-boundness feature (activity, power, memory).
  EXPECT_EQ(j["params"]["memory_boundness_columns"], nlohmann::json({"dram_active", "fp_active"}));
  EXPECT_EQ(j["params"]["feature_mean"].size(), 4u);
  auto back = md::Model::from_json(m->to_json(), "k.json");
  ASSERT_TRUE(back) << back.error().message;
  md::Probe p{1400, {0.5, 0.5}, 150, 10};
  auto a = m->predict({p}, {700, 1000, 1400});
  auto b = back->predict({p}, {700, 1000, 1400});
  ASSERT_TRUE(a && b);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ((*a)[i].power_w, (*b)[i].power_w);
  EXPECT_DOUBLE_EQ((*a)[2].power_w, 150);  // anchored at the probe
  EXPECT_DOUBLE_EQ((*a)[2].time_s, 10);
  auto bad = j;
  bad["params"]["curves"][0]["clocks_mhz"] = {3, 2, 1};
  EXPECT_FALSE(md::Model::from_json(bad.dump(), "bad.json"));
  bad = j;
  bad["params"]["time_smoothing"] = "spline";
  auto e1 = md::Model::from_json(bad.dump(), "bad.json");
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().message.find("unknown smoothing 'spline'"), std::string::npos);
  bad = j;
  bad["params"]["memory_boundness_columns"] = {"fp_active", "dram_active"};
  auto e2 = md::Model::from_json(bad.dump(), "bad.json");
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().message.find("memory_boundness_columns"), std::string::npos);
  bad = j;
  bad["params"].erase("memory_boundness_columns");  // then one feature too many
  EXPECT_FALSE(md::Model::from_json(bad.dump(), "bad.json"));
}

TEST(ModelsForms, KnnSmoothingKeepsANeighboursNoiseDipFromDecidingTheMinimum) {
  // Training curves: the analytic law plus a one-clock 6% run-time dip (run-to-run noise) at
  // 1100 MHz, 4% above the law's minimum at ~913 MHz for application b. Unsmoothed, b's dip becomes
  // the predicted minimum of a workload probed exactly like b; smoothed (quartic), the prediction
  // follows the law. The model file is edited to compare the two.
  auto d = sim();
  for (auto& r : d.rows)
    if (r.clock_mhz == 1100) r.time_s *= 0.94;
  auto m = md::fit(d, opts(md::Form::knn));
  ASSERT_TRUE(m) << m.error().message;
  auto j = nlohmann::json::parse(m->to_json());
  j["params"]["k"] = 1;
  const md::Probe p{1400, {0.5, 0.5}, 140, 10};  // b at 1400 MHz: its own curve is the neighbour
  const auto clocks = md::test::clock_grid(500, kFmax, 20);
  auto argmin_energy = [&](const std::string& smoothing) {
    j["params"]["time_smoothing"] = smoothing;
    auto mm = md::Model::from_json(j.dump(), "k.json");
    EXPECT_TRUE(mm) << mm.error().message;
    auto pred = mm->predict({p}, clocks);
    EXPECT_TRUE(pred);
    std::size_t best = 0;
    for (std::size_t i = 0; i < pred->size(); ++i)
      if ((*pred)[i].power_w * (*pred)[i].time_s < (*pred)[best].power_w * (*pred)[best].time_s) best = i;
    return clocks[best];
  };
  EXPECT_EQ(argmin_energy("none"), 1100);
  const double smoothed = argmin_energy("quartic");
  EXPECT_GE(smoothed, 860);
  EXPECT_LE(smoothed, 960);
}

TEST(ModelsForms, EnsembleWeightAndPolyRidgeComeFromTheTrainingApplicationsOnly) {
  auto m = md::fit(sim(), opts(md::Form::ensemble));
  ASSERT_TRUE(m) << m.error().message;
  const auto j = nlohmann::json::parse(m->to_json());
  const double a = j["params"]["poly_weight"];
  EXPECT_GE(a, 0.0);
  EXPECT_LE(a, 1.0);
  ASSERT_EQ(j["params"]["weight_selection"].size(), 5u);
  // The chosen weight is the one with the least inner energy MAPE.
  double best = 1e300, best_w = -1;
  for (const auto& s : j["params"]["weight_selection"])
    if (s["energy_mape_pct"].get<double>() < best) {
      best = s["energy_mape_pct"];
      best_w = s["poly_weight"];
    }
  EXPECT_DOUBLE_EQ(a, best_w);
  EXPECT_EQ(j["params"]["poly"]["ridge_selection"].size(), 5u);  // --ridge 0: chosen the same way
  auto back = md::Model::from_json(m->to_json(), "e.json");
  ASSERT_TRUE(back) << back.error().message;
  // A fixed --ridge is used as given.
  auto o = opts(md::Form::poly);
  o.ridge = 1e-4;
  auto p = md::fit(sim(), o);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(p->to_json())["params"]["ridge"].get<double>(), 1e-4);
  auto cv = md::cross_validate(sim(), opts(md::Form::ensemble), {}, md::Split::leave_one_application_out);
  ASSERT_TRUE(cv) << cv.error().message;
  EXPECT_LT(md::evaluate(*cv).overall.energy_mape_pct, 6.0);
}

TEST(ModelsForms, FgcsPowerIsAnchoredAtTheProbe) {
  auto m = md::fit(sim(), opts(md::Form::fgcs));
  ASSERT_TRUE(m) << m.error().message;
  md::Probe p{1200, {0.5, 0.5}, 123.4, 7};
  auto r = m->predict({p}, {1200, 900});
  ASSERT_TRUE(r);
  EXPECT_NEAR((*r)[0].power_w, 123.4, 1e-9);
  EXPECT_LT((*r)[1].power_w, 123.4);
}

TEST(ModelsForms, PowerLimitSweepsAreOptimisedFromMeasurements) {
  // Two applications, clocks x limits; energy = P T with the limit capping power and stretching time.
  std::string csv = "application,sm_app_clock,power_limit,power_usage,run_time\n";
  for (const char* app : {"x", "y"})
    for (double f : {1000.0, 1400.0})
      for (double pl : {200.0, 300.0, 400.0}) {
        const double p_free = (app[0] == 'x' ? 150 : 350) * f / 1400, p = std::min(p_free, pl);
        const double t = 10 * 1400 / f * (p_free > pl ? p_free / pl : 1.0) * (pl == 300 && app[0] == 'y' ? 0.9 : 1.0);
        csv += fmt::format("{},{},{},{},{}\n", app, f, pl, p, t);
      }
  md::ColumnMap map;
  map.power_limit = "power_limit";
  auto d = md::parse_csv(csv, map, "pl.csv");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(md::varies_power_limit(*d));
  auto curves = md::measured_curves(*d, {});
  ASSERT_TRUE(curves);
  const auto ch = md::optimize(*curves, {});
  ASSERT_EQ(ch.size(), 2u);
  // Brute force over the rows: the measured minimum of each application.
  for (const auto& c : ch) {
    double best = 1e300, bf = 0, bpl = 0;
    for (const auto& r : d->rows)
      if (r.application == c.application && r.energy_j() < best) {
        best = r.energy_j();
        bf = r.clock_mhz;
        bpl = *r.power_limit_w;
      }
    EXPECT_DOUBLE_EQ(c.chosen_clock_mhz, bf) << c.application;
    ASSERT_TRUE(c.chosen_power_limit_w);
    EXPECT_DOUBLE_EQ(*c.chosen_power_limit_w, bpl) << c.application;
    EXPECT_DOUBLE_EQ(*c.reference_power_limit_w, 400);  // the highest setting is the reference
  }
  auto m = md::fit(*d, opts(md::Form::poly));
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("several power limits"), std::string::npos);
  EXPECT_NE(md::optimize_csv(ch).find("chosen_power_limit_w"), std::string::npos);
  EXPECT_NE(md::optimize_latex(ch).find("Limit (W)"), std::string::npos);
}

TEST(ModelsForms, TrainingDataFromASweepInTheRunStore) {
  const auto dir = std::filesystem::temp_directory_path() / ("jp-models-store-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "runs.db").string();
  std::filesystem::remove(db);
  {
    auto store = jouleprof::Store::open(db, jouleprof::Store::Mode::write);
    ASSERT_TRUE(store) << store.error().message;
    int seed = 1;
    for (const char* model : {"a", "b"})
      for (int clock : {990, 1410, 1980}) {
        jouleprof::SyntheticSpec s;
        s.duration_s = 6;
        s.runs = 2;
        s.seed = static_cast<uint64_t>(seed++);
        s.decode_w = 300 + clock / 10.0 + (model[0] == 'b' ? 50 : 0);
        auto m = jouleprof::make_synthetic_measurement(s);
        m.tags = {{"sweep", "s1"}, {"model", model}, {"clock_mhz", std::to_string(clock)}, {"point", "p"}, {"pass", "0"}};
        // An activity section as measure --metrics writes it: a mean per run and phase window.
        nlohmann::json means = nlohmann::json::array();
        for (std::size_t w = 0; w < m.windows.size(); ++w)
          if (m.windows[w].kind == "run" || m.windows[w].kind == "phase")
            means.push_back({{"window", w}, {"name", m.windows[w].name}, {"kind", m.windows[w].kind}, {"run", m.windows[w].run},
                             {"mean", {{"sm_active", model[0] == 'a' ? 0.9 : 0.4}, {"dram_active", 0.2}}}});
        m.sections["activity"] = nlohmann::json{{"schema_version", 1},
                                                {"gpus", {{{"gpu", 0}, {"source", "nvml-gpm"}, {"note", ""},
                                                           {"metrics", {"sm_active", "dram_active"}}, {"window_means", means}}}}}
                                     .dump();
        ASSERT_TRUE(store->insert(m));
      }
  }
  md::StoreSource src{db, "s1", "", false};
  auto d = md::read_store(src);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->simulated);
  EXPECT_EQ(d->applications(), (std::vector<std::string>{"model=a", "model=b"}));
  EXPECT_EQ(d->rows.size(), 12u);  // 2 models x 3 clocks x 2 repeats
  EXPECT_EQ(d->activity, (std::vector<std::string>{"dram_active", "sm_active"}));
  for (const auto& r : d->rows) {
    EXPECT_TRUE(r.clock_mhz == 990 || r.clock_mhz == 1410 || r.clock_mhz == 1980);
    EXPECT_GT(r.power_w, 0);
    EXPECT_DOUBLE_EQ(r.activity[1], r.application == "model=a" ? 0.9 : 0.4);
  }
  src.phases = true;
  src.app_tag = "model";
  auto ph = md::read_store(src);
  ASSERT_TRUE(ph) << ph.error().message;
  EXPECT_EQ(ph->applications(), (std::vector<std::string>{"a/prefill", "a/decode", "b/prefill", "b/decode"}));
  auto curves = md::measured_curves(*ph, {});
  ASSERT_TRUE(curves);
  const auto ch = md::optimize(*curves, {});
  ASSERT_EQ(ch.size(), 4u);  // the optimum per phase, with a CI from the 2 repeats
  EXPECT_TRUE(ch[1].measured_savings_pct);
  src.app_tag = "nosuch";
  auto bad = md::read_store(src);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("no tag 'nosuch'"), std::string::npos);
  auto none = md::read_store(md::StoreSource{db, "other", "", false});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no run of sweep 'other'"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ModelsForms, LatexTablesAndFigureOptions) {
  auto curves = md::cross_validate(sim(3, 0.01), opts(md::Form::poly), {}, md::Split::leave_one_application_out);
  ASSERT_TRUE(curves);
  const auto ch = md::optimize(*curves, {});
  const std::string t = md::optimize_latex(ch);
  EXPECT_NE(t.find("\\begin{tabular}{lrrrrr}"), std::string::npos);
  EXPECT_NE(t.find("\\end{tabular}"), std::string::npos);
  EXPECT_EQ(t.find("Limit"), std::string::npos);  // no power-limit column without limits
  std::vector<md::Choice> odd = ch;
  odd[0].application = "a_b%";
  EXPECT_NE(md::optimize_latex(odd).find("a\\_b\\%"), std::string::npos);
  const std::string e = md::eval_latex(md::evaluate(*curves), {ch});
  EXPECT_NE(e.find("All & "), std::string::npos);
  const auto u = nlohmann::json::parse(md::ucurve_chart_option((*curves)[0], ch[0], true));
  EXPECT_NE(u["title"]["text"].get<std::string>().find("(simulated)"), std::string::npos);
  EXPECT_GE(u["series"].size(), 3u);  // predicted, measured, CI bars (3 repeats)
  const auto pv = nlohmann::json::parse(md::predicted_vs_measured_chart_option(*curves, "power", false));
  EXPECT_EQ(pv["series"].size(), 9u);  // 8 applications and y = x
}
