// Runs named on a command line: a run id or "last"/"last~N" from the store, or a result JSON file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

struct LoadedRun {
  int64_t id = 0;      ///< 0: read from a file
  std::string label;   ///< "run 12" or the file name
  Measurement m;
};

/// Loads each reference: digits, "last" or "last~N" from the store at `db_path`; anything
/// else that names an existing file is read as a result JSON (timelines when it carries them).
/// The store is opened only when a reference needs it.
Result<std::vector<LoadedRun>> load_runs(const std::vector<std::string>& refs, const std::string& db_path,
                                         bool with_timelines = true);

}  // namespace jouleprof
