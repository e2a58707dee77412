// The split method: each power sample interval's energy above idle is split across the items
// busy in the window that sample reflects (shifted back by the sensor's lag, widened by its
// averaging window), in proportion to their busy time there. An interval with no item busy in
// its window leaves its excess unattributed.
#include <algorithm>

#include "jouleprof/analysis/attribution.hpp"

namespace jouleprof {
namespace {

class SplitMethod final : public AttributionMethod {
 public:
  std::string name() const override { return "split"; }

  Attribution attribute(const AttributionInput& in) const override {
    Attribution a;
    a.method = name();
    a.measured_j = in.measured_j;
    a.idle_j = in.idle_w * (in.t1_s - in.t0_s);
    a.item_j.assign(in.items, 0.0);
    a.item_uncertainty_j.assign(in.items, 0.0);
    const auto iv = detail::sample_intervals(in.power, in.t0_s, in.t1_s);
    const std::size_t n = iv.size();
    std::vector<double> ws(n), we(n), excess(n), total(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const double e = detail::energy_between(in.power, iv[i].first, iv[i].second);
      a.timeline_j += e;
      excess[i] = e - in.idle_w * (iv[i].second - iv[i].first);
      ws[i] = iv[i].first - in.sensor.lag_s - in.sensor.window_s;
      we[i] = iv[i].second - in.sensor.lag_s;
    }
    // Each busy interval meets a contiguous run of windows (both edges increase with i).
    auto for_windows = [&](const BusyInterval& b, auto&& f) {
      std::size_t i = static_cast<std::size_t>(std::upper_bound(we.begin(), we.end(), b.t0_s) - we.begin());
      for (; i < n && ws[i] < b.t1_s; ++i) {
        const double o = std::min(b.t1_s, we[i]) - std::max(b.t0_s, ws[i]);
        if (o > 0) f(i, o);
      }
    };
    for (const BusyInterval& b : in.busy) {
      if (b.item < in.items) for_windows(b, [&](std::size_t i, double o) { total[i] += o; });
    }
    for (const BusyInterval& b : in.busy) {
      if (b.item >= in.items) continue;
      for_windows(b, [&](std::size_t i, double o) { a.item_j[b.item] += excess[i] * o / total[i]; });
    }
    std::size_t idle_windows = 0;
    for (std::size_t i = 0; i < n; ++i) idle_windows += total[i] <= 0 ? 1 : 0;
    if (idle_windows > 0) {
      a.notes.push_back(std::to_string(idle_windows) + " of " + std::to_string(n) +
                        " sample intervals had no activity in their window: their energy above idle is unattributed");
    }
    detail::close_books(a);
    return a;
  }
};

}  // namespace

std::unique_ptr<AttributionMethod> make_split_method() { return std::make_unique<SplitMethod>(); }

}  // namespace jouleprof
