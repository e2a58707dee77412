// Valid documents the property tests mutate.
#pragma once

#include <string>

#include "jouleprof/measure/output.hpp"
#include "jouleprof/store/synthetic.hpp"

namespace jouleprof::fuzz {

/// A small complete result (idle window, 2 runs of prefill + decode, 1 GPU) with its timelines.
inline const std::string& sample_result() {
  static const std::string text = [] {
    SyntheticSpec s;
    s.duration_s = 3;
    s.sample_hz = 4;
    s.slow_hz = 1;
    s.runs = 2;
    return result_to_json_with_timelines(make_synthetic_measurement(s), -1);
  }();
  return text;
}

}  // namespace jouleprof::fuzz
