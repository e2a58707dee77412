// DCGM profiling fields, the part that needs no host engine (tests/activity): which fields give
// which activity metrics, and one poll's values turned into a window.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "source.hpp"

namespace jouleprof::activity {

struct DcgmField {
  const char* metric;
  unsigned short id;
};
/// DCGM_FI_PROF_* 1002..1008 under the names the models use.
const std::array<DcgmField, 7>& dcgm_fields();

/// One value DCGM returned: field id, status (0 ok), and the value (blank ≥ DCGM_FP64_BLANK).
struct DcgmValue {
  unsigned short field = 0;
  int status = 0;
  double value = 0;
};

/// Each field's mean over the values (ok, not blank) in [t0_s, t1_s]; -1 for a field without one.
Window dcgm_window(const std::vector<DcgmValue>& values, double t0_s, double t1_s);

}  // namespace jouleprof::activity
