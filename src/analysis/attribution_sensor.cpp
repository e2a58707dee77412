// The sensor model fitted to a run: which lag and averaging window make the power samples best
// explained by the classes' busy fractions. A wrong model misplaces energy at every class edge
// (on the H100, 17 ms lag + 40 ms window against the ~3 + 20 ms the samples show: the regression
// gave GEMM and copy bursts of 5-30 ms 428 and 320 W above static instead of 463 and 287 W, the
// copy class +8.9% instead of -1.7%).
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <optional>

#include "jouleprof/analysis/attribution.hpp"

namespace jouleprof {

namespace {

constexpr std::size_t kMinSamples = 30;  ///< fewer sample intervals than this: too few to fit two parameters against
constexpr std::size_t kMinEdges = 10;    ///< sample windows where a class's busy fraction changes by a tenth or more
constexpr double kMinImprovement = 0.05;  ///< a fit must explain the samples this much better than the default

struct Design {
  std::vector<std::pair<double, double>> iv;  ///< sample intervals
  Eigen::VectorXd y, w;                        ///< mean power per interval, sqrt(length) weights
  std::vector<detail::ClassBusy> busy;
  std::vector<std::size_t> classes;            ///< the fitted ones
};

// Weighted RMS residual (W) of the least-squares fit of the interval powers on an intercept and
// the classes' busy fractions in the windows `s` implies, over every `stride`-th interval.
double residual_w(const Design& d, const SensorModel& s, std::size_t stride = 1) {
  const auto n = static_cast<Eigen::Index>((d.iv.size() + stride - 1) / stride);
  Eigen::MatrixXd X(n, static_cast<Eigen::Index>(d.classes.size()) + 1);
  Eigen::VectorXd yw(n), w(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const auto i = static_cast<Eigen::Index>(static_cast<std::size_t>(r) * stride);
    const auto& [a, b] = d.iv[static_cast<std::size_t>(i)];
    const double ws = a - s.lag_s - s.window_s, we = b - s.lag_s;
    w(r) = d.w(i);
    yw(r) = d.w(i) * d.y(i);
    X(r, 0) = d.w(i);
    for (std::size_t k = 0; k < d.classes.size(); ++k) {
      X(r, static_cast<Eigen::Index>(k) + 1) = d.w(i) * d.busy[d.classes[k]].within(ws, we) / (we - ws);
    }
  }
  // Collinear classes leave the residual unchanged: any least-squares solution will do.
  const Eigen::VectorXd coef = X.completeOrthogonalDecomposition().solve(yw);
  return std::sqrt((yw - X * coef).squaredNorm() / w.squaredNorm());
}

Design design(const AttributionInput& in) {
  Design d;
  d.iv = detail::sample_intervals(in.power, in.t0_s, in.t1_s);
  d.busy = detail::class_busy(in);
  d.classes = detail::fittable_classes(in, d.busy);
  const auto n = static_cast<Eigen::Index>(d.iv.size());
  d.y.resize(n);
  d.w.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& [a, b] = d.iv[static_cast<std::size_t>(i)];
    d.y(i) = b > a ? detail::energy_between(in.power, a, b) / (b - a) : 0;
    d.w(i) = std::sqrt(std::max(b - a, 0.0));
  }
  return d;
}

}  // namespace

SensorFit evaluate_sensor_model(const AttributionInput& in, const SensorModel& reference) {
  SensorFit f;
  f.model = in.sensor;
  f.source = "given";
  const Design d = design(in);
  if (d.iv.size() >= kMinSamples && !d.classes.empty()) {
    f.rms_w = residual_w(d, in.sensor);
    f.default_rms_w = residual_w(d, reference);
  }
  return f;
}

SensorFit fit_sensor_model(const AttributionInput& in) {
  SensorFit f;
  f.model = in.sensor;
  f.source = "default";
  const Design d = design(in);
  if (d.iv.size() < kMinSamples || d.classes.empty()) {
    f.note = d.classes.empty() ? "no busy class to fit the sensor model to: the default kept"
                               : "too few power samples to fit the sensor model: the default kept";
    return f;
  }
  f.default_rms_w = residual_w(d, in.sensor);
  // Lag and window show only at edges (a class starting or stopping between one sample interval
  // and the next): a steady run has two, and one edge cannot tell a lag from a window.
  std::size_t edges = 0;
  std::vector<double> last(d.classes.size(), 0.0);
  for (const auto& [a, b] : d.iv) {
    bool edge = false;
    for (std::size_t k = 0; k < d.classes.size(); ++k) {
      const double x = b > a ? d.busy[d.classes[k]].within(a, b) / (b - a) : last[k];
      edge = edge || std::fabs(x - last[k]) >= 0.1;
      last[k] = x;
    }
    edges += edge ? 1 : 0;
  }
  if (edges < kMinEdges) {
    f.rms_w = f.default_rms_w;
    f.note = "too few class edges in the run to fit the sensor model to (" + std::to_string(edges) + "): the default kept";
    return f;
  }
  // A coarse grid over at most ~4000 of the intervals (a 10-minute run has 30 000), then 1 ms
  // steps around its best over all of them.
  auto search = [&](SensorModel best, double best_rms, double lag0, double lag1, double win0, double win1, double step,
                    std::size_t stride) {
    for (double lag = lag0; lag <= lag1 + 1e-9; lag += step) {
      for (double win = std::max(win0, 0.0); win <= win1 + 1e-9; win += step) {
        const SensorModel s{lag, win};
        const double r = residual_w(d, s, stride);
        if (r < best_rms) {
          best_rms = r;
          best = s;
        }
      }
    }
    return std::pair{best, best_rms};
  };
  constexpr double kLag0 = -0.010, kLag1 = 0.050, kWindow1 = 0.100;
  const std::size_t stride = std::max<std::size_t>(1, d.iv.size() / 4000);
  const auto coarse = search(in.sensor, stride == 1 ? f.default_rms_w : residual_w(d, in.sensor, stride), kLag0, kLag1, 0.0,
                             kWindow1, 0.005, stride);
  const auto [best, best_rms] = search(in.sensor, f.default_rms_w, coarse.first.lag_s - 0.004, coarse.first.lag_s + 0.004,
                                       coarse.first.window_s - 0.004, coarse.first.window_s + 0.004, 0.001, 1);
  // A best fit at the grid's edge (a sensor that reacts 10 ms before the kernels) or one barely
  // better than the default: the samples do not pin the model down.
  const bool at_edge = best.lag_s <= kLag0 + 1e-9 || best.lag_s >= kLag1 - 1e-9 || best.window_s >= kWindow1 - 1e-9;
  if (at_edge || !(best_rms < (1 - kMinImprovement) * f.default_rms_w)) {
    f.rms_w = f.default_rms_w;
    f.note = "the run's samples do not determine the sensor model (no lag/window inside the searched range fits them 5% better than the default)";
    return f;
  }
  f.model = best;
  f.rms_w = best_rms;
  f.source = "fitted";
  return f;
}

}  // namespace jouleprof
