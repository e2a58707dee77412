#include "jouleprof/report/section_views.hpp"

#include "views/views.hpp"

namespace jouleprof {

const std::vector<SectionView>& section_views() {
  static const std::vector<SectionView> views = {
      {SectionView::Place::after_runs, &render_bench_view},       // "llm"
      {SectionView::Place::after_summaries, &render_trace_view},  // "trace"
      {SectionView::Place::after_summaries, &render_replay_view},  // "replay"
      {SectionView::Place::after_summaries, &render_footprint_view},  // "footprint": carbon and cost
  };
  return views;
}

}  // namespace jouleprof
