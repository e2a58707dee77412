// The control strategies (one per backend) and what they share.
#pragma once

#include "jouleprof/control/control.hpp"

namespace jouleprof::control {

Result<std::unique_ptr<ControlBackend>> open_nvml_control(const std::string& library);
Result<std::unique_ptr<ControlBackend>> open_sim_control(const std::string& scenario);

/// The GPUs named by `ids` (indices, UUIDs or UUID prefixes; "all" or empty: every GPU).
Result<std::vector<GpuCapabilities>> select_gpus(const std::vector<GpuCapabilities>& all,
                                                 const std::vector<std::string>& ids);

}  // namespace jouleprof::control
