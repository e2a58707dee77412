// jouleprof's GPU sensor as the trial rounds' probe (trials.hpp): its clock, the driver's power
// samples and the energy counter. One implementation for the replay engine (jouleprof-replay) and
// the exact replay of a captured graph (src/replay/graph_replay.cpp); trials.cpp itself stays
// apart from the sensor so its tests run on a simulated device.
#pragma once

#include <chrono>
#include <cmath>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "jouleprof/core/timebase.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "trials.hpp"

namespace jouleprof::replay {

class SensorProbe : public Probe {
 public:
  SensorProbe(GpuSensor& s, TimeBase& tb) : s_(&s), tb_(&tb) {}

  void drain() override {
    std::vector<Sample> got;
    if (s_->drain_power_samples(got)) samples_.insert(samples_.end(), got.begin(), got.end());
    if (samples_.size() > 200000) samples_.erase(samples_.begin(), samples_.begin() + 100000);
  }
  /// Mean power of the samples in [a, b] (run time) and how many there were.
  std::pair<double, std::size_t> mean_power(double a, double b) override {
    double sum = 0;
    std::size_t n = 0;
    for (const Sample& x : samples_) {
      if (x.t_s >= a && x.t_s <= b) {
        sum += x.value;
        ++n;
      }
    }
    return {n > 0 ? sum / static_cast<double>(n) : std::nan(""), n};
  }
  std::optional<double> counter_j() override {
    auto e = s_->read_energy_mj();
    return e ? std::optional<double>(static_cast<double>(*e) / 1000.0) : std::nullopt;
  }
  double now() override { return tb_->now_s(); }
  void pause(double s) override { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }
  GpuSensor& sensor() { return *s_; }

 protected:
  /// For a probe that opens its own sensor: attach() it before the first use.
  SensorProbe() = default;
  void attach(GpuSensor& s, TimeBase& tb) {
    s_ = &s;
    tb_ = &tb;
  }

 private:
  GpuSensor* s_ = nullptr;
  TimeBase* tb_ = nullptr;
  std::vector<Sample> samples_;
};

}  // namespace jouleprof::replay
