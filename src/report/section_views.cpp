#include "jouleprof/report/section_views.hpp"

#include "views/views.hpp"

namespace jouleprof {

const std::vector<SectionView>& section_views() {
  static const std::vector<SectionView> views = {
      {"llm", SectionView::Place::after_runs, &render_bench_view},
      {"trace", SectionView::Place::after_summaries, &render_trace_view},
      {"replay", SectionView::Place::after_summaries, &render_replay_view},
  };
  return views;
}

}  // namespace jouleprof
