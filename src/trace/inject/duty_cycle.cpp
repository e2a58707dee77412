#include "duty_cycle.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace jouleprof::inject {

using trace_format::DutyCycle;

namespace {

bool parse_number(const char* s, double& out) {
  if (s == nullptr || s[0] == '\0') return false;
  char* end = nullptr;
  out = std::strtod(s, &end);
  return end != nullptr && *end == '\0';
}

void write_line(int fd, const char* text, int n) {
  if (fd < 0 || n <= 0) return;
  while (::write(fd, text, static_cast<size_t>(n)) < 0 && errno == EINTR) {
  }
}

}  // namespace

bool kernels_off(const char* value) { return value != nullptr && std::strcmp(value, "0") == 0; }

bool graphs_by_node(const char* value) { return value != nullptr && std::strcmp(value, "node") == 0; }

DutyCycle duty_cycle_from(const char* percent, const char* period_ms) {
  double p = 0, ms = 1000;
  if (!parse_number(percent, p) || !(p > 0 && p < 100)) return {};
  if (period_ms != nullptr && period_ms[0] != '\0' && (!parse_number(period_ms, ms) || !(ms >= 1))) return {};
  DutyCycle c;
  c.period_ns = static_cast<int64_t>(ms * 1e6);
  c.on_ns = static_cast<int64_t>(ms * 1e6 * p / 100);
  return c.active() ? c : DutyCycle{};
}

bool run_duty_cycle(const DutyCycle& c, bool on, const DutyHooks& h) {
  if (!c.active()) return on;
  int64_t t = h.now_ns();
  for (;;) {
    if (const bool want = c.on_at(t); want != on) {
      h.set_tracing(want);
      on = want;
    }
    if (!h.wait_until(c.next_switch(t))) return on;
    t = h.now_ns();
  }
}

bool SampleLog::open(const std::string& dir, int64_t pid, const DutyCycle& c) {
  const std::string path = dir + "/" + trace_format::kSampleFilePrefix + std::to_string(pid) + trace_format::kSampleFileSuffix;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return false;
  char line[128];
  const int n = std::snprintf(line, sizeof(line), "%s on_ns=%lld period_ns=%lld\n", trace_format::kSampleFileMagic,
                              static_cast<long long>(c.on_ns), static_cast<long long>(c.period_ns));
  write_line(fd_, line, n);
  return true;
}

void SampleLog::mark(bool on, uint64_t cupti_ns, int64_t took_ns) {
  char line[96];
  const int n = took_ns < 0 ? std::snprintf(line, sizeof(line), "%s %llu\n", on ? "on" : "off", static_cast<unsigned long long>(cupti_ns))
                            : std::snprintf(line, sizeof(line), "%s %llu took_ns=%lld\n", on ? "on" : "off",
                                            static_cast<unsigned long long>(cupti_ns), static_cast<long long>(took_ns));
  write_line(fd_, line, n);
}

void SampleLog::mark_pause(bool paused, uint64_t cupti_ns) {
  char line[64];
  const int n = std::snprintf(line, sizeof(line), "%s %llu\n", paused ? "pause" : "resume", static_cast<unsigned long long>(cupti_ns));
  write_line(fd_, line, n);
}

void SampleLog::note_flush(int64_t took_ns) {
  char line[64];
  const int n = std::snprintf(line, sizeof(line), "# flush took_ns=%lld\n", static_cast<long long>(took_ns));
  write_line(fd_, line, n);
}

void switch_tracing(bool on, const SwitchHooks& h, SampleLog& log, std::atomic<bool>& anchoring) {
  const int64_t t0 = h.mono_ns();
  if (on) {
    const uint64_t at = h.cupti_now();  // before enabling: the window holds every record it keeps
    h.set_kinds(true);
    h.set_api_records(true);
    anchoring.store(true, std::memory_order_relaxed);
    h.anchor();
    log.mark(true, at, h.mono_ns() - t0);
    return;
  }
  anchoring.store(false, std::memory_order_relaxed);
  h.set_api_records(false);
  h.set_kinds(false);
  log.mark(false, h.cupti_now(), h.mono_ns() - t0);
  const int64_t f0 = h.mono_ns();
  h.flush();  // the window's records to the file now, not mixed with the next one's
  log.note_flush(h.mono_ns() - f0);
}

void RecordingControl::start(const DutyCycle& cycle, SampleLog* log, const std::string& dir, int64_t pid, uint64_t start_cupti_ns,
                             bool records, bool records_on) {
  std::lock_guard<std::mutex> lock(mu_);
  cycle_ = cycle;
  log_ = log;
  dir_ = dir;
  pid_ = pid;
  start_cupti_ns_ = start_cupti_ns;
  records_ = records;
  cycle_on_ = records_on;
  on_ = records && records_on;
}

// A fully traced process has no switch log until its first pause: opened then, with no duty cycle
// (on_ns=0 period_ns=0) and its first window from the start of the trace.
bool RecordingControl::ensure_log(uint64_t now_cupti) {
  if (log_ == nullptr) return false;
  if (log_->is_open()) return true;
  if (!log_->open(dir_, pid_, cycle_)) return false;
  log_->mark(true, std::min(start_cupti_ns_, now_cupti));
  return true;
}

void RecordingControl::duty(bool on, const SwitchHooks& h, std::atomic<bool>& anchoring) {
  std::lock_guard<std::mutex> lock(mu_);
  cycle_on_ = on;
  if (paused_ || on == on_ || log_ == nullptr) return;
  switch_tracing(on, h, *log_, anchoring);
  on_ = on;
}

// What stays while paused: CUPTI's activity API registration (our buffer callbacks, the device
// records, the periodic flush) and the NVTX handlers themselves, which keep only each thread's
// push/pop nesting (no timestamp, no anchor): CUPTI cannot unregister an injection.
bool RecordingControl::pause(const SwitchHooks& h, std::atomic<bool>& anchoring, std::atomic<bool>& nvtx_on) {
  std::lock_guard<std::mutex> lock(mu_);
  if (paused_) return false;
  paused_ = true;
  nvtx_on.store(false, std::memory_order_relaxed);
  const uint64_t at = h.cupti_now();
  if (!ensure_log(at)) {
    // No log (not writable): the analysis could not tell the paused time, so records stay on.
    paused_ = false;
    nvtx_on.store(true, std::memory_order_relaxed);
    return false;
  }
  log_->mark_pause(true, at);
  if (on_) switch_tracing(false, h, *log_, anchoring);
  on_ = false;
  return true;
}

bool RecordingControl::resume(const SwitchHooks& h, std::atomic<bool>& anchoring, std::atomic<bool>& nvtx_on) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!paused_ || log_ == nullptr) return false;
  paused_ = false;
  const bool want = records_ && (cycle_.active() ? cycle_on_ : true);
  if (want) switch_tracing(true, h, *log_, anchoring);
  on_ = want;
  log_->mark_pause(false, h.cupti_now());
  nvtx_on.store(true, std::memory_order_relaxed);
  return true;
}

bool RecordingControl::paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

bool RecordingControl::recording_kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  return on_;
}

void SampleLog::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace jouleprof::inject
