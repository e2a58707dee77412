// Writing a Measurement: timeline CSV, a human summary (the JSON writer: result/result_json.hpp).
#pragma once

#include <ostream>
#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/result/result_json.hpp"

namespace jouleprof {

/// Long format: t_s,gpu,metric,value,source — one row per sample.
Result<void> write_timeline_csv(const Measurement& m, const std::string& path);
void print_summary(const Measurement& m, std::ostream& out);

/// Host, kernel, tool version and revision into the measurement.
void fill_provenance(Measurement& m);

}  // namespace jouleprof
