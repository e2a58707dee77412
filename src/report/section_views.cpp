#include "jouleprof/report/section_views.hpp"

#include <algorithm>

#include "jouleprof/analysis/trace_section.hpp"
#include "jouleprof/measure/footprint.hpp"
#include "jouleprof/replay/replay.hpp"
#include "jouleprof/workloads/bench_llm.hpp"
#include "views/views.hpp"

namespace jouleprof {
namespace {

// Each view under the schema its producer registers the section's `runs show` renderer with.
void register_views() {
  register_section_view(llm::kBenchSchema, &kBenchView);     // "llm"
  register_section_view(kTraceSectionSchema, &kTraceView);   // "trace"
  register_section_view(kReplaySchema, &kReplayView);        // "replay"
  register_section_view(kFootprintSchema, &kFootprintView);  // "footprint": carbon and cost
}

}  // namespace

std::vector<const SectionView*> section_views() {
  static const bool registered = (register_views(), true);
  (void)registered;
  std::vector<const SectionView*> views;
  for (const SectionType* t : section_types()) {
    if (t->view != nullptr) views.push_back(t->view);
  }
  std::stable_sort(views.begin(), views.end(),
                   [](const SectionView* a, const SectionView* b) { return std::tie(a->place, a->order) < std::tie(b->place, b->order); });
  return views;
}

}  // namespace jouleprof
