// The switch logs (DIR/sample-PID.txt, written by the injection library's duty cycle and by the
// program's pauses): which windows of each process had its kernel records kept, and its pauses.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "jouleprof/core/files.hpp"
#include "jouleprof/trace/format.hpp"
#include "jouleprof/trace/trace.hpp"

namespace jouleprof {

using namespace trace_format;

namespace {

using Spans = std::vector<std::pair<int64_t, int64_t>>;

struct Log {
  DutyCycle cycle;
  Spans windows, pauses;
  int64_t open_at = -1, paused_at = -1;  ///< a window / a pause still open at the end
};

// The log's windows and pauses (CUPTI ns); false when its header is not a sample log's.
bool parse_log(const std::string& text, Log& log) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line.rfind(kSampleFileMagic, 0) != 0) return false;
  long long on = 0, period = 0;
  if (std::sscanf(line.c_str() + std::string(kSampleFileMagic).size(), " on_ns=%lld period_ns=%lld", &on, &period) != 2) return false;
  log.cycle.on_ns = on;
  log.cycle.period_ns = period;
  int64_t& open_at = log.open_at;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) continue;  // a comment (the flush's duration)
    char what[8] = {};
    unsigned long long t = 0;
    if (std::sscanf(line.c_str(), "%7s %llu", what, &t) != 2) break;  // a cut-off last line
    const std::string w = what;
    const auto at = static_cast<int64_t>(t);
    if (w == "on" && open_at < 0) {
      open_at = at;
    } else if (w == "off" && open_at >= 0) {
      log.windows.emplace_back(open_at, at);
      open_at = -1;
    } else if (w == "pause" && log.paused_at < 0) {
      log.paused_at = at;
    } else if (w == "resume" && log.paused_at >= 0) {
      log.pauses.emplace_back(log.paused_at, at);
      log.paused_at = -1;
    } else if (w != "on" && w != "off" && w != "pause" && w != "resume") {
      break;
    }
  }
  return true;
}

constexpr int64_t kForever = int64_t{4} << 60;  // beyond any run; still exact as a double

// The complement of sorted, disjoint spans over (-kForever, kForever).
Spans between(const Spans& pauses) {
  Spans out;
  int64_t from = -kForever;
  for (const auto& [a, b] : pauses) {
    if (a > from) out.emplace_back(from, a);
    from = std::max(from, b);
  }
  if (from < kForever) out.emplace_back(from, kForever);
  return out;
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
    Log log;
    if (!text || !parse_log(*text, log) || !(log.cycle.active() || (log.cycle.on_ns == 0 && log.cycle.period_ns == 0))) {
      t.warnings.push_back("process " + std::to_string(pid) + ": " + e.path().string() + " is not a sampled mode's switch log (ignored)");
      continue;
    }
    // Still on at the end: the window closes with the process's last record. Still paused: the
    // rest of the process was not recorded.
    if (log.open_at >= 0) {
      int64_t last = log.open_at;
      const auto proc = static_cast<int>(p - t.processes.begin());
      for (const Activity& a : t.activities) {
        if (a.process == proc) last = std::max(last, a.end_ns);
      }
      log.windows.emplace_back(log.open_at, last);
    }
    if (log.paused_at >= 0) log.pauses.emplace_back(log.paused_at, kForever);
    // No duty cycle: the process recorded whenever it was not paused, from before CUDA started (no
    // kernel could run) to after its last record.
    if (!log.cycle.active()) log.windows = between(log.pauses);
    p->sample_windows_ns = std::move(log.windows);
    p->pauses_ns = std::move(log.pauses);
    p->windowed = true;
    if (log.cycle.active()) {
      t.sampling.on_s = static_cast<double>(log.cycle.on_ns) * 1e-9;
      t.sampling.period_s = static_cast<double>(log.cycle.period_ns) * 1e-9;
    }
  }
}

}  // namespace jouleprof
