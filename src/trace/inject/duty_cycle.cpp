#include "duty_cycle.hpp"

#include <fcntl.h>
#include <unistd.h>

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

void SampleLog::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace jouleprof::inject
