// The synthetic long run shared by the store and report benchmarks: 2 hours, 8 GPUs, 50 Hz.
#pragma once

#include "jouleprof/store/synthetic.hpp"

namespace jouleprof::bench {

inline const Measurement& long_synthetic_run() {
  static const Measurement m = [] {
    SyntheticSpec s;
    s.gpus = 8;
    s.duration_s = 7200;
    s.sample_hz = 50;
    s.runs = 10;
    return make_synthetic_measurement(s);
  }();
  return m;
}

}  // namespace jouleprof::bench
