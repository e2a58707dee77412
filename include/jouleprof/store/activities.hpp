// Kernel, copy and NVTX-range activity of a run, kept in the store's `activities` table
// (written with the run itself, in its transaction: Store::record, record_run in store.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

struct StoredActivity {
  int device = 0;  ///< index of the run's GPU (-1: a CPU-side range, or a GPU that was not measured)
  std::string kind, name;
  double t0_s = 0, t1_s = 0;
  int64_t stream = -1, correlation = -1;  ///< -1: none
  std::string attrs_json;  ///< class, NVTX path, launch configuration, attributed energy ...
};

/// Reads them back in the order they were stored (`jouleprof trace --from`, tests).
Result<std::vector<StoredActivity>> load_activities(const std::string& db_path, int64_t run_id);

}  // namespace jouleprof
