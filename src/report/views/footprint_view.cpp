// The "footprint" section (carbon and cost, include/jouleprof/measure/footprint.hpp): a table
// per run that carries it, with the source of the carbon intensity and price.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "../html_parts.hpp"
#include "jouleprof/measure/footprint.hpp"
#include "views.hpp"

namespace jouleprof {
namespace {

using html::num;

std::string cell(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return "-";
  const std::string u = std::string(key) + "_uncertainty";
  const double e = j.contains(u) && j[u].is_number() ? j[u].get<double>() : 0;
  return num(j[key].get<double>()) + (e > 0 ? " ± " + num(e, 2) : "");
}

}  // namespace

static void render_footprint_view(const std::vector<ReportRun>& runs, const ReportOptions&, std::string& body, std::vector<ChartSpec>&) {
  for (const ReportRun& r : runs) {
    auto it = r.m->sections.find(kFootprintSection);
    if (it == r.m->sections.end()) continue;
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    if (!j.is_object()) continue;
    body += "<h2>Carbon and cost — " + html_escape(r.label) + "</h2>\n<p>";
    if (j.contains("carbon_intensity_g_per_kwh")) {
      body += fmt::format("Carbon intensity {} gCO2e/kWh ({}). ", num(j.value("carbon_intensity_g_per_kwh", 0.0)),
                          html_escape(j.value("carbon_intensity_source", std::string("?"))));
    }
    if (j.contains("price_per_kwh")) {
      body += fmt::format("Price {} per kWh ({}). ", num(j.value("price_per_kwh", 0.0)), html_escape(j.value("price_source", std::string("?"))));
    }
    body += "Of " + html_escape(j.value("scope", std::string("GPU energy"))) +
            "; ± from the energy's uncertainty (over repeats: the 95% CI).</p>\n";
    body += "<table class=\"data\"><thead><tr><th>window</th><th>energy (kWh)</th><th>gCO2e</th><th>cost</th>"
            "<th>per unit</th></tr></thead><tbody>\n";
    for (const auto& w : j.value("windows", nlohmann::json::array())) {
      std::string per;
      const nlohmann::json pers = w.value("per", nlohmann::json::object());
      for (const auto& [unit, p] : pers.items()) {
        per += html_escape(unit) + ": " + cell(p, "gco2e") + " gCO2e, " + cell(p, "cost") + " ";
      }
      body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                          html_escape(w.value("label", std::string("?"))), num(w.value("energy_kwh", 0.0)), cell(w, "gco2e"),
                          cell(w, "cost"), per);
    }
    for (const auto& s : j.value("repeats", nlohmann::json::array())) {
      body += fmt::format("<tr><td>over {} repeats: {}</td><td>{}</td><td>{}</td><td>{}</td><td></td></tr>\n", s.value("n", 0),
                          html_escape(s.value("statistic", std::string("?"))), num(s.value("energy_kwh", 0.0)), cell(s, "gco2e"),
                          cell(s, "cost"));
    }
    body += "</tbody></table>\n";
  }
}

const SectionView kFootprintView{SectionView::Place::after_summaries, 2, &render_footprint_view};

}  // namespace jouleprof
