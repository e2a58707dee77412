// The idle baseline (declared in measure.hpp): one function for `measure`, `bench llm` and the
// Python package, so they agree on what "idle" means.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <thread>

#include "jouleprof/core/integrate.hpp"
#include "jouleprof/measure/measure.hpp"

namespace jouleprof {

void set_idle_baseline(Monitor& mon, Monitor::WindowId idle_window, std::vector<std::string>& warnings,
                       std::string_view when) {
  mon.sync_counters();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // samples past the edge
  auto e = mon.energy(idle_window);
  if (!e) return;
  // A GPU that just finished work takes seconds to settle (measured on H100: ~125 W for
  // ~2.5 s, then ~70 W), so the baseline is the second half of the idle window, and a first
  // half that differs says the GPU had not settled.
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
  mon.set_idle_power(idle, fmt::format("second half of a {:.1f} s idle window {}", e->duration_s(), when));
}

}  // namespace jouleprof
