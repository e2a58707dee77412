#include "jouleprof/analysis/trace_section.hpp"

#include <ostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "jouleprof/result/sections.hpp"

namespace jouleprof {

const char* const kTraceSectionSchema = "jouleprof.trace";

namespace {

double num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// `runs show`: the trace's totals, per GPU the measured energy and each method's split, and the
// phases; the full tables are in the JSON (`runs export`) and `trace --from`.
void print_trace(const std::string& text, std::ostream& out) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  out << fmt::format("  {} activities, {} dropped records, {} unique kernels{}\n", j.value("activities", 0),
                     j.value("dropped_records", 0), j.value("unique_kernels", 0),
                     j.value("complete", true) ? "" : " (INCOMPLETE)");
  for (const auto& g : j.value("gpus", nlohmann::json::array())) {
    out << fmt::format("  GPU {}: {} kernels, busy {:.3f} s, measured by {}, idle {:.1f} W\n", g.value("gpu", 0),
                       g.value("kernels", 0), num(g, "busy_s"), g.value("measured_method", std::string("?")),
                       num(g, "idle_power_w"));
    for (const auto& b : g.value("methods", nlohmann::json::array())) {
      out << fmt::format("    {:<10} measured {:.2f} J = idle/static {:.2f} J + attributed {:.2f} J + unattributed {:.2f} J\n",
                         b.value("method", std::string("?")), num(b, "measured_energy_j"), num(b, "idle_static_energy_j"),
                         num(b, "attributed_energy_j"), num(b, "unattributed_energy_j"));
    }
  }
  for (const auto& p : j.value("phases", nlohmann::json::array())) {
    out << fmt::format("  phase {}: {:.3f} s, {:.2f} J ({})\n", p.value("name", std::string("?")), num(p, "duration_s"),
                       num(p, "energy_j"), p.value("method", std::string("?")));
  }
}

const bool kRegistered = register_section_renderer({kTraceSectionSchema, "trace", print_trace});

}  // namespace
}  // namespace jouleprof
