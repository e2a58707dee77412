#include "jouleprof/core/progress.hpp"

#include <unistd.h>

#include <cmath>

namespace jouleprof {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  } else if (s < 3600) {
    const long t = std::lround(s);
    std::snprintf(buf, sizeof buf, "%ld min %02ld s", t / 60, t % 60);
  } else {
    const long t = std::lround(s / 60);
    std::snprintf(buf, sizeof buf, "%ld h %02ld min", t / 60, t % 60);
  }
  return buf;
}

std::string format_progress(const std::string& label, int done, int total, double elapsed_s, const std::string& last) {
  std::string s = label + " " + std::to_string(done) + (total > 0 ? "/" + std::to_string(total) : "");
  s += " · " + format_duration(elapsed_s) + " elapsed";
  if (total > 0 && done > 0 && done < total) {
    s += " · ETA " + format_duration(elapsed_s / done * (total - done));
  }
  if (!last.empty()) s += " · last: " + last;
  return s;
}

bool Progress::wanted(bool asked) { return asked || isatty(STDERR_FILENO) == 1; }

double Progress::steady_clock() { return steady_seconds(); }

Progress::Sink Progress::line_sink() {
  return [](const std::string& line, bool) {
    std::fprintf(stderr, "jouleprof: %s\n", line.c_str());
    std::fflush(stderr);
  };
}

Progress::Progress(std::string label, int total, bool enabled)
    : Progress(std::move(label), total, enabled, steady_seconds, nullptr) {
  const bool tty = isatty(STDERR_FILENO) == 1;
  sink_ = [this, tty](const std::string& line, bool final) {
    if (tty) {
      // Rewrite one line in place; the final update ends it.
      std::fprintf(stderr, "\r\033[Kjouleprof: %s%s", line.c_str(), final ? "\n" : "");
      open_line_ = !final;
    } else {
      std::fprintf(stderr, "jouleprof: %s\n", line.c_str());
    }
    std::fflush(stderr);
  };
}

Progress::Progress(std::string label, int total, bool enabled, Clock clock, Sink sink)
    : label_(std::move(label)), total_(total), enabled_(enabled), clock_(std::move(clock)), sink_(std::move(sink)) {
  t0_ = clock_();
}

Progress::~Progress() { done(); }

void Progress::emit(const std::string& line, bool final) {
  if (enabled_ && sink_) sink_(line, final);
}

void Progress::step(const std::string& last) {
  ++done_;
  last_ = last;
  emit(format_progress(label_, done_, total_, clock_() - t0_, last_), false);
}

void Progress::note(const std::string& text) {
  std::string line = format_progress(label_, done_, total_, clock_() - t0_, last_);
  if (!text.empty()) line += " · " + text;
  emit(line, false);
}

void Progress::done() {
  if (finished_) return;
  finished_ = true;
  if (open_line_) emit(format_progress(label_, done_, total_, clock_() - t0_, last_), true);
}

}  // namespace jouleprof
