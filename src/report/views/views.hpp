// The section views of the report, registered by schema in src/report/section_views.cpp.
#pragma once

#include "jouleprof/report/section_views.hpp"

namespace jouleprof {

extern const SectionView kBenchView;      // "llm" (bench_view.cpp)
extern const SectionView kTraceView;      // "trace" (trace_view.cpp)
extern const SectionView kReplayView;     // "replay" (replay_view.cpp)
extern const SectionView kFootprintView;  // "footprint": carbon and cost (footprint_view.cpp)

}  // namespace jouleprof
