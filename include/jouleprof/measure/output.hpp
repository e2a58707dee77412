// Writing a Measurement: JSON (versioned schema), timeline CSV, a human summary.
#pragma once

#include <ostream>
#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

std::string result_to_json(const Measurement& m, int indent = 2);
/// result_to_json(m) plus a top-level "timelines" array holding every sample (docs/store.md,
/// "Embedded timelines"); read back by measurement_from_json (store/result_io.hpp).
std::string result_to_json_with_timelines(const Measurement& m, int indent = -1);
Result<void> write_result_json(const Measurement& m, const std::string& path);
/// Long format: t_s,gpu,metric,value,source — one row per sample.
Result<void> write_timeline_csv(const Measurement& m, const std::string& path);
void print_summary(const Measurement& m, std::ostream& out);

/// Host, kernel, tool version and revision into the measurement.
void fill_provenance(Measurement& m);

}  // namespace jouleprof
