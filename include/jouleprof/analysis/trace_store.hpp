// A traced run's activities in the run store and back: what `jouleprof trace` stores after a run,
// and the placed trace that `jouleprof trace --from RUN` rebuilds from it to attribute the run
// again without running it (docs/trace.md, "Attributing a stored run again").
#pragma once

#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/store/activities.hpp"
#include "jouleprof/trace/trace.hpp"

namespace jouleprof {

/// An activity's attributes as JSON: class, NVTX path, phase, CUDA device, launch configuration or
/// bytes (the store's attrs_json and the Perfetto slices' args).
std::string activity_attrs_json(const Activity& a);

/// The store's rows for a placed trace `t` of measurement `m`: every activity, in order, with its
/// measured GPU (measured_gpu; -1: CPU-side or a GPU not measured), process and thread.
std::vector<StoredActivity> stored_activities(const Measurement& m, const TraceData& t);

/// The placed trace back from a stored run: processes, range assignment and warnings from the
/// run's "trace" section, activities from its rows (times on the run time base, NVTX path and
/// phase as placed when it was traced). Classes are not taken from the rows: build_trace_profile
/// classifies the names again with the rules it is given. Errc::invalid_argument when `m` has no
/// "trace" section (a run that was not traced).
Result<TraceData> trace_from_store(const Measurement& m, const std::vector<StoredActivity>& rows);

struct TraceProfile;
struct TraceProfileOptions;
class KernelClassifier;

/// A stored traced run analysed again (`jouleprof trace --from`, Python's `trace_analysis`): the
/// placed trace from its rows (trace_from_store), the warnings of its first analysis dropped from
/// `m` (this one gives them again), then analyze_trace. `t` receives the placed trace (Perfetto).
Result<TraceProfile> analyze_stored_trace(Measurement& m, const std::vector<StoredActivity>& rows, const KernelClassifier& classes,
                                          const TraceProfileOptions& o, TraceData& t);

}  // namespace jouleprof
