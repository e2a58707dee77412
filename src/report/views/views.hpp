// The section views of the report (section_views.hpp's table points at them).
#pragma once

#include <string>
#include <vector>

#include "jouleprof/report/html_report.hpp"

namespace jouleprof {

void render_bench_view(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs);
void render_trace_view(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs);
void render_footprint_view(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs);
void render_replay_view(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs);

}  // namespace jouleprof
