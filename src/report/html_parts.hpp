// Small HTML pieces shared by the report and its section views (src/report/views/).
#pragma once

#include <optional>
#include <string>

#include "jouleprof/report/charts.hpp"

namespace jouleprof::html {

std::string num(double v, int prec = 4);
std::string opt_num(const std::optional<double>& v, const char* unit = "", int prec = 4);
/// The placeholder the page's script fills with chart c (nothing for an empty chart).
void chart_div(std::string& h, const ChartSpec& c);

}  // namespace jouleprof::html
