// The charting library (Apache ECharts, from the npm registry via report/web/package.json) and
// the external renderers used for static figures.
//
// The library's dist/echarts.min.js is embedded into the binary when report/web/node_modules
// exists at configure time (scripts/install-deps.sh runs npm ci there). Otherwise it is looked
// up at run time: $JOULEPROF_WEB_DIR (the folder holding echarts.min.js or node_modules/),
// <prefix>/share/jouleprof/web beside the binary, then the source tree's report/web.
#pragma once

#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/report/charts.hpp"

namespace jouleprof {

/// The library's JavaScript (about 1.1 MB), or Errc::unavailable naming the places searched.
Result<std::string> charting_library_js();
/// "Apache ECharts 6.1.0" (from the embedded or found library).
std::string charting_library_name();

/// Renders a chart specification to SVG with the same library, server side, in Node.js
/// ($JOULEPROF_NODE or `node` on PATH).
Result<std::string> render_svg(const ChartSpec& spec, int width, int height);
/// SVG file to PNG (rsvg-convert, else headless Chromium).
Result<void> svg_to_png(const std::string& svg_path, const std::string& png_path, int width, int height);

}  // namespace jouleprof
