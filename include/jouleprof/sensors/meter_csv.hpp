// External power-meter logs (e.g. WattsUp "time,id,pm1,pm2,sum"), aligned to the run's time
// base by their wall-clock timestamps plus a configurable offset.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/core/series.hpp"

namespace jouleprof {

struct MeterCsvOptions {
  std::string power_column;  ///< empty: "sum", else "power_w", else "watts", else "power"
  double clock_offset_s = 0; ///< added to the log's timestamps (meter clock behind: positive)
  bool utc = false;          ///< date-times without zone are local time unless this is set
};

struct MeterLog {
  std::string column;
  /// (unix seconds, watts), time ordered.
  std::vector<Sample> samples;
};

/// Parses a meter CSV text. Times: "YYYY-MM-DD HH:MM:SS[.fff]" (or 'T'), or unix seconds.
/// Errors name the line. `source` names the file in messages.
Result<MeterLog> parse_meter_csv(const std::string& text, const MeterCsvOptions& opt,
                                 const std::string& source = "meter CSV");
Result<MeterLog> load_meter_csv(const std::string& path, const MeterCsvOptions& opt);

}  // namespace jouleprof
