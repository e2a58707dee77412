// The GPU sensor interface: one object per GPU, one implementation per backend
// (nvml: the real driver, loaded at run time; sim: the simulated GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/core/series.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/result/timeline.hpp"  // Metric, GpuInfo

namespace jouleprof {

class GpuSensor {
 public:
  virtual ~GpuSensor() = default;
  virtual const GpuInfo& info() const = 0;
  virtual bool supports(Metric m) const = 0;
  /// Appends driver-buffered power samples newer than the last drained one, on the run time base.
  virtual Result<void> drain_power_samples(std::vector<Sample>& out) = 0;
  /// Reads one instantaneous metric (not power_sample_w, not energy_j).
  virtual Result<double> read(Metric m) = 0;
  /// Cumulative energy counter in millijoules.
  virtual Result<uint64_t> read_energy_mj() = 0;
};

/// Which GPUs to open.
struct GpuSelection {
  std::string backend = "auto";  ///< auto | nvml | sim
  std::vector<std::string> ids;  ///< NVML indices or UUIDs (prefixes allowed); empty: all visible
  /// Value of CUDA_VISIBLE_DEVICES (nullopt: unset). Used only when `ids` is empty.
  std::optional<std::string> cuda_visible_devices;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sim_scenario;  ///< scenario file for the simulated GPU (empty: built-in H100-like)
  bool fallback_to_sim = false;  ///< with "auto": use the simulated GPU when NVML is absent
};

class SimGpuModel;

struct GpuSet {
  std::vector<std::unique_ptr<GpuSensor>> gpus;
  std::string backend;  ///< "nvml" or "sim"
  std::string note;     ///< e.g. why the simulated GPU was chosen
  /// The simulated GPUs' models (backend "sim" only), so a driver can set their load.
  std::vector<std::shared_ptr<SimGpuModel>> sim_models;
  bool simulated() const { return backend == "sim"; }
};

/// Opens the selected GPUs. With backend "auto", NVML is tried first and the simulated GPU is
/// used (and said so in `note`) when no NVIDIA driver is present.
Result<GpuSet> open_gpus(const GpuSelection& sel, const TimeBase& tb);

/// The sensor that measures CUDA device `cuda_uuid` ("GPU-…", as NVML names boards): the one with
/// that UUID, else the one at `index` (the CUDA ordinal, as CUDA_VISIBLE_DEVICES maps it; 0 when
/// out of range) with a `warning` when no UUID matched and one was given: on a node of several
/// GPUs, CUDA's order and NVML's can differ, and another GPU's power would be measured. `set` must
/// hold at least one GPU.
std::size_t sensor_of_cuda_device(const GpuSet& set, std::size_t index, const std::string& cuda_uuid, std::string& warning);

/// The --device names: "auto", then every backend of the registry (gpu_registry.cpp), in order.
const std::vector<std::string>& gpu_backend_names();

/// The environment's part of a selection, in one place: CUDA_VISIBLE_DEVICES (what the workload
/// will see) and the NVML library: `nvml_flag` when given, else $JOULEPROF_NVML_LIB, else the
/// default soname.
void apply_gpu_environment(GpuSelection& sel, const std::string& nvml_flag = "");

/// A GPU that is there, as a selection names it.
struct PresentGpu {
  unsigned index;
  std::string uuid;
};
/// The indices of the GPUs `ids` name among `present`, in order (no ids: every present GPU):
/// NVML indices or UUIDs (prefixes, with or without "GPU-"). Refused: a MIG instance
/// (Errc::unsupported), an id naming no present GPU (Errc::not_present), a GPU named twice.
/// What `open_gpus` and the control backends (sweep) select with.
Result<std::vector<unsigned>> select_gpu_indices(const std::vector<std::string>& ids,
                                                 const std::vector<PresentGpu>& present);

/// Parses a GPU id list ("0,1" or "GPU-3f...,GPU-aa..") as CUDA_VISIBLE_DEVICES does.
std::vector<std::string> split_gpu_list(const std::string& s);

}  // namespace jouleprof
