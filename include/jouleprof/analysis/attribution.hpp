// Attribution of one GPU's measured energy to activities (kernels, copies) or groups of them.
//
// The methods, each in its own file and listed once in the registry (attribution_methods()), all
// answer the same question and all conserve energy exactly: attributed + idle/static +
// unattributed = measured (docs/trace.md, "Attribution"):
//   interval    direct integration of the power timeline over long busy intervals of an item,
//               minus idle (only items busy for longer than a few sensor periods at a time);
//   split       each power sample's energy above idle split across the items busy in the window
//               the sample reflects (the sensor's lag and averaging window modelled), in
//               proportion to busy time weighted by the class's active power (the regression's);
//   regression  non-negative least squares of sample power on per-class busy fractions with the
//               idle/static power as intercept, each class's power pulled toward the classes'
//               common power as far as the data cannot tell them apart: each class's active
//               power with a standard error;
//   replay      each item's energy per call as replayed in isolation, scaled by one factor to the
//               run's energy above idle (only with replay figures in the input).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/series.hpp"

namespace jouleprof {

/// What the power between two samples (a_i, b_i) reflects: the mean activity over
/// [a_i - lag - window, b_i - lag]. `jouleprof trace` fits lag and window to each run
/// (fit_sensor_model); these defaults are what it fits on our H100's 20 ms driver samples
/// (docs/validation/trace.md) and are used where a run cannot determine them.
struct SensorModel {
  double lag_s = 0.000;
  double window_s = 0.020;
};

/// One busy interval of an item (an activity, or a class for the per-class methods).
struct BusyInterval {
  double t0_s = 0, t1_s = 0;
  std::size_t item = 0;
  std::size_t group = 0;  ///< the item's class (regression)
};

struct AttributionInput {
  std::vector<Sample> power;  ///< W, run time base, sorted; should extend past t1 + lag + window
  double t0_s = 0, t1_s = 0;  ///< the window attributed (a run)
  double measured_j = 0;      ///< that window's measured energy for this GPU (the best method's figure)
  std::string measured_method;
  double idle_w = 0;          ///< idle/static power (the idle baseline)
  std::vector<BusyInterval> busy;
  std::size_t items = 0;
  std::size_t groups = 0;     ///< number of classes (regression)
  std::vector<std::string> group_names;  ///< the classes' names, for notes ("class N" where absent)
  SensorModel sensor;
  double min_interval_s = 0.1;  ///< interval method: shortest busy stretch integrated directly
  double merge_gap_s = 0.001;   ///< interval method: gaps shorter than this join busy stretches
  /// The board's power limit: no item is given more than (limit - idle) × its busy time
  /// (bound_by_power_limit); absent: no bound.
  std::optional<double> power_limit_w;
  /// Replay-informed attribution: each item's energy above idle as replayed in isolation (NaN
  /// where the replay has no figure for it) and its 95% half-width. Empty: no replay data.
  std::vector<double> reference_j, reference_half_width_j;
};

struct GroupFit {
  double active_power_w = 0;  ///< power above the intercept while the class is busy all the time
  double stderr_w = 0;
  double busy_s = 0;          ///< time-weighted busy fraction summed over the windows
  bool shared = false;        ///< one power with the other shared classes: the sensor could not tell them apart
  bool fitted = true;         ///< false: too little busy time for a regressor of its own (given the fitted classes' mean)
};

/// What a method attributes energy to. `activity`: each activity (kernel, copy) on its own, so
/// per-kernel, per-path, per-layer tables can be built from it; `kernel_class`: each class as a
/// whole (items of its input are the classes), so it gives class books only.
enum class Granularity { activity, kernel_class };

struct Attribution {
  std::string method;
  Granularity granularity = Granularity::activity;  ///< of the method (item_j per activity or per class)
  double measured_j = 0;
  double timeline_j = 0;      ///< trapezoid of the power timeline over the window
  double idle_j = 0;          ///< idle/static energy
  double attributed_j = 0;    ///< sum of item_j
  double unattributed_j = 0;  ///< measured - attributed - idle (includes the counter-timeline difference)
  std::vector<double> item_j;
  std::vector<double> item_uncertainty_j;
  std::vector<GroupFit> groups;  ///< regression only
  std::optional<double> intercept_w;  ///< regression only: fitted idle/static power
  double r_squared = 0;               ///< regression only
  /// replay only: the factor the replayed energies were scaled by to the run's energy above idle,
  /// and the share of the items' busy time the replay had no figure for
  std::optional<double> scale;
  double unreferenced_busy_share = 0;
  double capped_j = 0;  ///< energy moved off items above the power limit (bound_by_power_limit)
  std::vector<std::string> notes;
};

/// The results of the methods a method uses (AttributionMethod::uses), by name, computed on the
/// same run before it.
using PriorAttributions = std::map<std::string, Attribution>;

/// One attribution method (strategies, not switches). A new method: its own
/// attribution_NAME.cpp and one line in the registry (attribution_methods(), attribution.cpp).
class AttributionMethod {
 public:
  virtual ~AttributionMethod() = default;
  virtual std::string name() const = 0;
  virtual Granularity granularity() const = 0;
  /// Methods whose results this one starts from (given in `prior`, each computed once per run).
  virtual std::vector<std::string> uses() const { return {}; }
  /// Whether the input has what the method needs (the replay-informed method: replay figures).
  virtual bool applies(const AttributionInput&) const { return true; }
  virtual Attribution attribute_with(const AttributionInput& in, const PriorAttributions& prior) const = 0;
  /// The method alone: the methods it uses are run first on the same input.
  Attribution attribute(const AttributionInput& in) const;
};

/// The registry: every method by name, in the order the books are reported, with its help line.
struct AttributionMethodEntry {
  std::string name;
  std::string help;  ///< one line for `trace --help`
  bool in_situ = true;  ///< from the run's own power samples only (false: needs replay data)
  std::unique_ptr<AttributionMethod> (*make)() = nullptr;
};
const std::vector<AttributionMethodEntry>& attribution_methods();

/// Runs every registered method that applies to the run, each method's uses first and each once:
/// activity-granularity methods on `per_activity`, class-granularity ones on `per_class` (the same
/// run with the classes as items). In registry order.
std::vector<Attribution> run_attribution_methods(const AttributionInput& per_activity, const AttributionInput& per_class);

/// The sensor model that explains a run's power samples best, and how much better than another.
struct SensorFit {
  SensorModel model;         ///< what the methods use
  std::string source;        ///< "fitted" to this run, "default" (the run cannot determine it) or "given"
  double rms_w = 0;          ///< residual power of the least-squares fit of the samples on the classes' busy fractions (0: not computed)
  double default_rms_w = 0;  ///< the same with the default model
  std::string note;          ///< why the default was kept, where it was
};

/// Fits lag and window to the run: each candidate on a grid (lag -10..50 ms, window 0..100 ms in
/// 5 ms steps over at most ~4000 sample intervals, then 1 ms steps around the best over all) is
/// scored by the residual of the least-squares fit of the sample powers on an intercept and the
/// fitted classes' busy fractions in the windows it implies (the regression's design,
/// unconstrained). `in.sensor` is the default, kept where the run has too few samples, busy
/// classes or class edges, or where no candidate inside the grid fits 5% better than it.
SensorFit fit_sensor_model(const AttributionInput& in);
/// A sensor model given by the user (`in.sensor`, source "given"), with the residual of the same
/// least-squares fit for it and for `reference` (0 where the run has too few samples or no busy
/// class).
SensorFit evaluate_sensor_model(const AttributionInput& in, const SensorModel& reference);

std::unique_ptr<AttributionMethod> make_interval_method();
std::unique_ptr<AttributionMethod> make_split_method();
std::unique_ptr<AttributionMethod> make_regression_method();
std::unique_ptr<AttributionMethod> make_replay_method();
/// By name from the registry; nullptr for another name.
std::unique_ptr<AttributionMethod> make_attribution_method(const std::string& name);
/// The registry's names (all, or the in-situ ones only).
std::vector<std::string> attribution_method_names(bool in_situ_only = false);
/// "interval, split, regression or replay": the registry's names as a sentence.
std::string attribution_method_choices();

/// No item above the board's power limit: an item given more than (limit - idle) × its busy time
/// keeps that much; the excess goes to the items of its class with room left (by their room), and
/// what they cannot take is unattributed. Notes the energy moved. No-op without a limit.
void bound_by_power_limit(Attribution& a, const AttributionInput& in);

namespace detail {
/// Sets attributed_j and unattributed_j so that the sum is exactly measured_j.
void close_books(Attribution& a);
/// Trapezoid energy of the power samples over [a, b] (linear interpolation at the edges).
double energy_between(const std::vector<Sample>& p, double a, double b);
/// Per-sample intervals of the window: [a_i, b_i] with a_0 = t0 and b_last = t1.
std::vector<std::pair<double, double>> sample_intervals(const std::vector<Sample>& p, double t0, double t1);
/// One class's busy time as a union of intervals (concurrent items count once), for fast queries.
struct ClassBusy {
  std::vector<std::pair<double, double>> spans;  ///< sorted, disjoint
  std::vector<double> before;                    ///< busy time in spans[0..k)
  /// Busy time inside [a, b].
  double within(double a, double b) const;
};
/// Each class's (BusyInterval::group < in.groups) busy union.
std::vector<ClassBusy> class_busy(const AttributionInput& in);
/// The union of every item's busy time: when the GPU ran anything.
ClassBusy all_busy(const AttributionInput& in);
/// The classes with at least 1% of all classes' busy time in [in.t0_s, in.t1_s]: the ones the
/// sensor can tell apart enough to fit (cuBLAS's 1 us memset before each GEMM is not).
std::vector<std::size_t> fittable_classes(const AttributionInput& in, const std::vector<ClassBusy>& busy);
}  // namespace detail

}  // namespace jouleprof
