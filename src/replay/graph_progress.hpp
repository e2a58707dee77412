// The exact replay's progress file and its prediction (graph_progress.cpp): what a process that
// replays a graph writes as it goes, so that a parent can restart it past a faulting row
// (docs/replay.md, "Faults and limits"), and the Σ rows prediction the replay and the restart share.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jouleprof/replay/graph_replay.hpp"

namespace jouleprof::detail {

/// A kernel's name cut to 90 characters (warnings, text tables).
std::string short_name(const std::string& n);

/// A row as the result document writes it (graph_replay_json's rows), and back.
nlohmann::json exact_row_json(const ExactRow& x);
ExactRow exact_row_from_json(const nlohmann::json& j);
nlohmann::json step_json(const StepFigures& s);

/// One JSON line per event, flushed at once (before the launch it announces: a fault may kill the
/// process). A log without a path writes nothing.
class ProgressLog {
 public:
  ProgressLog() = default;
  ~ProgressLog();
  ProgressLog(const ProgressLog&) = delete;
  ProgressLog& operator=(const ProgressLog&) = delete;
  /// Opens `path` for appending ("" : no log); an error text when it cannot be opened.
  std::string open(const std::string& path);
  void event(const std::string& name, nlohmann::json body);
  void listing(const GraphReplay& r, const std::vector<ExactRow>& rows);
  void start(const std::string& id, const char* phase) { event("start", {{"id", id}, {"phase", phase}}); }
  void row(const ExactRow& x) { event("row", exact_row_json(x)); }
  void fault(const ExactRow& x, const std::string& why) { event("fault", {{"id", x.group.id}, {"name", x.group.name}, {"reason", why}}); }
  void step(const StepFigures& s) { event("step", step_json(s)); }

 private:
  std::FILE* f_ = nullptr;
};

/// Timed rows get the measured rows' time-weighted mean power; R.rows = `rows` (in order), and
/// Σ count × per-call figures, the shares, the failed/faulted/not measured share and warnings.
void assemble_prediction(std::vector<ExactRow> rows, GraphReplay& R);

}  // namespace jouleprof::detail
