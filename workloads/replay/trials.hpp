// The trial rounds of jouleprof-replay, apart from CUDA and the sensor so they run on a CPU with a
// simulated device (tests/replay/test_engine_trials.cpp).
//
// A round is a settling period then N trials of back-to-back graph launches with an event at
// every trial edge. Time per call comes from the events, power from the driver's power samples
// inside each trial; the cumulative energy counter is read as each edge passes, as a cross-check.
// The counter's figure is only as good as the read times: a read made long after its edge (the
// host was stuck in a launch call while the GPU passed several edges) or a trial shorter than the
// counter resolves says nothing, and is dropped with the reason.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replay_cuda.hpp"

namespace jouleprof::replay {

/// What a round needs of the host: its clock, a pause, the energy counter, the power samples.
class Probe {
 public:
  virtual ~Probe() = default;
  virtual double now() = 0;                             ///< host time, seconds (the samples' time base)
  virtual void pause(double seconds) = 0;               ///< sleep
  virtual std::optional<double> counter_j() = 0;        ///< the GPU's cumulative energy counter
  virtual void drain() = 0;                             ///< collects the driver's power samples
  virtual std::pair<double, std::size_t> mean_power(double a, double b) = 0;  ///< samples' mean in [a, b], and their count
};

/// One read of the energy counter at a trial edge: when the GPU passed the edge (its event, on the
/// host clock) and when the host read the counter.
struct EdgeRead {
  double edge_s = 0, read_s = 0, counter_j = 0;
  bool read = false;
};

/// When a counter difference is trusted.
struct CounterRules {
  double max_late_s = 0.01;    ///< a read more than this after its edge is late
  double update_s = 0;         ///< the counter's update period (0: unknown, taken as resolving)
  double min_updates = 8;      ///< a trial must span this many updates (a stale read is off by one update at most)
};

/// The counter over the trials of a round: power per trial (between the two reads), NaN where
/// the trial is dropped, and why.
struct CounterTrials {
  std::vector<double> power_w;  ///< one per trial, NaN when dropped
  std::size_t late_reads = 0;
  double max_late_s = 0;
  std::string dropped_because;  ///< "" when every trial counts
};

CounterTrials counter_trials(const std::vector<EdgeRead>& edges, const CounterRules& rules);

/// The counter's update period: polled every `poll_s` for `seconds` (the GPU idle or busy, never
/// changing state); 0 when it changed fewer than 3 times.
double counter_update_period(Probe& p, double seconds, double poll_s = 0.001);

/// Reads the counter as each marked edge event is reached; drains the sample ring every 50 ms.
class EdgePoller {
 public:
  EdgePoller(Device& d, Probe& p) : d_(d), p_(p) {}
  void marked(int slot);  ///< an edge event was just recorded on the stream (slots in order)
  void poll();            ///< non-blocking
  bool all_read() const { return next_ == slots_.size(); }
  /// The reads, edge times from the events relative to `origin_slot` whose host time is `origin_s`.
  std::vector<EdgeRead> reads(int origin_slot, double origin_s) const;

 private:
  Device& d_;
  Probe& p_;
  std::vector<int> slots_;
  std::vector<EdgeRead> reads_;
  std::size_t next_ = 0;
  double last_drain_ = -1;
};

/// One round's figures.
struct Round {
  std::vector<double> time_ns, power_w, energy_j;  ///< per trial that had power samples
  std::vector<double> counter_power_w;             ///< same trials; NaN where the counter could not tell
  std::vector<EdgeRead> edges;
  std::size_t samples = 0, late_reads = 0;
  double max_late_s = 0, seconds = 0;
  std::string counter_dropped_because;

  /// Adds another round's trials (of the same length) to this one.
  void append(const Round& more);
};

struct RoundPlan {
  int settle_graphs = 1, trial_graphs = 1, trials = 1;
  double graph_s = 0.002;   ///< one graph's time (measured)
  double calls_per_graph = 1;
  double skip_s = 0.02;     ///< power samples this soon after an edge still reflect the previous state
  double ahead_s = 0.03;    ///< at most this much work queued ahead of the GPU: launches never block
  double tail_s = 0.03;     ///< work after the last edge, so its counter read falls inside the same work
};

/// Event slots a round uses: edges 0 .. trials + 1 (trials ≤ 60: `jouleprof replay --trials`), the
/// launch pacing ring kPaceSlot0 .. + kPaceSlots.
inline constexpr int kPaceSlot0 = 64, kPaceSlots = 16;

/// Runs one round on the prepared graph. The host keeps at most `ahead_s` of work queued (a full
/// launch queue would stall the host inside a launch call past the trial edges, so the counter
/// would be read late: the bug that made the counter disagree with the samples on long trials).
Round run_round(Device& d, Probe& p, const RoundPlan& plan, const CounterRules& rules);

}  // namespace jouleprof::replay
