// A synthetic measurement with known shape, for tests and benchmarks (labelled simulated).
#pragma once

#include <cstdint>
#include <string>

#include "jouleprof/result/result.hpp"

namespace jouleprof {

struct SyntheticSpec {
  int gpus = 1;
  double duration_s = 60;     ///< total, idle included
  double sample_hz = 50;      ///< power_sample_w rate
  double slow_hz = 2;         ///< clocks, temperature, utilization ... rate
  int runs = 3;               ///< measured runs after a 10% idle window
  double idle_w = 75, prefill_w = 650, decode_w = 420;
  double tokens_prefill = 512, tokens_decode = 128;
  uint64_t seed = 1;
  std::string tag_value = "synthetic";  ///< value of tag "case"
};

/// Idle window, then `runs` runs of prefill (20%) + decode (80%), with windows, energies
/// (trapezoid of the synthetic power), statistics and full timelines.
Measurement make_synthetic_measurement(const SyntheticSpec& s = {});

}  // namespace jouleprof
