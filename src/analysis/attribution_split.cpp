// The split method: each power sample interval's energy above idle is split across the items
// busy in the window that sample reflects (shifted back by the sensor's lag, widened by its
// averaging window), in proportion to their busy time there weighted by their class's active
// power. The class powers are not known in advance: starting from the regression's, they are
// iterated to the fixed point of "split, then each class's energy / busy time" (classes the
// regression could not tell apart iterated as one, those it could not fit held), so a window
// half GEMM (580 W) and half copy (230 W) gives the GEMM 72% of its energy, not 50%. The time in
// a window when nothing runs weighs the GPU's power above idle while awake between kernels
// (measured in the windows with no activity inside the program's activity), and that share, like
// those windows, is idle/static energy. An interval with no item busy in its window before or
// after the activity leaves its excess unattributed; every interval's excess is handed out
// whole, so the books stay balanced.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "jouleprof/analysis/attribution.hpp"

namespace jouleprof {
namespace {

class SplitMethod final : public AttributionMethod {
  static constexpr int kMaxIterations = 50;
  static constexpr std::size_t kMinAwakeWindows = 10;  ///< gap windows needed to measure the awake power

  // The regression's class powers (the result it is given, else its own fit) as the split's
  // starting weights in W above idle; false where it has none (the weights stay 1).
  static bool start_weights(const AttributionInput& in, const PriorAttributions& prior, std::size_t groups, std::vector<double>& weight,
                            std::vector<bool>& shared, std::vector<bool>& fixed) {
    if (in.groups < 1) return false;
    // The regression's result as run on this input (uses()), not fitted again.
    const auto found = prior.find("regression");
    Attribution fitted;
    if (found == prior.end()) fitted = make_regression_method()->attribute(in);
    const Attribution& r = found != prior.end() ? found->second : fitted;
    const double static_w = r.intercept_w ? std::max(0.0, *r.intercept_w - in.idle_w) : 0;
    double top = 0;
    for (const GroupFit& g : r.groups) top = std::max(top, std::isfinite(g.active_power_w) ? g.active_power_w : 0.0);
    if (r.groups.size() != groups || top <= 0) return false;
    for (std::size_t g = 0; g < groups; ++g) {
      const double p = r.groups[g].active_power_w;
      weight[g] = (std::isfinite(p) ? std::max(p, 1e-3 * top) : top) + static_w;  // above idle, not above the intercept
      shared[g] = r.groups[g].shared;
      fixed[g] = !r.groups[g].fitted && r.groups[g].busy_s > 0;
    }
    return true;
  }

 public:
  std::string name() const override { return "split"; }

  Granularity granularity() const override { return Granularity::activity; }
  std::vector<std::string> uses() const override { return {"regression"}; }
  Attribution attribute_with(const AttributionInput& in, const PriorAttributions& prior) const override {
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
    // Class weights (W above idle), iterated to their fixed point; items of no class weigh 1.
    const std::size_t groups = std::max<std::size_t>(in.groups, 1);
    auto group_of = [&](const BusyInterval& b) { return b.group < groups ? b.group : 0; };
    std::vector<double> weight(groups, 1.0), busy_s(groups, 0.0);
    std::vector<bool> shared(groups, false), fixed(groups, false);
    // The GPU awake but idle between kernels draws more than its idle baseline (eager HF decode on
    // the H100: ~47 W above idle in the gaps, kernels adding little). That power, measured in the
    // sample windows with no activity inside the program's GPU activity, weighs each window's
    // gaps, and their share is idle/static energy, not the kernels' (given to the kernels it made
    // them 630 W above idle per busy second).
    double awake_w = 0, awake_windows_j = 0;  // the power, and the energy above idle of those windows
    std::size_t awake_windows = 0;
    std::vector<double> gap(n, 0.0), kernel_total(n, 0.0);
    std::vector<bool> awake_gap(n, false);  // no activity in the window, inside the activity's span
    {
      const detail::ClassBusy all = detail::all_busy(in);
      if (!all.spans.empty()) {
        const double first = all.spans.front().first, last = all.spans.back().second;
        double e = 0, t = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const double busy = all.within(ws[i], we[i]);
          gap[i] = std::max(0.0, (we[i] - ws[i]) - busy);
          if (busy <= 0 && ws[i] >= first && we[i] <= last) {
            awake_gap[i] = true;
            e += excess[i];
            t += iv[i].second - iv[i].first;
            ++awake_windows;
          }
        }
        if (awake_windows >= kMinAwakeWindows && t > 0) awake_w = std::max(0.0, e / t);
        awake_windows_j = e;
      }
    }
    // Start from the regression's class powers: where every window mixes the classes alike (short
    // bursts), any weights are a fixed point, and only the regression, which sees how the busy
    // fractions co-vary with the power, knows better than "equal".
    const bool weights_in_watts = start_weights(in, prior, groups, weight, shared, fixed);  // else all 1: no scale for the gaps
    if (!weights_in_watts) awake_w = 0;
    for (const BusyInterval& b : in.busy) {
      if (b.item < in.items) busy_s[group_of(b)] += b.t1_s - b.t0_s;
    }
    std::vector<double> group_j(groups);
    double gaps_j = 0;
    for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
      std::fill(kernel_total.begin(), kernel_total.end(), 0.0);
      for (const BusyInterval& b : in.busy) {
        if (b.item < in.items) for_windows(b, [&](std::size_t i, double o) { kernel_total[i] += o * weight[group_of(b)]; });
      }
      // Windows with activity share their excess with their gaps; those with none inside the
      // activity's span are all gap; those before or after it stay unattributed.
      gaps_j = awake_w > 0 ? awake_windows_j : 0;
      for (std::size_t i = 0; i < n; ++i) {
        total[i] = kernel_total[i] > 0 ? kernel_total[i] + gap[i] * awake_w : 0;
        if (total[i] > 0) gaps_j += excess[i] * gap[i] * awake_w / total[i];
      }
      std::fill(a.item_j.begin(), a.item_j.end(), 0.0);
      std::fill(group_j.begin(), group_j.end(), 0.0);
      for (const BusyInterval& b : in.busy) {
        if (b.item >= in.items) continue;
        const double w = weight[group_of(b)];
        for_windows(b, [&](std::size_t i, double o) {
          const double e = excess[i] * o * w / total[i];
          a.item_j[b.item] += e;
          group_j[group_of(b)] += e;
        });
      }
      if (groups == 1 && awake_w <= 0) break;
      // New weights: each class's mean power above idle while busy (kept positive: a class whose
      // share came out ≤ 0 keeps a small weight so that it can still be given energy).
      double top = 0, change = 0;
      std::vector<double> next(groups, 0.0);
      double shared_j = 0, shared_busy = 0;
      for (std::size_t g = 0; g < groups; ++g) {
        next[g] = busy_s[g] > 0 ? group_j[g] / busy_s[g] : weight[g];
        if (shared[g]) {
          shared_j += group_j[g];
          shared_busy += busy_s[g];
        }
      }
      // Classes the regression could not tell apart keep one weight, and those it could not fit
      // (too little busy time) keep the weight it gave them: iterated on their own they drift to
      // an arbitrary vertex (HF generate on the H100: elementwise 64%, GEMM 11%; a 1 µs memset
      // before each GEMM at 3.3 kW above idle).
      for (std::size_t g = 0; g < groups; ++g) {
        if (shared[g] && shared_busy > 0) next[g] = shared_j / shared_busy;
        if (fixed[g]) next[g] = weight[g];
        top = std::max(top, next[g]);
      }
      if (top <= 0) break;
      for (std::size_t g = 0; g < groups; ++g) {
        next[g] = std::max(next[g], 1e-3 * top);
        change = std::max(change, std::fabs(next[g] - weight[g]) / top);
      }
      weight = next;
      if (change < 1e-6) break;
    }
    std::size_t idle_windows = 0;
    for (std::size_t i = 0; i < n; ++i) idle_windows += total[i] <= 0 && !(awake_w > 0 && awake_gap[i]) ? 1 : 0;
    if (idle_windows > 0) {
      a.notes.push_back(std::to_string(idle_windows) + " of " + std::to_string(n) +
                        " sample intervals had no activity in their window: their energy above idle is unattributed");
    }
    if (gaps_j != 0) {
      a.idle_j += gaps_j;
      a.notes.push_back(fmt::format("the GPU awake between kernels draws {:.1f} W above idle ({} sample windows with no activity inside the "
                                    "program's GPU activity): {:.4g} J of those gaps counted as idle/static",
                                    awake_w, awake_windows, gaps_j));
    }
    detail::close_books(a);
    return a;
  }
};

}  // namespace

std::unique_ptr<AttributionMethod> make_split_method() { return std::make_unique<SplitMethod>(); }

}  // namespace jouleprof
