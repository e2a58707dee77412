// One item of the replay plan (`jouleprof replay` writes it: src/replay/replay.cpp item_json) read
// into the engine's Item. Plain C++, built everywhere: the CPU tests read plans as the engine does.
#pragma once

#include <nlohmann/json.hpp>

#include "replay_cuda.hpp"

namespace jouleprof::replay {

/// The item's fields; absent ones keep Item's defaults (a wrong type throws nlohmann's type_error).
Item item_of(const nlohmann::json& j);

}  // namespace jouleprof::replay
