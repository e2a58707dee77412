// Progress of long work (sweeps, repeats, cool-down): "configuration 3/6 · 12 s elapsed ·
// ETA 24 s · last: 0.512 J/token". Written to stderr only when stderr is a terminal or the user
// asked (--progress); quiet otherwise, so logs and pipes stay clean.
//
//   Progress p("configuration", configs.size(), Progress::wanted(flags.progress));
//   for (...) { run(); p.step("0.512 J/token"); }
//   p.done();
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

namespace jouleprof {

/// One progress line from its parts (pure; tested). `total` 0 means unknown: no ETA.
/// ETA = elapsed / done × (total − done), shown once at least one item is done.
std::string format_progress(const std::string& label, int done, int total, double elapsed_s, const std::string& last);
/// Seconds as people read them: "42 s", "3 min 05 s", "1 h 02 min".
std::string format_duration(double seconds);

class Progress {
 public:
  using Clock = std::function<double()>;            ///< seconds, monotonic
  using Sink = std::function<void(const std::string& line, bool final)>;

  /// Whether to show progress: asked for (--progress) or stderr is a terminal.
  static bool wanted(bool asked);
  /// Seconds on the steady clock.
  static double steady_clock();
  /// One "jouleprof: LINE" per update on stderr (for work that prints other lines between steps).
  static Sink line_sink();

  /// Writes to stderr: on a terminal one line rewritten in place, otherwise one line per update.
  Progress(std::string label, int total, bool enabled);
  /// For tests: a given clock and sink.
  Progress(std::string label, int total, bool enabled, Clock clock, Sink sink);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// One more item done; `last` is its figure ("0.512 J/token"), shown until the next step.
  void step(const std::string& last = "");
  /// A free-form status between steps (cool-down: "GPU 43 °C, varies 2.1 °C over 5 s").
  void note(const std::string& text);
  /// Ends the display (a terminal line is finished with a newline). Called by the destructor.
  void done();

  int completed() const { return done_; }
  bool enabled() const { return enabled_; }

 private:
  void emit(const std::string& line, bool final);
  std::string label_;
  int total_ = 0, done_ = 0;
  bool enabled_ = false, finished_ = false, open_line_ = false;
  std::string last_;
  Clock clock_;
  Sink sink_;
  double t0_ = 0;
};

}  // namespace jouleprof
