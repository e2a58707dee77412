// The simulated engine: no arithmetic, a time model (bytes over bandwidth, FLOPs over throughput,
// a launch gap per kernel) and a power model driving the simulated GPU's power schedule. It lets
// `jouleprof bench llm --device sim` run end to end without CUDA; every figure it yields is
// simulated and labelled so.
#pragma once

#include <functional>
#include <memory>

#include "engine.hpp"

namespace jouleprof::llm {

struct SimSpeeds {
  double bandwidth = 3.0e12 * 0.85;  ///< bytes/s the simulated engine streams
  double flops = 790e12 * 0.7;       ///< FLOP/s of its matrix products
  double launch_s = 2.5e-6;          ///< gap per kernel
  double idle_w = 75, tdp_w = 700;
};

/// `set_power(watts)` sets the simulated GPU's power from now on.
std::unique_ptr<LlmEngine> create_sim_engine(const EngineOptions& o, const LlmConfig& c, SimSpeeds s,
                                             std::function<void(double)> set_power);

}  // namespace jouleprof::llm
