#include "pm_plan.hpp"

#include <algorithm>
#include <cmath>

namespace jouleprof::activity {

const std::vector<PmMetricChoice>& pm_metric_choices() {
  static const std::vector<PmMetricChoice> choices{
      {"sm_active",
       {{{"sm__cycles_active.avg.pct_of_peak_sustained_elapsed"}},
        {{"sm__cycles_active.avg", "sm__cycles_elapsed.avg"}, true, 1},
        {{"sm__cycles_active.avg", "gpc__cycles_elapsed.max"}, true, 1}}},
      {"tensor_active",
       {{{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
        {{"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"}}}},
      {"dram_active", {{{"dram__throughput.avg.pct_of_peak_sustained_elapsed"}}}},
      // DCGM's occupancy is per elapsed cycle; the per-active-cycle one is the fallback.
      {"sm_occupancy",
       {{{"sm__warps_active.avg.pct_of_peak_sustained_elapsed"}},
        {{"sm__warps_active.avg.pct_of_peak_sustained_active"}}}},
      {"fp32_active", {{{"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"}}}},
      {"fp16_active", {{{"sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_elapsed"}}}},
      {"fp64_active", {{{"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"}}}},
  };
  return choices;
}

PmPlan plan_pm_metrics(const std::vector<PmMetricChoice>& choices,
                       const std::function<std::size_t(const std::vector<std::string>&)>& passes) {
  PmPlan plan;
  auto index_in = [](std::vector<std::string>& names, const std::string& n) {
    const auto it = std::find(names.begin(), names.end(), n);
    if (it != names.end()) return static_cast<int>(it - names.begin());
    names.push_back(n);
    return static_cast<int>(names.size() - 1);
  };
  for (const auto& c : choices) {
    std::size_t worst = 0;
    bool taken = false;
    for (const auto& f : c.alternatives) {
      std::vector<std::string> with = plan.cupti;
      PmPlan::Metric m{c.name, f.cupti[0], index_in(with, f.cupti[0]), -1, f.scale};
      if (f.ratio) {
        m.den = index_in(with, f.cupti[1]);
        m.definition += " / " + f.cupti[1];
      } else if (f.scale != 1) {
        m.definition += " / 100";
      }
      const std::size_t p = passes(with);
      if (p == 1) {
        plan.cupti = std::move(with);
        plan.metrics.push_back(std::move(m));
        taken = true;
        break;
      }
      worst = std::max(worst, p);
    }
    if (!taken)
      plan.left_out.push_back(
          c.name + (worst > 1 ? " (" + std::to_string(worst) + " passes)" : " (not offered)"));
  }
  return plan;
}

std::optional<Window> pm_window(const PmPlan& plan, const std::vector<PmSample>& samples,
                                const std::function<double(uint64_t)>& to_run_s) {
  std::vector<double> sum(plan.metrics.size(), 0.0), weight(plan.metrics.size(), 0.0);
  uint64_t first = 0, last = 0;
  bool any = false;
  for (const auto& s : samples) {
    if (s.end_ns <= s.start_ns || s.raw.size() < plan.cupti.size()) continue;
    const double dt = static_cast<double>(s.end_ns - s.start_ns);
    first = any ? std::min(first, s.start_ns) : s.start_ns;
    last = any ? std::max(last, s.end_ns) : s.end_ns;
    any = true;
    for (std::size_t k = 0; k < plan.metrics.size(); ++k) {
      const auto& m = plan.metrics[k];
      double v = s.raw[static_cast<std::size_t>(m.num)] * m.scale;
      if (m.den >= 0) {
        const double d = s.raw[static_cast<std::size_t>(m.den)];
        if (!(d > 0)) continue;
        v = s.raw[static_cast<std::size_t>(m.num)] / d;
      }
      if (!std::isfinite(v)) continue;
      sum[k] += dt * v;
      weight[k] += dt;
    }
  }
  if (!any) return std::nullopt;
  Window w{to_run_s(first), to_run_s(last), {}};
  for (std::size_t k = 0; k < sum.size(); ++k)
    w.values.push_back(weight[k] > 0 ? sum[k] / weight[k] : -1.0);
  return w;
}

}  // namespace jouleprof::activity
