// The smallest `bench llm` that runs every step on the simulated GPU: tiny model, one short
// configuration, no idle baseline, no component windows (for tests of the bench's own logic).
#pragma once

#include "jouleprof/workloads/bench_llm.hpp"

inline jouleprof::llm::BenchOptions tiny_sim_bench() {
  jouleprof::llm::BenchOptions o;
  o.device = "sim";
  o.models = {"tiny"};
  o.prompts = {16};
  o.gens = {4};
  o.min_seconds = 0.02;
  o.iso_seconds = 0.02;
  o.idle_s = 0;
  o.no_components = true;
  o.quiet = true;
  return o;
}
