#include <fmt/format.h>

#include "jouleprof/core/files.hpp"
#include "jouleprof/measure/output.hpp"

namespace jouleprof {

Result<void> write_timeline_csv(const Measurement& m, const std::string& path) {
  return write_file_atomic(path, [&](const std::function<void(std::string_view)>& sink) {
    fmt::memory_buffer b;
    auto flush = [&](bool force) {
      if (force || b.size() > (1u << 20)) {
        sink(std::string_view(b.data(), b.size()));
        b.clear();
      }
    };
    fmt::format_to(std::back_inserter(b), "t_s,device,metric,value\n");
    for (std::size_t g = 0; g < m.timelines.size(); ++g) {
      const std::string dev = "gpu" + std::to_string(m.gpus[g].index);
      for (int k = 0; k < kMetricCount; ++k) {
        const char* name = metric_name(static_cast<Metric>(k));
        m.timelines[g]->series[static_cast<std::size_t>(k)].for_each([&](const Sample& s) {
          fmt::format_to(std::back_inserter(b), "{:.6f},{},{},{}\n", s.t_s, dev, name, s.value);
          flush(false);
        });
      }
    }
    for (std::size_t d = 0; d < m.cpu_energy.size(); ++d) {
      for (const Sample& s : m.cpu_energy[d]) {
        fmt::format_to(std::back_inserter(b), "{:.6f},cpu,{}_energy_j,{}\n", s.t_s, m.cpu_domains[d], s.value);
        flush(false);
      }
    }
    for (const Sample& s : m.meter_power) fmt::format_to(std::back_inserter(b), "{:.6f},meter,power_w,{}\n", s.t_s, s.value);
    flush(true);
  });
}

}  // namespace jouleprof
