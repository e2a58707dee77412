#include "jouleprof/result/sections.hpp"

#include <map>

#include <nlohmann/json.hpp>

namespace jouleprof {
namespace {

std::map<std::string, SectionRenderer, std::less<>>& registry() {
  static std::map<std::string, SectionRenderer, std::less<>> r;  // built on first use: any init order
  return r;
}

}  // namespace

bool register_section_renderer(SectionRenderer r) {
  std::string key = r.schema;
  registry()[key] = std::move(r);
  return true;
}

const SectionRenderer* find_section_renderer(std::string_view schema) {
  auto it = registry().find(schema);
  return it != registry().end() ? &it->second : nullptr;
}

void print_sections(const Measurement& m, std::ostream& out) {
  for (const auto& [key, text] : m.sections) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) continue;
    const SectionRenderer* r = find_section_renderer(j["schema"].get<std::string>());
    if (r == nullptr || r->print == nullptr) continue;
    out << "\n" << r->title << ":\n";
    r->print(text, out);
  }
}

}  // namespace jouleprof
