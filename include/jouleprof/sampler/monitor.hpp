// The C++ API for instrumenting inference code:
//
//   auto mon = jouleprof::Monitor::create({}).value();
//   {
//     auto w = mon->scope("prefill");   // RAII window; windows nest and may overlap
//     run_prefill();
//   }
//   jouleprof::Measurement m = mon->finish();
//
// begin()/end() take a timestamp, append to a vector and poke the sampler to read the energy
// counter; they never call a vendor library on the caller's thread. An optional synchronize
// hook (e.g. cudaDeviceSynchronize) runs at every window edge so the edge is where the GPU
// work is, not where it was queued.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/analysis/energy.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/sampler/sampler.hpp"

namespace jouleprof {

struct MonitorOptions {
  GpuSelection gpus;
  SamplerConfig sampler;
  EnergyOptions energy;
  std::function<void()> synchronize;  ///< called at every window edge (optional)
  /// The run time base's clocks (nullptr: the system's). Tests pass a fake clock they advance,
  /// with sampler.manual, and drive the sampler by Monitor::sampler().poll_due().
  const ClockSource* clock = nullptr;
};

class Monitor {
 public:
  using WindowId = std::size_t;

  static Result<std::unique_ptr<Monitor>> create(const MonitorOptions& opt);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// Opens a window now (kind "window"). Thread safe.
  WindowId begin(std::string_view name) { return begin_at(name, std::nullopt, "window", -1); }
  void end(WindowId id) { end_at(id, std::nullopt); }
  /// Opens a window at an explicit run time (nullopt: now) with a kind and run index.
  WindowId begin_at(std::string_view name, std::optional<double> t_s, std::string_view kind, int run);
  void end_at(WindowId id, std::optional<double> t_s, bool complete = true);
  /// Attaches a count (tokens=128 ...) to a window, for per-unit energies.
  void count(WindowId id, const std::string& key, double value);
  /// The most recently begun window with this name (still open only, unless include_closed).
  std::optional<WindowId> find(std::string_view name, bool include_closed = false) const;
  std::vector<WindowId> open_windows() const;

  class Scope {
   public:
    Scope(Monitor& m, WindowId id) : m_(&m), id_(id) {}
    Scope(Scope&& o) noexcept : m_(o.m_), id_(o.id_) { o.m_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope() {
      if (m_ != nullptr) m_->end(id_);
    }
    WindowId id() const { return id_; }

   private:
    Monitor* m_;
    WindowId id_;
  };
  Scope scope(std::string_view name) { return Scope(*this, begin(name)); }

  /// Idle power per GPU (same order as gpus()), used for energy above idle.
  void set_idle_power(std::vector<std::optional<double>> watts, std::string source);
  /// Energy of a window from what has been sampled so far (the window must be closed).
  Result<WindowResult> energy(WindowId id) const;
  /// Run time after which nothing the sensors report can change a closed window's energy: its
  /// end plus the sensor response tail and two driver sample periods (nullopt: open or unknown).
  std::optional<double> final_at_s(WindowId id) const;
  /// True once every GPU's power timeline reaches final_at_s(id) (or after finish()): energy(id)
  /// then equals what finish() computes for the window. Lets a caller resolve results lazily.
  /// Not to be called concurrently with finish().
  bool is_final(WindowId id) const;
  /// Waits until the sampler has read the energy counters (a run boundary).
  void sync_counters() { sampler_->flush_counter_reads(); }

  /// Stops sampling, closes windows still open (marked incomplete) and computes every energy.
  Measurement finish();

  TimeBase& timebase() { return tb_; }
  GpuSet& gpus() { return gpus_; }
  Sampler& sampler() { return *sampler_; }

 private:
  struct Window {
    std::string name, kind;
    int run = -1, parent = -1;
    double t0 = 0, t1 = 0;
    bool open = true, complete = true;
    std::map<std::string, double> counts;
  };
  explicit Monitor(const MonitorOptions& opt) : opt_(opt), tb_(opt.clock != nullptr ? *opt.clock : ClockSource::system()) {}
  WindowResult compute(const std::vector<Window>& all, std::size_t i) const;
  bool isolated(const std::vector<Window>& all, std::size_t i) const;

  MonitorOptions opt_;
  TimeBase tb_;
  GpuSet gpus_;
  std::unique_ptr<Sampler> sampler_;
  mutable std::mutex mu_;
  std::vector<Window> windows_;
  std::vector<WindowId> open_;  ///< open windows in the order they were begun (begin/end stay O(1))
  std::vector<std::optional<double>> idle_w_;
  std::string idle_source_;
  bool finished_ = false;
};

}  // namespace jouleprof
