#include "jouleprof/core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace jouleprof {

double Summary::ci95_relative() const { return mean != 0 ? ci95_half_width / std::fabs(mean) : 0; }

double student_t95(std::size_t dof) {
  static const double table[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306,  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120,  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064,  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return 0;
  if (dof <= 30) return table[dof];
  if (dof <= 60) return 2.000 + (2.042 - 2.000) * (60.0 - static_cast<double>(dof)) / 30.0;
  if (dof <= 120) return 1.980 + (2.000 - 1.980) * (120.0 - static_cast<double>(dof)) / 60.0;
  return 1.960;
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  const std::size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(v.size() - 1));
    s.ci95_half_width = student_t95(v.size() - 1) * s.stdev / std::sqrt(static_cast<double>(v.size()));
  }
  return s;
}

}  // namespace jouleprof
