// Writing a Measurement: JSON (versioned schema), timeline CSV, a human summary.
#pragma once

#include <ostream>
#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/measure/result.hpp"

namespace jouleprof {

std::string result_to_json(const Measurement& m, int indent = 2);
Result<void> write_result_json(const Measurement& m, const std::string& path);
/// Long format: t_s,gpu,metric,value,source — one row per sample.
Result<void> write_timeline_csv(const Measurement& m, const std::string& path);
void print_summary(const Measurement& m, std::ostream& out);

/// Host, kernel, tool version and revision into the measurement.
void fill_provenance(Measurement& m);

}  // namespace jouleprof
