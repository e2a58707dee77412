#include "jouleprof/result/sections.hpp"

#include <map>

#include <nlohmann/json.hpp>

namespace jouleprof {
namespace {

std::map<std::string, SectionType, std::less<>>& registry() {
  static std::map<std::string, SectionType, std::less<>> r;  // built on first use: any init order
  return r;
}

// The entry of `schema`, made on first use by either registration.
SectionType& entry(std::string_view schema) {
  auto it = registry().find(schema);
  if (it == registry().end()) {
    it = registry().emplace(std::string(schema), SectionType{}).first;
    it->second.renderer.schema = schema;
  }
  return it->second;
}

}  // namespace

bool register_section_renderer(SectionRenderer r) {
  SectionType& t = entry(r.schema);
  t.renderer = std::move(r);
  return true;
}

bool register_section_view(std::string_view schema, const SectionView* view) {
  entry(schema).view = view;
  return true;
}

const SectionType* find_section_type(std::string_view schema) {
  auto it = registry().find(schema);
  return it != registry().end() ? &it->second : nullptr;
}

std::vector<const SectionType*> section_types() {
  std::vector<const SectionType*> out;
  for (const auto& [schema, t] : registry()) out.push_back(&t);
  return out;
}

void print_sections(const Measurement& m, std::ostream& out) {
  for (const auto& [key, text] : m.sections) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) continue;
    const SectionType* t = find_section_type(j["schema"].get<std::string>());
    if (t == nullptr || t->renderer.print == nullptr) continue;
    out << "\n" << t->renderer.title << ":\n";
    t->renderer.print(text, out);
  }
}

}  // namespace jouleprof
