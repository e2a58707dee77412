// One activity source per GPU (strategies: gpm_source.cpp, utilization_source.cpp,
// cupti_pm_source.cpp, dcgm_source.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/activity/activity.hpp"

namespace jouleprof::activity {

struct Window {
  double t0_s = 0, t1_s = 0;
  std::vector<double> values;  ///< one per metric, 0..1; -1: not reported in this window
};

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<std::string>& metrics() const = 0;
  /// How each metric is obtained, one per metric (empty when the name says it).
  virtual std::vector<std::string> definitions() const { return {}; }
  /// Called every period on the recorder's thread: the window that closed at now_s, if any.
  virtual Result<std::optional<Window>> poll(double now_s) = 0;
};

/// NVML GPM on the GPU with this NVML index; Errc::unsupported (with the reason) when the
/// library, the driver or the GPU has no GPM.
Result<std::unique_ptr<Source>> open_gpm(const std::string& nvml_library, unsigned nvml_index);
/// Utilization through the GPU's sensor (NVML or simulated).
std::unique_ptr<Source> open_utilization(GpuSensor& gpu, double period_s);

struct PmOptions {
  std::string cupti_library,
      cuda_library;  ///< empty: $JOULEPROF_CUPTI_LIB / $JOULEPROF_CUDA_LIB, else the sonames
};
/// CUPTI PM sampling on this GPU (found by its PCI bus id), started now. `note` says which
/// activity metrics did not fit in one pass. Errc::unavailable with CUPTI's reason when CUPTI,
/// the driver or the counters are not to be had.
Result<std::unique_ptr<Source>> open_cupti_pm(const PmOptions& o, const GpuInfo& gpu,
                                              const TimeBase& tb, double period_s,
                                              std::string& note);

/// A connection to a DCGM host engine, shared by the GPUs' sources.
class DcgmSession;
/// Loads libdcgm (`library`; empty: $JOULEPROF_DCGM_LIB, else libdcgm.so.4, .3) and connects to
/// the host engine at `host` (empty: $JOULEPROF_DCGM_HOST, else 127.0.0.1); with `embedded`, when
/// none answers, starts DCGM's engine inside this process. Errc::unavailable when the library or
/// an engine is missing.
Result<std::shared_ptr<DcgmSession>> connect_dcgm(const std::string& library,
                                                  const std::string& host, bool embedded);
/// "" for a host engine; else why DCGM runs embedded (the timeline's note).
const std::string& dcgm_session_note(const DcgmSession& s);
/// Watches the profiling fields of the GPU with this DCGM id (DCGM numbers GPUs as NVML does).
Result<std::unique_ptr<Source>> open_dcgm(std::shared_ptr<DcgmSession> session, unsigned gpu_id,
                                          double period_s);

}  // namespace jouleprof::activity
