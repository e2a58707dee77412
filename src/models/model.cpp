#include "jouleprof/models/model.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

#include "form.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/config.hpp"

namespace jouleprof::models {

const char* to_string(Form f) {
  switch (f) {
    case Form::fgcs: return "fgcs";
    case Form::poly: return "poly";
    case Form::xgboost: return "xgboost";
    case Form::knn: return "knn";
    case Form::ensemble: return "ensemble";
  }
  return "?";
}

Result<Form> parse_form(const std::string& s) {
  if (s == "fgcs") return Form::fgcs;
  if (s == "poly") return Form::poly;
  if (s == "xgboost") return Form::xgboost;
  if (s == "knn") return Form::knn;
  if (s == "ensemble") return Form::ensemble;
  return make_error(Errc::invalid_argument, "unknown model form '" + s + "' (fgcs, poly, xgboost, knn or ensemble)");
}

namespace detail {

std::vector<AppSweep> sweeps_of(const Dataset& d, const std::vector<int>& columns, double probe_clock_mhz,
                                std::size_t min_points) {
  std::vector<AppSweep> out;
  for (const auto& app : d.applications()) {
    AppSweep s;
    s.application = app;
    std::map<double, std::vector<std::size_t>> by_clock;
    for (auto i : d.rows_of(app))
      if (!d.rows[i].outlier) by_clock[d.rows[i].clock_mhz].push_back(i);
    for (const auto& [clock, idx] : by_clock) {
      AppPoint p;
      p.clock_mhz = clock;
      p.activity.assign(columns.size(), 0.0);
      for (auto i : idx) {
        const Row& r = d.rows[i];
        p.power_w += r.power_w / static_cast<double>(idx.size());
        p.time_s += r.time_s / static_cast<double>(idx.size());
        for (std::size_t c = 0; c < columns.size(); ++c)
          p.activity[c] += r.activity[static_cast<std::size_t>(columns[c])] / static_cast<double>(idx.size());
      }
      s.points.push_back(std::move(p));
    }
    if (s.points.size() < min_points || s.points.empty()) continue;
    s.anchor = s.points.size() - 1;
    if (probe_clock_mhz > 0) {
      double best = 1e300;
      for (std::size_t i = 0; i < s.points.size(); ++i)
        if (std::abs(s.points[i].clock_mhz - probe_clock_mhz) < best) {
          best = std::abs(s.points[i].clock_mhz - probe_clock_mhz);
          s.anchor = i;
        }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace detail

Model::Model(ModelInfo info, std::shared_ptr<const detail::FormImpl> impl) : info_(std::move(info)), impl_(std::move(impl)) {}

namespace {

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<std::unique_ptr<detail::FormImpl>> load_form(Form f, const nlohmann::json& p, const ModelInfo& info) {
  switch (f) {
    case Form::fgcs: return detail::load_fgcs(p, info);
    case Form::poly: return detail::load_poly(p, info);
    case Form::xgboost: return detail::load_xgboost(p, info);
    case Form::knn: return detail::load_knn(p, info);
    case Form::ensemble: return detail::load_ensemble(p, info);
  }
  return make_error(Errc::internal, "unknown form");
}

// The activity columns a form uses: the fgcs form its named ones; the others every column with
// information. Columns constant over the training applications' probes, or linear combinations of
// others, are dropped when the columns were chosen automatically and are an error when named.
Result<std::vector<int>> choose_columns(const Dataset& d, Form form, double probe_clock, std::vector<std::string>& dropped) {
  std::vector<int> cand;
  if (form == Form::fgcs) {
    for (const char* n : {"fp_active", "fp64_active", "fp32_active", "dram_active", "TENSO", "tensor_active"}) {
      const int i = d.activity_index(n);
      if (i < 0) continue;
      if ((std::string(n) == "fp64_active" || std::string(n) == "fp32_active") && d.activity_index("fp_active") >= 0) continue;
      cand.push_back(i);
    }
  } else {
    for (std::size_t i = 0; i < d.activity.size(); ++i) cand.push_back(static_cast<int>(i));
  }
  std::vector<int> all(d.activity.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  const auto sweeps = detail::sweeps_of(d, all, probe_clock);
  // Each application's probe activity: what the model's coefficients are identified from.
  std::vector<int> kept;
  Eigen::MatrixXd Z(static_cast<Eigen::Index>(sweeps.size()), 1);
  Z.col(0).setOnes();
  for (int c : cand) {
    Eigen::VectorXd col(static_cast<Eigen::Index>(sweeps.size()));
    double lo = 1e300, hi = -1e300;
    for (std::size_t s = 0; s < sweeps.size(); ++s) {
      const double v = sweeps[s].points[sweeps[s].anchor].activity[static_cast<std::size_t>(c)];
      col(static_cast<Eigen::Index>(s)) = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const std::string& name = d.activity[static_cast<std::size_t>(c)];
    const bool is_tensor = name == "TENSO" || name == "tensor_active";
    if (hi - lo <= 1e-9 * std::max(1.0, std::abs(hi))) {
      if (d.activity_explicit && !is_tensor)
        return make_error(Errc::invalid_argument, "activity column " + name + " is constant over the training data: it cannot be fitted (drop it from --activity)");
      dropped.push_back(name + " (constant)");
      continue;
    }
    Eigen::MatrixXd Z2(Z.rows(), Z.cols() + 1);
    Z2 << Z, (col.array() - col.mean()) / (hi - lo);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(Z2);
    qr.setThreshold(1e-6);
    if (qr.rank() < Z2.cols()) {
      if (d.activity_explicit)
        return make_error(Errc::invalid_argument, "activity column " + name + " is collinear with the others over the training applications (drop it from --activity)");
      dropped.push_back(name + " (collinear)");
      continue;
    }
    Z = Z2;
    kept.push_back(c);
  }
  if (form == Form::fgcs) {
    bool fp = false, dram = false;
    for (int c : kept) {
      const auto& n = d.activity[static_cast<std::size_t>(c)];
      fp = fp || n == "fp_active" || n == "fp64_active";
      dram = dram || n == "dram_active";
    }
    if (!fp || !dram) return make_error(Errc::invalid_argument, "the fgcs form needs fp_active (or fp64_active + fp32_active) and dram_active that vary over the training applications");
  }
  return kept;
}

}  // namespace

Result<Model> fit(Dataset data, const FitOptions& o) {
  if (varies_power_limit(data)) return make_error(Errc::invalid_argument, kPowerLimitModelError);
  ModelInfo info;
  info.form = o.form;
  info.gpu = o.gpu;
  info.options = o;
  info.training_source = data.source;
  info.training_rows = data.rows.size();
  info.training_outliers = flag_outliers(data, o.outliers);
  info.probe_clock_mhz = o.probe_clock_mhz;
  std::vector<std::string> dropped;
  auto cols = choose_columns(data, o.form, o.probe_clock_mhz, dropped);
  if (!cols) return cols.error();
  for (int c : *cols) info.activity.push_back(data.activity[static_cast<std::size_t>(c)]);
  info.dropped_activity = dropped;
  const auto sweeps = detail::sweeps_of(data, *cols, o.probe_clock_mhz, 3);
  if (sweeps.size() < 2)
    return make_error(Errc::invalid_argument, "too few points to fit: " + std::to_string(sweeps.size()) +
                                                  " application(s) with >= 3 clocks (at least 2 are needed)");
  const std::size_t params_needed = 3 * (info.activity.size() + 2);
  if ((o.form == Form::poly || o.form == Form::ensemble) && sweeps.size() < info.activity.size() + 2)
    return make_error(Errc::invalid_argument, "too few applications (" + std::to_string(sweeps.size()) + ") for " +
                                                  std::to_string(info.activity.size()) + " activity columns: name fewer with --activity");
  std::size_t points = 0;
  double fmax = 0;
  std::vector<double> clocks;
  for (const auto& s : sweeps) {
    info.training_applications.push_back(s.application);
    points += s.points.size();
    for (const auto& p : s.points) {
      fmax = std::max(fmax, p.clock_mhz);
      clocks.push_back(p.clock_mhz);
    }
  }
  if (points < params_needed)
    return make_error(Errc::invalid_argument, "too few points to fit: " + std::to_string(points) + " for " + std::to_string(params_needed) + " parameters");
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  info.clocks_mhz = clocks;
  info.max_clock_mhz = o.max_clock_mhz > 0 ? o.max_clock_mhz : fmax;
  info.created_utc = now_utc();
  info.tool_version = std::string(JOULEPROF_VERSION) + " (" + JOULEPROF_GIT_REVISION + ")";
  detail::FitContext ctx{sweeps, info.activity, info.max_clock_mhz, o};
  Result<std::unique_ptr<detail::FormImpl>> impl = make_error(Errc::internal, "no form");
  switch (o.form) {
    case Form::fgcs: impl = detail::fit_fgcs(ctx); break;
    case Form::poly: impl = detail::fit_poly(ctx); break;
    case Form::xgboost: impl = detail::fit_xgboost(ctx); break;
    case Form::knn: impl = detail::fit_knn(ctx); break;
    case Form::ensemble: impl = detail::fit_ensemble(ctx); break;
  }
  if (!impl) return impl.error();
  return Model(std::move(info), std::shared_ptr<const detail::FormImpl>(std::move(*impl)));
}

Result<std::vector<Point>> Model::predict(const std::vector<Probe>& probes, const std::vector<double>& clocks) const {
  if (probes.empty() || probes.size() > 3) return make_error(Errc::invalid_argument, "1 to 3 probes are needed");
  for (const auto& p : probes) {
    if (p.activity.size() != info_.activity.size())
      return make_error(Errc::invalid_argument, "a probe has " + std::to_string(p.activity.size()) + " activity values, the model needs " + std::to_string(info_.activity.size()));
    if (!(p.clock_mhz > 0 && p.power_w > 0 && p.time_s > 0))
      return make_error(Errc::invalid_argument, "a probe needs a clock, power and time > 0");
  }
  const Probe& p0 = probes.front();
  std::vector<double> all = clocks;
  for (std::size_t k = 1; k < probes.size(); ++k) all.push_back(probes[k].clock_mhz);
  std::vector<double> P, T;
  impl_->predict(p0, all, P, T);
  // Further probes: measured vs predicted at their clocks corrects the curve by c1 phi + c2 phi^2,
  // phi = ln(f / f0) (zero at the first probe, so the anchor stays exact).
  std::vector<double> cP(2, 0.0), cT(2, 0.0);
  if (probes.size() > 1) {
    const std::size_t m = probes.size() - 1;
    Eigen::MatrixXd A(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m));
    Eigen::VectorXd rP(static_cast<Eigen::Index>(m)), rT(static_cast<Eigen::Index>(m));
    for (std::size_t k = 0; k < m; ++k) {
      const double phi = std::log(probes[k + 1].clock_mhz / p0.clock_mhz);
      if (std::abs(phi) < 1e-6) return make_error(Errc::invalid_argument, "probe clocks must differ");
      const auto i = static_cast<Eigen::Index>(k);
      A(i, 0) = phi;
      if (m > 1) A(i, 1) = phi * phi;
      rP(i) = std::log(probes[k + 1].power_w / P[clocks.size() + k]);
      rT(i) = std::log(probes[k + 1].time_s / T[clocks.size() + k]);
    }
    const Eigen::VectorXd sP = A.colPivHouseholderQr().solve(rP), sT = A.colPivHouseholderQr().solve(rT);
    for (Eigen::Index j = 0; j < sP.size(); ++j) {
      cP[static_cast<std::size_t>(j)] = sP(j);
      cT[static_cast<std::size_t>(j)] = sT(j);
    }
  }
  std::vector<Point> out;
  for (std::size_t i = 0; i < clocks.size(); ++i) {
    const double phi = std::log(clocks[i] / p0.clock_mhz);
    Point pt;
    pt.clock_mhz = clocks[i];
    pt.power_w = P[i] * std::exp(cP[0] * phi + cP[1] * phi * phi);
    pt.time_s = T[i] * std::exp(cT[0] * phi + cT[1] * phi * phi);
    if (!std::isfinite(pt.power_w) || !std::isfinite(pt.time_s))
      return make_error(Errc::invalid_argument, fmt::format("the model gives no finite prediction at {:g} MHz", clocks[i]));
    out.push_back(pt);
  }
  return out;
}

std::string Model::to_json() const {
  const auto& i = info_;
  nlohmann::json j;
  j["schema_version"] = 1;
  j["kind"] = "jouleprof-model";
  j["form"] = to_string(i.form);
  j["gpu"] = i.gpu;
  j["max_clock_mhz"] = i.max_clock_mhz;
  j["probe_clock_mhz"] = i.probe_clock_mhz;
  j["activity"] = i.activity;
  j["dropped_activity"] = i.dropped_activity;
  j["clocks_mhz"] = i.clocks_mhz;
  j["training"] = {{"source", i.training_source},
                   {"rows", i.training_rows},
                   {"outlier_rows", i.training_outliers},
                   {"outlier_rule",
                    {{"enabled", i.options.outliers.enabled},
                     {"window", i.options.outliers.window},
                     {"power_tol", i.options.outliers.power_tol},
                     {"time_tol", i.options.outliers.time_tol},
                     {"activity_abs", i.options.outliers.activity_abs},
                     {"activity_rel", i.options.outliers.activity_rel}}},
                   {"applications", i.training_applications},
                   {"created_utc", i.created_utc},
                   {"tool_version", i.tool_version}};
  j["options"] = {{"ridge", i.options.ridge}, {"xgb_rounds", i.options.xgb_rounds}, {"xgb_depth", i.options.xgb_depth}, {"xgb_eta", i.options.xgb_eta}};
  j["params"] = impl_->params();
  return j.dump(1);
}

Result<Model> Model::from_json(const std::string& text, const std::string& source) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("kind", "") != "jouleprof-model") return make_error(Errc::parse, source + ": not a jouleprof model file");
    if (j.value("schema_version", 0) != 1) return make_error(Errc::parse, source + ": unsupported model schema_version");
    ModelInfo i;
    auto f = parse_form(j.at("form").get<std::string>());
    if (!f) return make_error(Errc::parse, source + ": " + f.error().message);
    i.form = *f;
    i.options.form = *f;
    i.gpu = j.value("gpu", "");
    i.max_clock_mhz = j.at("max_clock_mhz").get<double>();
    i.probe_clock_mhz = j.value("probe_clock_mhz", 0.0);
    i.activity = j.at("activity").get<std::vector<std::string>>();
    i.dropped_activity = j.value("dropped_activity", std::vector<std::string>{});
    i.clocks_mhz = j.at("clocks_mhz").get<std::vector<double>>();
    const auto& t = j.at("training");
    i.training_source = t.value("source", "");
    i.training_rows = t.value("rows", std::size_t{0});
    i.training_outliers = t.value("outlier_rows", std::size_t{0});
    i.training_applications = t.value("applications", std::vector<std::string>{});
    i.created_utc = t.value("created_utc", "");
    i.tool_version = t.value("tool_version", "");
    if (t.contains("outlier_rule")) {
      const auto& r = t.at("outlier_rule");
      i.options.outliers.enabled = r.value("enabled", true);
      i.options.outliers.window = r.value("window", 3);
      i.options.outliers.power_tol = r.value("power_tol", 0.15);
      i.options.outliers.time_tol = r.value("time_tol", 0.0);
      i.options.outliers.activity_abs = r.value("activity_abs", 0.05);
      i.options.outliers.activity_rel = r.value("activity_rel", 0.15);
    }
    if (!(i.max_clock_mhz > 0)) return make_error(Errc::parse, source + ": max_clock_mhz must be > 0");
    auto impl = load_form(i.form, j.at("params"), i);
    if (!impl) return make_error(impl.error().code, source + ": " + impl.error().message);
    return Model(std::move(i), std::shared_ptr<const detail::FormImpl>(std::move(*impl)));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, source + ": " + e.what());
  }
}

Result<Model> load_model(const std::string& path) {
  auto text = read_text_file(path);  // bounded, one open (core/files)
  if (!text) return make_error(text.error().code, text.error().code == Errc::not_found ? "cannot open model " + path : "model " + text.error().message);
  return Model::from_json(*text, path);
}

Result<void> save_model(const Model& m, const std::string& path) { return write_file_atomic(path, m.to_json() + "\n"); }

}  // namespace jouleprof::models
