// Reading a result JSON back into a Measurement, and writing one that carries its timelines.
//
// The result JSON (schema_version 1, src/result/result_json.cpp) holds no samples. For moving
// runs between machines (`jouleprof runs export` / `runs import`) a result may carry an optional
// top-level "timelines" array (docs/store.md):
//   {"source": "gpu", "device": 0, "metric": "power_sample_w", "t_s": [...], "value": [...]}
//   {"source": "cpu", "device": 0, "metric": "package-0_energy_j", ...}   (device: domain index)
//   {"source": "meter", "device": 0, "metric": "power_w", ...}
// Older readers ignore it; result_to_json's fields are unchanged.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result_json.hpp"  // result_to_json_with_timelines
#include "jouleprof/result/result.hpp"

namespace jouleprof {

/// Parses a result JSON document. Errors: Errc::parse for malformed JSON or fields,
/// Errc::invalid_argument for a schema_version this build does not read.
/// Timelines are read when the document carries them.
Result<Measurement> measurement_from_json(const std::string& text);

/// Reads a result JSON file (see measurement_from_json); messages name the file.
Result<Measurement> read_result_file(const std::string& path);

/// Reads a file holding one result document or a JSON array of them (`runs export` of several).
Result<std::vector<Measurement>> read_result_documents(const std::string& path);

/// Adds the long-format timeline CSV written by `measure --timeline` (t_s,device,metric,value)
/// to a measurement that has none.
Result<void> read_timeline_csv(const std::string& path, Measurement& m);

/// Counts the samples of every timeline (GPU series, CPU energy, meter power).
std::size_t timeline_sample_count(const Measurement& m);

}  // namespace jouleprof
