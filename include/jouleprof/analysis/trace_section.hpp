// The "trace" section of a traced run's result (written by trace_profile_json): its schema string
// and its `runs show` renderer, registered with the result model's section registry
// (result/sections.hpp).
#pragma once

namespace jouleprof {

/// The "schema" value of the trace section.
extern const char* const kTraceSectionSchema;

}  // namespace jouleprof
