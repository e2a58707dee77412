// The interval method: each item's long busy stretches integrated directly (shifted by the
// sensor's lag), minus idle. Stretches shorter than min_interval_s are left unattributed: the
// sensor does not resolve them.
#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "jouleprof/analysis/attribution.hpp"

namespace jouleprof {
namespace {

class IntervalMethod final : public AttributionMethod {
 public:
  std::string name() const override { return "interval"; }

  Granularity granularity() const override { return Granularity::kernel_class; }
  Attribution attribute_with(const AttributionInput& in, const PriorAttributions&) const override {
    Attribution a;
    a.method = name();
    a.measured_j = in.measured_j;
    a.timeline_j = detail::energy_between(in.power, in.t0_s, in.t1_s);
    a.idle_j = in.idle_w * (in.t1_s - in.t0_s);
    a.item_j.assign(in.items, 0.0);
    a.item_uncertainty_j.assign(in.items, 0.0);
    // Busy stretches per item, short gaps joined.
    std::vector<std::vector<std::pair<double, double>>> per_item(in.items);
    for (const BusyInterval& b : in.busy) {
      if (b.item < in.items && b.t1_s > b.t0_s) per_item[b.item].emplace_back(std::max(b.t0_s, in.t0_s), std::min(b.t1_s, in.t1_s));
    }
    struct Stretch {
      double t0, t1;
      std::size_t item;
      double density;  ///< the item's busy time in the stretch / its length
    };
    std::vector<Stretch> stretches;
    std::size_t short_ones = 0;
    for (std::size_t i = 0; i < in.items; ++i) {
      auto& v = per_item[i];
      std::sort(v.begin(), v.end());
      std::vector<Stretch> merged;  // busy time accumulated in `density` until the stretch is closed
      double covered = 0;           // end of the busy time already counted (concurrent intervals once)
      for (const auto& iv : v) {
        if (iv.second <= iv.first) continue;
        if (!merged.empty() && iv.first <= merged.back().t1 + in.merge_gap_s) {
          merged.back().t1 = std::max(merged.back().t1, iv.second);
        } else {
          merged.push_back({iv.first, iv.second, i, 0.0});
          covered = iv.first;
        }
        merged.back().density += std::max(0.0, iv.second - std::max(iv.first, covered));
        covered = std::max(covered, iv.second);
      }
      for (Stretch& m : merged) {
        if (m.t1 - m.t0 >= in.min_interval_s) {
          m.density /= m.t1 - m.t0;
          stretches.push_back(m);
        } else {
          ++short_ones;
        }
      }
    }
    // Elementary pieces between all stretch edges; a piece covered by several stretches is shared
    // by their busy densities: a stretch of 1 µs memsets 160 µs apart, joined across the GEMMs
    // between them, takes 0.6% of those GEMMs' energy, not half (H100, 2026-11-26).
    std::vector<double> edges;
    for (const Stretch& s : stretches) {
      edges.push_back(s.t0);
      edges.push_back(s.t1);
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    std::sort(stretches.begin(), stretches.end(), [](const Stretch& x, const Stretch& y) { return x.t0 < y.t0; });
    std::vector<std::size_t> active;
    std::size_t next = 0;
    for (std::size_t e = 0; e + 1 < edges.size(); ++e) {
      const double u = edges[e], v = edges[e + 1];
      while (next < stretches.size() && stretches[next].t0 <= u) active.push_back(next++);
      active.erase(std::remove_if(active.begin(), active.end(), [&](std::size_t s) { return stretches[s].t1 <= u; }), active.end());
      if (active.empty()) continue;
      const double excess = detail::energy_between(in.power, u + in.sensor.lag_s, v + in.sensor.lag_s) - in.idle_w * (v - u);
      double density = 0;
      for (std::size_t s : active) density += stretches[s].density;
      for (std::size_t s : active) {
        const double share = density > 0 ? stretches[s].density / density : 1.0 / static_cast<double>(active.size());
        a.item_j[stretches[s].item] += excess * share;
      }
    }
    if (short_ones > 0) {
      a.notes.push_back(fmt::format("{} busy stretches shorter than {:g} ms left unattributed (below what the sensor resolves; use the split or regression method)",
                                    short_ones, in.min_interval_s * 1e3));
    }
    detail::close_books(a);
    return a;
  }
};

}  // namespace

std::unique_ptr<AttributionMethod> make_interval_method() { return std::make_unique<IntervalMethod>(); }

}  // namespace jouleprof
