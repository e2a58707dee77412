#include "jouleprof/measure/idle.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>

#include "jouleprof/core/integrate.hpp"

namespace jouleprof {

std::vector<std::string> set_idle_baseline(Monitor& mon, Monitor::WindowId id, const std::string& source) {
  std::vector<std::string> warnings;
  auto e = mon.energy(id);
  if (!e) return warnings;
  std::vector<std::optional<double>> idle;
  const double mid = 0.5 * (e->t0_s + e->t1_s);
  for (std::size_t g = 0; g < e->gpus.size(); ++g) {
    const auto s = mon.sampler().slice(g, Metric::power_sample_w, e->t0_s - 1, e->t1_s + 1);
    if (s.size() < 4) {
      idle.emplace_back(e->gpus[g].mean_power_w);
      continue;
    }
    const double first = integrate_trapezoid(s, e->t0_s, mid).mean_power_w();
    const double second = integrate_trapezoid(s, mid, e->t1_s).mean_power_w();
    idle.emplace_back(second);
    if (std::fabs(first - second) > std::max(5.0, 0.05 * second)) {
      warnings.push_back(fmt::format(
          "GPU {} was not settled at idle: {:.0f} W in the first half of the idle window, {:.0f} W in "
          "the second (the baseline); lengthen --idle or wait before measuring",
          mon.gpus().gpus[g]->info().index, first, second));
    }
  }
  mon.set_idle_power(idle, source);
  return warnings;
}

}  // namespace jouleprof
