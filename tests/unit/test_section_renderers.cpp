// Result sections printed through the renderer their producer registered for their schema, and
// the registry of section types: a report view registered for the same schema joins that entry.
#include <gtest/gtest.h>

#include <sstream>

#include "jouleprof/result/sections.hpp"

using namespace jouleprof;

TEST(SectionRenderers, PrintsRegisteredSchemasAndSkipsTheRest) {
  register_section_renderer({"test.section/1", "test section", [](const std::string& text, std::ostream& out) {
                               out << "rendered " << text.size() << " bytes\n";
                             }});
  ASSERT_NE(find_section_type("test.section/1"), nullptr);
  EXPECT_EQ(find_section_type("test.section/2"), nullptr);
  Measurement m;
  m.sections["a"] = R"({"schema": "test.section/1", "x": 1})";
  m.sections["b"] = R"({"schema": "unknown/1"})";  // no renderer: only in the JSON
  m.sections["c"] = R"({"no": "schema"})";
  m.sections["d"] = "not json";
  std::ostringstream out;
  print_sections(m, out);
  EXPECT_EQ(out.str(), "\ntest section:\nrendered 36 bytes\n");
}

TEST(SectionRenderers, ARendererAndAViewOfOneSchemaShareOneEntry) {
  // The result layer keeps the report's view as an opaque slot: any address stands for one here.
  static const int view_stand_in = 0;
  const auto* view = reinterpret_cast<const SectionView*>(&view_stand_in);
  // View first, renderer after (static initialisation may run either way): neither replaces the other.
  register_section_view("test.both/1", view);
  const SectionType* t = find_section_type("test.both/1");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->view, view);
  EXPECT_EQ(t->renderer.print, nullptr);
  EXPECT_EQ(t->renderer.schema, "test.both/1");
  register_section_renderer({"test.both/1", "both", [](const std::string&, std::ostream& out) { out << "both\n"; }});
  EXPECT_EQ(find_section_type("test.both/1"), t);
  EXPECT_EQ(t->view, view);
  EXPECT_EQ(t->renderer.title, "both");
  Measurement m;
  m.sections["x"] = R"({"schema": "test.both/1"})";
  m.sections["y"] = R"({"schema": "test.view-only/1"})";
  register_section_view("test.view-only/1", view);  // a view without a renderer: not printed by `runs show`
  std::ostringstream out;
  print_sections(m, out);
  EXPECT_EQ(out.str(), "\nboth:\nboth\n");
  std::size_t seen = 0;
  std::string last;
  for (const SectionType* s : section_types()) {
    EXPECT_LT(last, s->renderer.schema);  // schema order, each once
    last = s->renderer.schema;
    seen += s->renderer.schema == "test.both/1" || s->renderer.schema == "test.view-only/1" ? 1 : 0;
  }
  EXPECT_EQ(seen, 2u);
}
