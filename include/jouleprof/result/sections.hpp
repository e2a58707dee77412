// The registry of result section types: the sections a producer adds to a Measurement (`bench
// llm`'s "llm", `trace`'s "trace" ...), each keyed by its "schema" value. A section type's entry
// holds its `runs show` renderer (registered by the producer) and its view in the HTML report
// (registered by the report layer for the same schema), so that `runs show` and `report` print
// them without knowing the producers.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/result/result.hpp"

namespace jouleprof {

/// A section's view in the HTML report, defined by the report layer
/// (jouleprof/report/section_views.hpp). The result layer only keeps the slot: no include points up.
struct SectionView;

struct SectionRenderer {
  std::string schema;  ///< the section's "schema" value, e.g. "jouleprof.bench-llm/1"
  std::string title;   ///< heading printed above it, e.g. "bench llm"
  /// Prints the section for people; gets the section's JSON text.
  void (*print)(const std::string& section_json, std::ostream& out) = nullptr;
};

/// One section type: its `runs show` renderer and its report view, under one schema.
struct SectionType {
  SectionRenderer renderer;           ///< `print` null until the producer registers one
  const SectionView* view = nullptr;  ///< null: the report has no view of it
};

/// Adds the `runs show` renderer of `r.schema` (a later one for the same schema replaces it; the
/// type's view stays). Returns true, so a producer can register from a namespace-scope initialiser.
bool register_section_renderer(SectionRenderer r);

/// Adds the report view of `schema` (`view` outlives the registry: a static object; the type's
/// renderer stays). Returns true.
bool register_section_view(std::string_view schema, const SectionView* view);

/// The section type of a schema, or null.
const SectionType* find_section_type(std::string_view schema);

/// Every registered section type, in schema order.
std::vector<const SectionType*> section_types();

/// Prints every section of `m` whose schema has a renderer ("\n<title>:\n" then its text), in
/// section-key order. Sections without a schema or renderer are skipped (they are in the JSON).
void print_sections(const Measurement& m, std::ostream& out);

}  // namespace jouleprof
