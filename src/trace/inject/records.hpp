// CUPTI activity records → trace-file records. Separate from the CUPTI callbacks so that CI
// replays recorded buffers through it without a GPU (tests/trace/inject_records_test.cpp).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "writer.hpp"

namespace jouleprof::inject {

/// cuptiActivityGetNextRecord, or a test's replay of a recorded buffer.
using NextRecordFn = CUptiResult (*)(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record);

/// Converts every record of one completed buffer into `w`'s pending batch (caller holds
/// w.lock() and commits). Returns the number of activity records converted.
std::size_t convert_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next, TraceWriter& w);

/// Converts one record; false for kinds the trace does not keep.
bool convert_record(const CUpti_Activity* r, TraceWriter& w);

}  // namespace jouleprof::inject
