// The phase-marker protocol: a workload writes one line per event to the FIFO named by the
// environment variable JOULEPROF_MARKERS (documented in docs/markers.md):
//   begin NAME [t=UNIX_SECONDS]     open a phase window (nested/overlapping allowed)
//   end NAME [t=UNIX_SECONDS]       close the most recent open window of that name
//   count KEY VALUE [NAME]          attach a count (e.g. tokens) to window NAME (default: the run)
// Without t=, the time is when jouleprof reads the line (microseconds later).
#pragma once

#include <optional>
#include <string>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

struct Marker {
  enum class Kind { begin, end, count } kind = Kind::begin;
  std::string name;   ///< window name (begin/end), or the target window of a count
  std::string key;    ///< count key
  double value = 0;   ///< count value
  std::optional<double> unix_s;  ///< explicit wall-clock time
};

/// Parses one line (without the newline). Blank lines and '#' comments give nullopt.
Result<std::optional<Marker>> parse_marker_line(const std::string& line);

inline constexpr const char* kMarkerEnv = "JOULEPROF_MARKERS";

}  // namespace jouleprof
