#include <cstdio>
#include <fmt/format.h>

#include "jouleprof/measure/output.hpp"

namespace jouleprof {

Result<void> write_timeline_csv(const Measurement& m, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return make_error(Errc::io, "cannot write " + path);
  std::fputs("t_s,device,metric,value\n", f);
  for (std::size_t g = 0; g < m.timelines.size(); ++g) {
    const std::string dev = "gpu" + std::to_string(m.gpus[g].index);
    for (int k = 0; k < kMetricCount; ++k) {
      const char* name = metric_name(static_cast<Metric>(k));
      m.timelines[g]->series[static_cast<std::size_t>(k)].for_each([&](const Sample& s) {
        fmt::print(f, "{:.6f},{},{},{}\n", s.t_s, dev, name, s.value);
      });
    }
  }
  for (std::size_t d = 0; d < m.cpu_energy.size(); ++d) {
    for (const Sample& s : m.cpu_energy[d]) fmt::print(f, "{:.6f},cpu,{}_energy_j,{}\n", s.t_s, m.cpu_domains[d], s.value);
  }
  for (const Sample& s : m.meter_power) fmt::print(f, "{:.6f},meter,power_w,{}\n", s.t_s, s.value);
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) return make_error(Errc::io, "cannot write " + path);
  return {};
}

}  // namespace jouleprof
