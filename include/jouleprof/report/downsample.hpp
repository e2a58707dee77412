// Downsampling long timelines for display: min/max per bucket (keeps every peak) and LTTB
// (largest-triangle-three-buckets: keeps the visual shape with one point per bucket).
#pragma once

#include <cstddef>
#include <vector>

#include "jouleprof/core/series.hpp"

namespace jouleprof {

/// At most 2*buckets points: per equal-time bucket, its minimum and maximum in time order.
/// Returns the input unchanged when it already has at most 2*buckets points.
std::vector<Sample> downsample_minmax(const std::vector<Sample>& in, std::size_t buckets);

/// Exactly `threshold` points (first and last kept) when the input is longer, by LTTB.
std::vector<Sample> downsample_lttb(const std::vector<Sample>& in, std::size_t threshold);

}  // namespace jouleprof
