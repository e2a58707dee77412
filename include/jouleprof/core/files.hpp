// Files in and out, checked: a read refuses what is not a readable regular file (a directory
// given for a JSON file says so); a write is atomic (a temporary in the same folder, renamed over
// the target), every write, flush and close is checked, and the temporary is removed on every
// failure path. "-" means standard output; a target that is not a regular file (/dev/stdout,
// a FIFO, /dev/full) is written in place, still checked.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

/// The whole file. Errors: not_found (missing), invalid_argument (a directory or other
/// non-regular file where a file is expected), io (read error), or over `max_bytes`.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = std::size_t{1} << 32);

/// Writes `content` to `path` atomically ("-": standard output).
Result<void> write_file_atomic(const std::string& path, std::string_view content);

/// Like write_file_atomic, with the content produced piecewise by `produce`, which calls
/// `sink(bytes)` any number of times (large outputs are not held in memory at once).
Result<void> write_file_atomic(const std::string& path,
                               const std::function<void(const std::function<void(std::string_view)>& sink)>& produce);

}  // namespace jouleprof
