// Sampled mode's switch logs (DIR/sample-PID.txt, written by the injection library's duty cycle):
// which windows of each process had its kernel records kept.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "jouleprof/core/files.hpp"
#include "jouleprof/trace/format.hpp"
#include "jouleprof/trace/trace.hpp"

namespace jouleprof {

using namespace trace_format;

namespace {

// The log's windows (CUPTI ns); false when its header is not a sample log's.
bool parse_log(const std::string& text, DutyCycle& cycle, std::vector<std::pair<int64_t, int64_t>>& windows, int64_t& open_at) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line.rfind(kSampleFileMagic, 0) != 0) return false;
  long long on = 0, period = 0;
  if (std::sscanf(line.c_str() + std::string(kSampleFileMagic).size(), " on_ns=%lld period_ns=%lld", &on, &period) != 2) return false;
  cycle.on_ns = on;
  cycle.period_ns = period;
  open_at = -1;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) continue;  // a comment (the flush's duration)
    char what[4] = {};
    unsigned long long t = 0;
    if (std::sscanf(line.c_str(), "%3s %llu", what, &t) != 2) break;  // a cut-off last line
    const std::string w = what;
    if (w == "on" && open_at < 0) {
      open_at = static_cast<int64_t>(t);
    } else if (w == "off" && open_at >= 0) {
      windows.emplace_back(open_at, static_cast<int64_t>(t));
      open_at = -1;
    } else if (w != "on" && w != "off") {
      break;
    }
  }
  return true;
}

}  // namespace

void read_sample_logs(const std::string& dir, TraceData& t) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string prefix = kSampleFilePrefix, suffix = kSampleFileSuffix;
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const int64_t pid = std::atoll(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()).c_str());
    auto p = std::find_if(t.processes.begin(), t.processes.end(), [&](const ProcessTrace& x) { return x.pid == pid; });
    if (p == t.processes.end()) continue;
    auto text = read_text_file(e.path().string());
    DutyCycle cycle;
    int64_t open_at = -1;
    std::vector<std::pair<int64_t, int64_t>> windows;
    if (!text || !parse_log(*text, cycle, windows, open_at) || !cycle.active()) {
      t.warnings.push_back("process " + std::to_string(pid) + ": " + e.path().string() + " is not a sampled mode's switch log (ignored)");
      continue;
    }
    if (open_at >= 0) {
      // Still on at the end: the window closes with the process's last record.
      int64_t last = open_at;
      const auto proc = static_cast<int>(p - t.processes.begin());
      for (const Activity& a : t.activities) {
        if (a.process == proc) last = std::max(last, a.end_ns);
      }
      windows.emplace_back(open_at, last);
    }
    p->sample_windows_ns = std::move(windows);
    t.sampling.on_s = static_cast<double>(cycle.on_ns) * 1e-9;
    t.sampling.period_s = static_cast<double>(cycle.period_ns) * 1e-9;
  }
}

}  // namespace jouleprof
