// The idle baseline: one function for every command that measures one (`measure`, `bench llm`).
#pragma once

#include <string>
#include <vector>

#include "jouleprof/sampler/monitor.hpp"

namespace jouleprof {

/// Sets the monitor's idle power from a closed window `id` in which the GPUs idled: per GPU the
/// mean power of the window's second half (a GPU that has just finished work takes seconds to
/// settle — on the H100 ~125 W for ~2.5 s, then ~70 W), or of the whole window where it holds
/// fewer than 4 power samples. Returns one warning per GPU whose first half differs by more than
/// max(5 W, 5%): it had not settled. Nothing is set when the window has no energy.
std::vector<std::string> set_idle_baseline(Monitor& mon, Monitor::WindowId id, const std::string& source);

}  // namespace jouleprof
