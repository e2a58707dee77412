// Result sections printed through the renderer their producer registered for their schema.
#include <gtest/gtest.h>

#include <sstream>

#include "jouleprof/result/sections.hpp"

using namespace jouleprof;

TEST(SectionRenderers, PrintsRegisteredSchemasAndSkipsTheRest) {
  register_section_renderer({"test.section/1", "test section", [](const std::string& text, std::ostream& out) {
                               out << "rendered " << text.size() << " bytes\n";
                             }});
  ASSERT_NE(find_section_renderer("test.section/1"), nullptr);
  EXPECT_EQ(find_section_renderer("test.section/2"), nullptr);
  Measurement m;
  m.sections["a"] = R"({"schema": "test.section/1", "x": 1})";
  m.sections["b"] = R"({"schema": "unknown/1"})";  // no renderer: only in the JSON
  m.sections["c"] = R"({"no": "schema"})";
  m.sections["d"] = "not json";
  std::ostringstream out;
  print_sections(m, out);
  EXPECT_EQ(out.str(), "\ntest section:\nrendered 36 bytes\n");
}
