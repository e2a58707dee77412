// The one writer of the result document (schema_version 1, docs/result-schema.md); its one
// reader is measurement_from_json (result_io.hpp). The CLI, the store and the Python package
// all go through these two.
#pragma once

#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

std::string result_to_json(const Measurement& m, int indent = 2);
/// result_to_json(m) plus a top-level "timelines" array holding every sample (docs/store.md,
/// "Embedded timelines"); read back by measurement_from_json (result/result_io.hpp).
std::string result_to_json_with_timelines(const Measurement& m, int indent = -1);
Result<void> write_result_json(const Measurement& m, const std::string& path);
/// One GPU's energy over one window, as the document's "windows[].gpus[]" object (the Python
/// package's window dicts are made from it, so both say the same, null where a figure is absent).
std::string gpu_energy_json(const GpuEnergy& e);

}  // namespace jouleprof
