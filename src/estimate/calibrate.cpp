#include "jouleprof/estimate/calibrate.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

namespace jouleprof::estimate {
namespace {

using json = nlohmann::json;

struct Prepared {
  const MeasuredItem* item;
  Graph graph;
  std::vector<Subgraph> fused, unfused;
  EstimateOptions opt;
};

Result<std::vector<Prepared>> prepare(const MeasurementSet& m) {
  std::vector<Prepared> out;
  out.reserve(m.items.size());
  for (const MeasuredItem& it : m.items) {
    auto g = build_model(it.model, it.options);
    if (!g) return make_error(g.error().code, it.name + ": " + g.error().message);
    Prepared p{&it, std::move(*g), {}, {}, {}};
    p.opt.precision = it.options.dtype;
    p.opt.eager = it.eager;
    p.opt.fuse = !it.eager;  // eager frameworks run one kernel per op
    p.opt.warm = true;
    PartitionOptions po;
    po.fuse = p.opt.fuse;
    p.fused = partition(p.graph, po);
    out.push_back(std::move(p));
  }
  return out;
}

Result<Estimate> run(const Prepared& p, const HardwareSpec& hw, const Calibration* cal, std::optional<double> clock,
                     bool cap) {
  EstimateOptions o = p.opt;
  o.clock_mhz = clock;
  o.power_cap = cap;
  return estimate_partitioned(p.graph, p.fused, hw, o, cal);
}

// Non-negative least squares by enumerating active sets (few unknowns).
std::vector<double> nnls(const std::vector<std::vector<double>>& A, const std::vector<double>& b) {
  const std::size_t n = A.empty() ? 0 : A[0].size();
  std::vector<double> best(n, 0);
  double best_r = INFINITY;
  for (unsigned mask = 1; mask < (1U << n); ++mask) {
    std::vector<std::size_t> idx;
    for (std::size_t j = 0; j < n; ++j) {
      if (mask & (1U << j)) idx.push_back(j);
    }
    const std::size_t k = idx.size();
    // normal equations (k x k)
    std::vector<std::vector<double>> M(k, std::vector<double>(k + 1, 0));
    for (std::size_t r = 0; r < A.size(); ++r) {
      for (std::size_t a = 0; a < k; ++a) {
        for (std::size_t c = 0; c < k; ++c) M[a][c] += A[r][idx[a]] * A[r][idx[c]];
        M[a][k] += A[r][idx[a]] * b[r];
      }
    }
    bool singular = false;
    for (std::size_t c = 0; c < k && !singular; ++c) {
      std::size_t piv = c;
      for (std::size_t r = c + 1; r < k; ++r) {
        if (std::fabs(M[r][c]) > std::fabs(M[piv][c])) piv = r;
      }
      if (std::fabs(M[piv][c]) < 1e-300) {
        singular = true;
        break;
      }
      std::swap(M[c], M[piv]);
      for (std::size_t r = 0; r < k; ++r) {
        if (r == c) continue;
        const double f = M[r][c] / M[c][c];
        for (std::size_t q = c; q <= k; ++q) M[r][q] -= f * M[c][q];
      }
    }
    if (singular) continue;
    std::vector<double> x(n, 0);
    bool feasible = true;
    for (std::size_t a = 0; a < k; ++a) {
      x[idx[a]] = M[a][k] / M[a][a];
      if (x[idx[a]] < 0) feasible = false;
    }
    if (!feasible) continue;
    double res = 0;
    for (std::size_t r = 0; r < A.size(); ++r) {
      double s = -b[r];
      for (std::size_t j = 0; j < n; ++j) s += A[r][j] * x[j];
      res += s * s;
    }
    if (res < best_r) {
      best_r = res;
      best = x;
    }
  }
  return best;
}

double golden(const std::function<double(double)>& f, double lo, double hi, int iters = 40) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = f(c), fd = f(d);
  for (int i = 0; i < iters; ++i) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - phi * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + phi * (b - a);
      fd = f(d);
    }
  }
  return fc < fd ? c : d;
}

bool is_onchip(const std::string& group) {
  return group != "compute" && group != "dram" && group != "static" && group != "systolic_array" &&
         group != "tile_compute" && group != "alu" && group != "dma";
}
bool is_compute(const std::string& group) {
  return group == "compute" || group == "systolic_array" || group == "tile_compute" || group == "alu";
}
bool is_dram(const std::string& group) { return group == "dram" || group == "dma"; }

}  // namespace

Result<MeasurementSet> load_measurements(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return make_error(text.error().code, "measurement set: " + text.error().message);
  if (auto at = json_too_deep(*text)) return make_error(Errc::parse, path + ": JSON nested too deep at byte " + std::to_string(*at));
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {
    return make_error(Errc::parse, path + ": not valid JSON: " + e.what());
  }
  MeasurementSet m;
  m.file = path;
  try {
    m.hw_id = j.at("hw_id").get<std::string>();
    m.idle_w = j.value("idle_power_w", 0.0);
    if (j.contains("provenance")) m.provenance = j.at("provenance").dump();
    for (const json& it : j.at("items")) {
      MeasuredItem x;
      x.name = it.at("name").get<std::string>();
      x.split = it.value("split", std::string("test"));
      x.model = it.at("model").get<std::string>();
      x.eager = it.value("eager", true);
      const auto prec = parse_dtype(it.value("precision", std::string("bf16")));
      if (!prec) return make_error(Errc::parse, path + ": item " + x.name + ": unknown precision");
      x.options.dtype = *prec;
      if (it.contains("options")) {
        const json& o = it.at("options");
        x.options.batch = o.value("batch", int64_t{1});
        x.options.phase = o.value("phase", std::string("prefill"));
        x.options.prompt = o.value("prompt", int64_t{512});
        x.options.context = o.value("context", int64_t{1024});
        x.options.seq = o.value("seq", int64_t{128});
        x.options.kv_concat = o.value("kv_concat", false);
      }
      x.latency_s = it.at("latency_s").get<double>();
      x.energy_j = it.at("energy_j").get<double>();
      if (it.contains("sm_clock_mhz") && it.at("sm_clock_mhz").is_number()) x.clock_mhz = it.at("sm_clock_mhz").get<double>();
      if (!(x.latency_s > 0) || !(x.energy_j > 0)) {
        return make_error(Errc::parse, path + ": item " + x.name + ": latency_s and energy_j must be positive");
      }
      m.items.push_back(std::move(x));
    }
  } catch (const json::exception& e) {
    return make_error(Errc::parse, path + ": " + e.what());
  }
  return m;
}

Result<std::vector<ValidationRow>> predict_items(const MeasurementSet& m, const HardwareSpec& hw, const Calibration* cal) {
  auto prep = prepare(m);
  if (!prep) return prep.error();
  std::vector<ValidationRow> rows;
  for (const Prepared& p : *prep) {
    auto e = run(p, hw, cal, std::nullopt, true);
    if (!e) return make_error(e.error().code, p.item->name + ": " + e.error().message);
    rows.push_back({p.item->name, p.item->split, p.item->latency_s, p.item->energy_j, e->latency_s, e->energy_j});
  }
  return rows;
}

Mape mape(const std::vector<ValidationRow>& rows, const std::string& split) {
  Mape r;
  for (const auto& x : rows) {
    if (!split.empty() && x.split != split) continue;
    r.latency_pct += std::fabs(x.latency_err_pct());
    r.energy_pct += std::fabs(x.energy_err_pct());
    ++r.n;
  }
  if (r.n) {
    r.latency_pct /= static_cast<double>(r.n);
    r.energy_pct /= static_cast<double>(r.n);
  }
  return r;
}

Result<Calibration> fit_calibration(const MeasurementSet& m, const HardwareSpec& hw) {
  auto prep_r = prepare(m);
  if (!prep_r) return prep_r.error();
  std::vector<Prepared>& prep = *prep_r;
  std::vector<const Prepared*> train;
  for (const auto& p : prep) {
    if (p.item->split == "train") train.push_back(&p);
  }
  if (train.size() < 4) return make_error(Errc::invalid_argument, m.file + ": needs at least 4 train items to fit");

  Calibration cal;
  cal.hw_id = hw.id;
  cal.idle_w = m.idle_w > 0 ? m.idle_w : hw.idle_w.value;
  cal.dispatch_us = {{"matmul", 10}, {"conv", 10}, {"attention", 10}, {"other", 8}};

  // (1) Energy: E - idle*t = k_c*C + k_o*O + k_d*D + P_active*v*t at the measured latency and
  // clock, rows weighted by 1/E (relative error), non-negative.
  {
    Calibration unit = cal;
    unit.k_compute = unit.k_onchip = unit.k_dram = 1;
    unit.active_w = 0;
    unit.busy_w = 0;
    std::vector<std::vector<double>> A;
    std::vector<double> b;
    for (const Prepared* p : train) {
      const double f = p->item->clock_mhz > 0 ? p->item->clock_mhz : hw.clock_max_mhz.value;
      auto e = run(*p, hw, &unit, f, false);
      if (!e) return e.error();
      double C = 0, O = 0, D = 0, busy = 0;
      for (const Event& ev : e->totals) {
        if (is_compute(ev.group)) C += ev.energy_j;
        else if (is_dram(ev.group)) D += ev.energy_j;
        else if (is_onchip(ev.group)) O += ev.energy_j;
      }
      for (const SubgraphEstimate& s : e->subgraphs) busy += s.device_s;
      const double t = p->item->latency_s, E = p->item->energy_j;
      busy = std::min(busy, t);  // the device cannot be busy longer than the measured wall time
      const double v = voltage_at(hw, f) / hw.voltage_max_v.value;
      A.push_back({C / E, O / E, D / E, v * t / E, v * busy / E});
      b.push_back((E - *cal.idle_w * t) / E);
    }
    const auto x = nnls(A, b);
    cal.k_compute = x[0];
    cal.k_onchip = x[1];
    cal.k_dram = x[2];
    cal.active_w = x[3];
    cal.busy_w = x[4];
  }

  // (2) Latency: coordinate descent on log-error over the train items, with the power cap.
  cal.eff_matrix = hw.eff_matrix.value;
  cal.eff_vector = hw.eff_vector.value;
  cal.eff_memory = hw.eff_memory.value;
  cal.eff_attention = hw.param("eff_attention", hw.eff_matrix.value);
  cal.gemm_k0 = hw.param("gemm_k0", 0);
  cal.launch_us = hw.launch_overhead_us.value;
  cal.model_overhead_us = 0;
  auto objective = [&]() {
    // Library calls (cuBLAS GEMM, cuDNN convolution, fused attention) share one dispatch cost.
    cal.dispatch_us["attention"] = cal.dispatch_us["conv"] = cal.dispatch_us["matmul"];
    double s = 0;
    for (const Prepared* p : train) {
      auto e = run(*p, hw, &cal, std::nullopt, true);
      if (!e) return static_cast<double>(INFINITY);
      const double r = std::log(e->latency_s / p->item->latency_s);
      s += r * r;
      // The SM clock seen under the power cap is data too: it separates "slow because
      // throttled" from "slow per clock" (efficiency).
      if (p->item->clock_mhz > 0 && !e->subgraphs.empty()) {
        const double q = std::log(e->subgraphs.front().clock_mhz / p->item->clock_mhz);
        s += q * q;
      }
    }
    return s;
  };
  struct Param {
    std::function<double&()> ref;
    double lo, hi;
  };
  std::vector<Param> params = {
      {[&]() -> double& { return *cal.eff_matrix; }, 0.2, 1.0},
      {[&]() -> double& { return *cal.eff_vector; }, 0.05, 1.0},
      {[&]() -> double& { return *cal.eff_memory; }, 0.3, 1.0},
      {[&]() -> double& { return *cal.eff_attention; }, 0.2, 1.0},
      {[&]() -> double& { return *cal.gemm_k0; }, 0, 2048},
      {[&]() -> double& { return cal.dispatch_us["matmul"]; }, 0, 60},
      {[&]() -> double& { return cal.dispatch_us["other"]; }, 0, 60},
      {[&]() -> double& { return cal.module_us; }, 0, 100},
      {[&]() -> double& { return cal.model_overhead_us; }, 0, 60},
      {[&]() -> double& { return *cal.launch_us; }, 0, 10},
  };
  for (int sweep = 0; sweep < 8; ++sweep) {
    for (Param& p : params) {
      double& ref = p.ref();
      ref = golden(
          [&](double v) {
            ref = v;
            return objective();
          },
          p.lo, p.hi, 30);
    }
  }
  cal.dispatch_us["attention"] = cal.dispatch_us["matmul"];
  cal.dispatch_us["conv"] = cal.dispatch_us["matmul"];

  // Statistics before/after on both splits.
  auto before = predict_items(m, hw, nullptr);
  auto after = predict_items(m, hw, &cal);
  if (!before) return before.error();
  if (!after) return after.error();
  for (const char* split : {"train", "test"}) {
    const Mape b = mape(*before, split), a = mape(*after, split);
    cal.stats[std::string("before_latency_mape_pct_") + split] = b.latency_pct;
    cal.stats[std::string("before_energy_mape_pct_") + split] = b.energy_pct;
    cal.stats[std::string("after_latency_mape_pct_") + split] = a.latency_pct;
    cal.stats[std::string("after_energy_mape_pct_") + split] = a.energy_pct;
    cal.stats[std::string("items_") + split] = static_cast<double>(a.n);
  }
  cal.provenance = "fitted by `jouleprof estimate --calibrate " + m.file + "` on its train items; measurements: " +
                   m.provenance;
  return cal;
}

std::string render_validation(const std::vector<ValidationRow>& before, const std::vector<ValidationRow>& after) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-38s %-5s %11s %11s %8s %11s %8s | %11s %11s %8s %11s %8s\n", "item", "split",
                "meas ms", "uncal ms", "err%", "cal ms", "err%", "meas mJ", "uncal mJ", "err%", "cal mJ", "err%");
  out += line;
  for (std::size_t i = 0; i < after.size() && i < before.size(); ++i) {
    const ValidationRow &b = before[i], &a = after[i];
    std::snprintf(line, sizeof(line), "%-38s %-5s %11.4f %11.4f %+8.1f %11.4f %+8.1f | %11.3f %11.3f %+8.1f %11.3f %+8.1f\n",
                  a.name.c_str(), a.split.c_str(), a.meas_latency_s * 1e3, b.pred_latency_s * 1e3, b.latency_err_pct(),
                  a.pred_latency_s * 1e3, a.latency_err_pct(), a.meas_energy_j * 1e3, b.pred_energy_j * 1e3,
                  b.energy_err_pct(), a.pred_energy_j * 1e3, a.energy_err_pct());
    out += line;
  }
  // One line per split, in order of appearance (train, test, and any held-out set such as blind).
  std::vector<std::string> splits;
  for (const ValidationRow& r : after) {
    if (std::find(splits.begin(), splits.end(), r.split) == splits.end()) splits.push_back(r.split);
  }
  for (const std::string& split : splits) {
    const Mape b = mape(before, split), a = mape(after, split);
    std::snprintf(line, sizeof(line),
                  "MAPE %-5s (n=%zu): latency %.1f%% uncalibrated -> %.1f%% calibrated; energy %.1f%% -> %.1f%%\n",
                  split.c_str(), a.n, b.latency_pct, a.latency_pct, b.energy_pct, a.energy_pct);
    out += line;
  }
  return out;
}

}  // namespace jouleprof::estimate
