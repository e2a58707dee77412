// Reading and seeding the fake NVML's GPU state file and set-call log (fakes/nvml/fake_nvml.cpp).
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace jp_control_test {

struct FakeGpuState {
  int gpu_locked = 0;
  unsigned gpu_min = 0, gpu_max = 0;
  int mem_locked = 0;
  unsigned mem_min = 0, mem_max = 0;
  unsigned app_gpu = 1980, app_mem = 2619, power_mw = 700000;
  int persistence = 1;
  bool operator==(const FakeGpuState&) const = default;
};

inline std::map<unsigned, FakeGpuState> read_fake_state(const std::string& path) {
  std::map<unsigned, FakeGpuState> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    unsigned i = 0;
    FakeGpuState s;
    std::string k;
    if (ls >> i >> k >> s.gpu_locked >> s.gpu_min >> s.gpu_max >> k >> s.mem_locked >> s.mem_min >> s.mem_max >> k >>
        s.app_gpu >> s.app_mem >> k >> s.power_mw >> k >> s.persistence) {
      out[i] = s;
    }
  }
  return out;
}

inline void write_fake_state(const std::string& path, const std::map<unsigned, FakeGpuState>& st) {
  std::ofstream out(path);
  for (const auto& [i, s] : st) {
    out << i << " gpu_locked " << s.gpu_locked << " " << s.gpu_min << " " << s.gpu_max << " mem_locked " << s.mem_locked
        << " " << s.mem_min << " " << s.mem_max << " app " << s.app_gpu << " " << s.app_mem << " power_mw " << s.power_mw
        << " persistence " << s.persistence << "\n";
  }
}

/// The original state the tests seed: not the defaults, so that "restored" cannot mean "reset".
inline std::map<unsigned, FakeGpuState> seeded_original(int gpus) {
  std::map<unsigned, FakeGpuState> st;
  for (int i = 0; i < gpus; ++i) {
    FakeGpuState s;
    s.app_gpu = i == 0 ? 1410 : 1755;
    s.power_mw = i == 0 ? 650000 : 500000;
    st[static_cast<unsigned>(i)] = s;
  }
  return st;
}

inline std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

}  // namespace jp_control_test
