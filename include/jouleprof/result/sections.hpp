// Renderers for the result sections a producer adds to a Measurement (`bench llm`'s "llm" section,
// ...), registered by the producer for its section's "schema" value, so that `runs show` prints
// them without knowing the producers.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "jouleprof/result/result.hpp"

namespace jouleprof {

struct SectionRenderer {
  std::string schema;  ///< the section's "schema" value, e.g. "jouleprof.bench-llm/1"
  std::string title;   ///< heading printed above it, e.g. "bench llm"
  /// Prints the section for people; gets the section's JSON text.
  void (*print)(const std::string& section_json, std::ostream& out) = nullptr;
};

/// Adds a renderer (a later one for the same schema replaces it). Returns true, so a producer can
/// register from a namespace-scope initialiser.
bool register_section_renderer(SectionRenderer r);

/// The renderer of a schema, or null.
const SectionRenderer* find_section_renderer(std::string_view schema);

/// Prints every section of `m` whose schema has a renderer ("\n<title>:\n" then its text), in
/// section-key order. Sections without a schema or renderer are skipped (they are in the JSON).
void print_sections(const Measurement& m, std::ostream& out);

}  // namespace jouleprof
