// The report's views of producers' result sections (`bench llm`'s "llm", `trace`'s "trace",
// `replay`'s "replay"): one entry per view in one table (src/report/section_views.cpp), so that the
// report's generic code names none of them; each view finds its own section in the runs. A new
// producer's view: a render function in src/report/views/ and one entry in the table.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/report/html_report.hpp"

namespace jouleprof {

struct SectionView {
  /// Where the view goes: after the runs table (sweeps that compare configurations), or after the
  /// power, comparison and repeat summaries (per-run breakdowns).
  enum class Place { after_runs, after_summaries } place;
  /// Appends the view's HTML for the runs that carry the section (nothing if none does) and the
  /// specifications of its charts.
  void (*render)(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs);
};

/// The views, in the order they render within their place.
const std::vector<SectionView>& section_views();

}  // namespace jouleprof
