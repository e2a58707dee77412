// Statistics over repeats.
#pragma once

#include <cstddef>
#include <vector>

namespace jouleprof {

struct Summary {
  std::size_t n = 0;
  double mean = 0, median = 0, stdev = 0, min = 0, max = 0;
  double ci95_half_width = 0;  ///< Student-t, 0 for n < 2
  /// ci95_half_width / |mean| (0 when mean is 0).
  double ci95_relative() const;
};

Summary summarize(std::vector<double> values);

/// Two-sided 95% Student-t quantile for `dof` degrees of freedom.
double student_t95(std::size_t dof);

}  // namespace jouleprof
