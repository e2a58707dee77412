// The unique-kernel table: one row per (name, launch configuration) with counts, times and
// attributed energy, as JSON Lines or CSV — the format `jouleprof kernels` / `replay` read
// (docs/trace.md, "Unique kernels").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/trace/trace.hpp"

namespace jouleprof {

struct UniqueKernel {
  std::string name;    ///< demangled
  std::string kind;    ///< kernel | memcpy | memset
  std::string kclass;
  uint32_t device = 0;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, shared_bytes = 0;  ///< static + dynamic shared memory
  uint64_t bytes = 0;                        ///< copies: bytes per call
  uint64_t count = 0;
  double total_s = 0;
  std::optional<double> energy_j;  ///< attributed (method in the file's header / each row)
  std::string method;
  double mean_s() const { return count > 0 ? total_s / static_cast<double>(count) : 0; }
};

/// Groups the GPU activities of `t` (kernels and copies) by name, launch configuration and device.
/// `activity_row[i]` receives the row index of activity i (or SIZE_MAX for non-GPU activities).
std::vector<UniqueKernel> unique_kernels(const TraceData& t, std::vector<std::size_t>* activity_row = nullptr);

std::string unique_kernel_jsonl(const std::vector<UniqueKernel>& rows);
std::string unique_kernel_csv(const std::vector<UniqueKernel>& rows);
/// Writes JSONL or CSV by the file's extension (.csv → CSV, else JSONL); "-" is stdout (JSONL).
Result<void> write_unique_kernels(const std::vector<UniqueKernel>& rows, const std::string& path);

}  // namespace jouleprof
