// Run identifiers: a random UUID minted when a measurement ends, and ones derived from it for
// the runs cut out of one measurement (a bench llm sweep's configurations). The run store tells
// runs apart by it (docs/store.md, `import`; docs/result-schema.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace jouleprof {

/// A random (version 4) UUID, lowercase: "3f2b8c1e-5d7a-4e09-9b1c-0a6f4e2d8b71".
std::string random_uuid();

/// A version 8 UUID that depends only on `parent` and `name`: the same inputs give the same
/// identifier (a re-import of the same file is recognised), different names different ones.
std::string derived_uuid(std::string_view parent, std::string_view name);

/// 16 bytes as 8-4-4-4-12 lowercase hex digits: how run ids and GPU UUIDs are written.
std::string uuid_text(const uint8_t* bytes16);

/// A GPU's 16 UUID bytes (CUDA's cuDeviceGetUuid, CUPTI's device record) as NVML names the board:
/// "GPU-" and uuid_text, so the two compare equal.
std::string gpu_uuid_text(const uint8_t* bytes16);

/// 36 characters: 8-4-4-4-12 lowercase hex digits separated by '-'.
bool is_uuid(std::string_view text);

}  // namespace jouleprof
