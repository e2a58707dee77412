// Wall-clock times as text, in the one format results and the run store record them.
#pragma once

#include <cstdint>
#include <string>

namespace jouleprof {

/// CLOCK_REALTIME nanoseconds as ISO 8601 UTC with milliseconds: "2026-11-25T21:31:04.123Z".
std::string iso_utc_ms(int64_t realtime_ns);

}  // namespace jouleprof
