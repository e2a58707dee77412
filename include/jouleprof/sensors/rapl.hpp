// CPU energy from Linux powercap/RAPL (package and DRAM domains), with counter wrap-around.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

struct RaplDomain {
  std::string name;  ///< "package-0", "dram" ... (as the kernel names it, made unique)
  std::string path;  ///< its sysfs directory
  uint64_t max_energy_range_uj = 0;
  uint64_t last_raw_uj = 0;
  double accumulated_j = 0;  ///< unwrapped energy since open()
};

class Rapl {
 public:
  /// Enumerates package and DRAM domains under `root` (a seam for tests).
  /// Errc::unavailable with the reason when there is no readable RAPL.
  static Result<Rapl> open(const std::string& root = "/sys/class/powercap");
  /// Reads all counters, unwrapping each; returns cumulative joules per domain.
  Result<std::vector<double>> read();
  const std::vector<RaplDomain>& domains() const { return domains_; }

 private:
  std::vector<RaplDomain> domains_;
};

}  // namespace jouleprof
