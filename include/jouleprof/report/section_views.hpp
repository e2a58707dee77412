// The report's views of producers' result sections (`bench llm`'s "llm", `trace`'s "trace",
// `replay`'s "replay", the "footprint"): each registered under its section's schema in the one
// registry of section types (jouleprof/result/sections.hpp), next to the section's `runs show`
// renderer, so that the report's generic code names none of them; each view finds its own section
// in the runs. A new section type's view: a SectionView in src/report/views/ and one
// register_section_view line in src/report/section_views.cpp.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/report/html_report.hpp"
#include "jouleprof/result/sections.hpp"

namespace jouleprof {

struct SectionView {
  /// Where the view goes: after the runs table (sweeps that compare configurations), or after the
  /// power, comparison and repeat summaries (per-run breakdowns).
  enum class Place { after_runs, after_summaries } place;
  /// Order within its place, lower first.
  int order = 0;
  /// Appends the view's HTML for the runs that carry the section (nothing if none does) and the
  /// specifications of its charts.
  void (*render)(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs) = nullptr;
};

/// The views of the registered section types, by place, then order.
std::vector<const SectionView*> section_views();

}  // namespace jouleprof
