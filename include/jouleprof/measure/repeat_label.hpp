// How repeats are named to people (README "Words"): a "run" is one stored measurement; a
// "repeat" is one execution of the command inside it, numbered from 1, warm-ups apart.
#pragma once

#include <string>

#include "jouleprof/result/result.hpp"

namespace jouleprof {

/// "repeat 1".."repeat N" for the measured repeats, "warm-up 1".."warm-up K" for warm-ups;
/// `run_index` is the 0-based position in m.runs (RunInfo::index, WindowResult::run), warm-ups first.
std::string repeat_label(const Measurement& m, int run_index);

}  // namespace jouleprof
