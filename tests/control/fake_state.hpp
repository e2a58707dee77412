// Reading and seeding the fake NVML's GPU state file and set-call log (fakes/nvml/fake_nvml.cpp).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "jouleprof/control/journal.hpp"

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

/// One test's fake-NVML folder (fakes/nvml): the GPU state file seeded with `seeded_original`, the
/// set-call log, the journal folder, a run store path and a scenario file (`gpus N` and the extra
/// lines given). Removed with everything in it at the end of the test.
struct FakeNvmlFolder {
  std::string dir, state, log, journal, db, scenario;
  std::map<unsigned, FakeGpuState> original;

  /// `name` makes the folder's name (the test's name, for a reader of a leftover folder).
  FakeNvmlFolder(std::string name, int gpus, const std::string& scenario_lines = "") {
    for (char& c : name) c = c == '/' ? '_' : c;  // parameterized tests' names hold '/'
    dir = (std::filesystem::temp_directory_path() / ("jp-" + name + "-" + std::to_string(getpid()))).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    state = dir + "/state.txt";
    log = dir + "/set-log.txt";
    journal = dir + "/journal";
    db = dir + "/runs.db";
    scenario = dir + "/scenario.txt";
    std::ofstream(scenario) << "gpus " << gpus << "\n" << scenario_lines;
    original = seeded_original(gpus);
    write_fake_state(state, original);
  }
  ~FakeNvmlFolder() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  FakeNvmlFolder(const FakeNvmlFolder&) = delete;
  FakeNvmlFolder& operator=(const FakeNvmlFolder&) = delete;

  /// The variables that point the fake library at this folder (name, value).
  std::vector<std::pair<std::string, std::string>> fake_nvml_env() const {
    return {{"JOULEPROF_FAKE_NVML_SCENARIO", scenario},
            {"JOULEPROF_FAKE_NVML_STATE", state},
            {"JOULEPROF_FAKE_NVML_SET_LOG", log}};
  }

  /// Journals left in the journal folder (999: unreadable).
  std::size_t journals() const {
    auto j = jouleprof::control::read_journals(journal);
    return j ? j->size() : 999;
  }
};

}  // namespace jp_control_test
