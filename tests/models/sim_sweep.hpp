// Simulated DVFS sweeps with known laws, written as CSV (tests only; the rows are simulated).
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace jouleprof::models::test {

struct SimApp {
  std::string name;
  double fp, dram;  // activity (constant over clocks)
};

/// A CSV with columns application, sm_app_clock, fp_active, dram_active, power_usage, run_time
/// from power(app, f) and time(app, f); `noise` is a relative Gaussian sigma (seeded).
inline std::string sim_csv(const std::vector<SimApp>& apps, const std::vector<double>& clocks,
                           const std::function<double(const SimApp&, double)>& power,
                           const std::function<double(const SimApp&, double)>& time, double noise = 0, int repeats = 1) {
  std::mt19937 rng(7);
  std::normal_distribution<double> n(0, 1);
  std::ostringstream s;
  s.precision(12);
  s << "application,sm_app_clock,fp_active,dram_active,power_usage,run_time\n";
  for (const auto& a : apps)
    for (double f : clocks)
      for (int r = 0; r < repeats; ++r)
        s << a.name << "," << f << "," << a.fp << "," << a.dram << "," << power(a, f) * (1 + noise * n(rng)) << ","
          << time(a, f) * (1 + noise * n(rng)) << "\n";
  return s.str();
}

inline std::vector<double> clock_grid(double lo, double hi, double step) {
  std::vector<double> c;
  for (double f = lo; f <= hi + 1e-9; f += step) c.push_back(f);
  return c;
}

inline std::vector<SimApp> sim_apps() {
  return {{"a", 0.9, 0.1}, {"b", 0.5, 0.5}, {"c", 0.1, 0.9}, {"d", 0.3, 0.2}, {"e", 0.7, 0.6},
          {"f", 0.2, 0.7}, {"g", 0.6, 0.3}, {"h", 0.05, 0.4}};
}

}  // namespace jouleprof::models::test
