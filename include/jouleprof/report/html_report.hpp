// The self-contained HTML report (docs/report.md): the charting library, the chart
// specifications and the tables in one file that opens offline.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/report/charts.hpp"

namespace jouleprof {

struct ReportOptions {
  std::string title;    ///< default: "jouleprof report"
  ChartOptions charts;
};

/// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string html_escape(std::string_view s);
/// JSON text made safe inside <script>: '<', '>', '&' and U+2028/9 as \u escapes.
std::string script_safe_json(std::string_view json);

Result<std::string> render_html_report(const std::vector<ReportRun>& runs, const ReportOptions& o = {});

}  // namespace jouleprof
